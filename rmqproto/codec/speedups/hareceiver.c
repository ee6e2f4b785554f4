/*
 * HAReceiver: an HA slave's receive loop in a thread of its own, without the GIL.
 *
 * It reads the master's transfers (8-byte offset, 4-byte body size, body, as
 * HAConnection.WriteSocketService writes them) from the connection, copies each body
 * into the mapped commit-log segment at exactly the offset the header names, and reports
 * the new end to the master (8 bytes) after every read that grew it, and every heartbeat
 * interval when nothing did; as Java's HAClient thread does. The end it wrote is
 * published atomically; the reactor takes it (``progress``), moves the segment's write
 * position and dispatches. Whatever is not the plain case (an offset other than the end,
 * a body that does not fit the segment, a negative size) ends the loop, and the bytes
 * from that header on go back to the Python HA client, which handles them as it handles
 * every read without this loop.
 *
 * Given ``checked`` (where the last whole record checked ends), it checks the records it
 * wrote before it acknowledges them (check_records, the C twin of
 * rmqproto/ha/framing.py): it reports and publishes only up to the end of the last whole
 * record that passed, and at a record that does not pass it zeroes what it wrote from
 * that record on and ends the loop ('bad record', the reason in ``refusal``).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "crc32.h"
#include "hareceiver.h"

#define HEADER_SIZE 12
#define REPORT_SIZE 8
/* Bytes one recv asks for (Java's slave reads into a 4 MiB buffer). */
#define READ_CAPACITY (1024 * 1024)

typedef struct {
    PyObject_HEAD
    int fd;             /* a dup of the connection's descriptor */
    int stop_read;      /* stop(): the loop polls this pipe */
    int stop_write;
    int wake_read;      /* the loop writes a byte here when armed: the reactor reads it */
    int wake_write;
    Py_buffer segment;  /* the mapping written into, held while this object lives */
    int has_segment;
    int64_t segment_from;
    int heartbeat_ms;
    unsigned char header[HEADER_SIZE];  /* where the stream stands when run() begins */
    int header_length;
    int64_t body_remaining;
    int check_crc;
    int64_t checked;                /* the walk's start, -1 when records are not checked */
    int64_t refused_at;             /* 'bad record': the refused record's offset */
    const char *refusal;            /* 'bad record': why */
    int started;
    _Atomic int running;            /* run() is in its loop: close() must wait */
    _Atomic int64_t end;            /* the commit-log offset the bytes written reach */
    _Atomic int64_t bytes_read;
    _Atomic int64_t reported;       /* the last offset reported to the master */
    _Atomic int64_t reports;
    _Atomic int armed;
} Receiver;

static int64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static int
make_pipe(int *read_end, int *write_end)
{
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0)
        return -1;
    *read_end = fds[0];
    *write_end = fds[1];
    return 0;
}

static void
release(Receiver *self)
{
    close_fd(&self->fd);
    close_fd(&self->stop_read);
    close_fd(&self->stop_write);
    close_fd(&self->wake_read);
    close_fd(&self->wake_write);
    if (self->has_segment) {
        PyBuffer_Release(&self->segment);
        self->has_segment = 0;
    }
}

static int
receiver_init(Receiver *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"fd", "segment", "segment_from", "end", "reported",
                             "heartbeat_ms", "header", "body_remaining", "checked",
                             "check_crc", NULL};
    int fd, heartbeat_ms, check_crc = 0;
    PyObject *segment;
    long long segment_from, end, reported, body_remaining = 0, checked = -1;
    Py_buffer header = {.buf = NULL, .len = 0};
    if (self->started || self->fd >= 0 || self->has_segment) {
        PyErr_SetString(PyExc_RuntimeError, "HAReceiver cannot be initialized twice");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iOLLLi|y*LLp", kwlist, &fd, &segment,
                                     &segment_from, &end, &reported, &heartbeat_ms, &header,
                                     &body_remaining, &checked, &check_crc))
        return -1;
    Py_ssize_t header_length = header.len;
    if (header.buf != NULL) {
        if (header_length < HEADER_SIZE)
            memcpy(self->header, header.buf, (size_t)header_length);
        PyBuffer_Release(&header);
    }
    if (heartbeat_ms <= 0 || segment_from < 0 || reported < 0 || body_remaining < 0
            || header_length >= HEADER_SIZE || (header_length && body_remaining)) {
        PyErr_SetString(PyExc_ValueError, "heartbeat_ms must be positive, offsets and "
                        "body_remaining not negative, a header shorter than 12 bytes and "
                        "not with a body");
        return -1;
    }
    if (PyObject_GetBuffer(segment, &self->segment, PyBUF_WRITABLE) < 0)
        return -1;
    self->has_segment = 1;
    if (end < segment_from || end - segment_from > self->segment.len
            || body_remaining > segment_from + self->segment.len - end
            || (checked >= 0 && (checked < segment_from || checked > end))) {
        PyErr_Format(PyExc_ValueError, "end %lld (and a body of %lld bytes to come, checked "
                     "%lld) is outside the segment [%lld, %lld]", end, body_remaining, checked,
                     segment_from, segment_from + (long long)self->segment.len);
        release(self);
        return -1;
    }
    self->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (self->fd < 0 || make_pipe(&self->stop_read, &self->stop_write) < 0
            || make_pipe(&self->wake_read, &self->wake_write) < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        release(self);
        return -1;
    }
    self->segment_from = segment_from;
    self->heartbeat_ms = heartbeat_ms;
    self->header_length = (int)header_length;
    self->body_remaining = body_remaining;
    self->checked = checked;
    self->check_crc = check_crc;
    atomic_store(&self->end, end);
    atomic_store(&self->reported, reported);
    return 0;
}

static PyObject *
receiver_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    Receiver *self = (Receiver *)type->tp_alloc(type, 0);
    if (self != NULL)
        self->fd = self->stop_read = self->stop_write = self->wake_read = self->wake_write = -1;
    return (PyObject *)self;
}

static void
receiver_dealloc(Receiver *self)
{
    release(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* --------------------------------------------------------------- the loop (no GIL) */

enum outcome { RUNNING, STOPPED, CLOSED, FAILED, HANDED_BACK, BAD_RECORD };

/* Send all of ``p`` (the socket is non-blocking): RUNNING, STOPPED or FAILED. */
static enum outcome
send_all(Receiver *self, const unsigned char *p, size_t n, int *error)
{
    while (n) {
        ssize_t sent = send(self->fd, p, n, MSG_NOSIGNAL);
        if (sent > 0) {
            p += sent;
            n -= (size_t)sent;
            continue;
        }
        if (sent < 0 && errno == EINTR)
            continue;
        if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            *error = errno;
            return FAILED;
        }
        struct pollfd fds[2] = {{self->fd, POLLOUT, 0}, {self->stop_read, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR) {
            *error = errno;
            return FAILED;
        }
        if (fds[1].revents)
            return STOPPED;
    }
    return RUNNING;
}

static enum outcome
report(Receiver *self, int64_t offset, int64_t *last_report, int *error)
{
    unsigned char bytes[REPORT_SIZE];
    for (int i = 0; i < REPORT_SIZE; i++)
        bytes[i] = (unsigned char)((uint64_t)offset >> (8 * (REPORT_SIZE - 1 - i)));
    enum outcome outcome = send_all(self, bytes, REPORT_SIZE, error);
    if (outcome == RUNNING) {
        atomic_store(&self->reported, offset);
        atomic_fetch_add(&self->reports, 1);
        *last_report = now_ms();
    }
    return outcome;
}

static int64_t
read_be(const unsigned char *p, int n)
{
    uint64_t value = 0;
    for (int i = 0; i < n; i++)
        value = (value << 8) | p[i];
    return n == 4 ? (int64_t)(int32_t)(uint32_t)value : (int64_t)value;
}

/* ------------------------------------------------ record checks (rmqproto/ha/framing.py) */

#define MAGIC_V1 ((int32_t)0xDAA320A7)
#define MAGIC_V2 ((int32_t)0xDAA320AB)
#define MAGIC_BLANK ((int32_t)0xCBD43194)
#define MIN_RECORD_LENGTH 91
#define FIXED_LENGTH 88         /* TOTALSIZE .. the body length, IPv4 hosts */
#define SYS_FLAG_POSITION 36
#define BORNHOST_V6_FLAG 0x10
#define STOREHOSTADDRESS_V6_FLAG 0x20

/* Recovery's framing of the whole record at ``r`` (``total`` bytes, ``magic`` checked),
 * and its BODYCRC with ``crc``: NULL when it passes, else why not. */
static const char *
check_record(const unsigned char *r, int64_t total, int32_t magic, int crc)
{
    int32_t sys_flag = (int32_t)read_be(r + SYS_FLAG_POSITION, 4);
    int64_t pos = FIXED_LENGTH + (sys_flag & BORNHOST_V6_FLAG ? 12 : 0)
                  + (sys_flag & STOREHOSTADDRESS_V6_FLAG ? 12 : 0);
    if (pos > total)
        return "TOTALSIZE too small for the fixed fields";
    int64_t body_length = read_be(r + pos - 4, 4);
    if (body_length < 0 || pos + body_length > total)
        return "body length does not fit the record";
    int64_t body = pos;
    pos += body_length;
    int64_t topic_length;
    if (magic == MAGIC_V1) {
        if (pos + 1 > total)
            return "record ends inside the topic length";
        topic_length = r[pos];
        if (topic_length > 127)
            return "negative topic length";
        pos += 1;
    }
    else {
        if (pos + 2 > total)
            return "record ends inside the topic length";
        topic_length = (int16_t)(uint16_t)read_be(r + pos, 2);
        if (topic_length < 0)
            return "negative topic length";
        pos += 2;
    }
    if (pos + topic_length + 2 > total)
        return "topic length does not fit the record";
    int64_t properties_length = (int16_t)(uint16_t)read_be(r + pos + topic_length, 2);
    if (properties_length < 0 || pos + topic_length + 2 + properties_length != total)
        return "TOTALSIZE does not match the fields";
    if (crc && (int32_t)(rmq_crc32(0, r + body, (size_t)body_length) & 0x7FFFFFFF)
            != (int32_t)read_be(r + 8, 4))
        return "BODYCRC does not match the body";
    return NULL;
}

/* framing.check_records: walk the whole records of p[pos:end] (p[pos] at commit-log
 * ``offset``, segments of ``file_size``); *stop after the last that passed. NULL when the
 * walk stopped at bytes not complete yet, else why the record at *stop is refused. */
static const char *
check_records(const unsigned char *p, int64_t pos, int64_t end, int64_t offset,
              int64_t file_size, int crc, int64_t *stop)
{
    const char *why = NULL;
    while (end - pos >= 8) {
        int64_t total = read_be(p + pos, 4);
        int32_t magic = (int32_t)read_be(p + pos + 4, 4);
        int64_t in_file = file_size - offset % file_size;
        if (magic == MAGIC_BLANK) {
            if (total != in_file) {
                why = "an end-of-file blank whose size is not the rest of its file";
                break;
            }
            if (end - pos < total)
                break;
        }
        else if (magic != MAGIC_V1 && magic != MAGIC_V2) {
            why = "not a record's magic code";
            break;
        }
        else if (total < MIN_RECORD_LENGTH || total > in_file) {
            why = "TOTALSIZE below the smallest record or beyond the file";
            break;
        }
        else if (end - pos < total) {
            break;
        }
        else if ((why = check_record(p + pos, total, magic, crc)) != NULL) {
            break;
        }
        pos += total;
        offset += total;
    }
    *stop = pos;
    return why;
}

/* The state of the transfer being read, kept across reads. */
typedef struct {
    unsigned char header[HEADER_SIZE];
    int header_length;       /* bytes of a split header read so far */
    int64_t body_remaining;  /* body bytes still to come, 0 between transfers */
} Transfer;

/* Take ``n`` bytes at ``p``: copy bodies into the segment. At a header that is not the
 * plain case, set ``*back`` to where the bytes to hand back start (the header's first
 * byte in ``p``, or ``p + consumed`` with the header in ``t->header``) and return
 * HANDED_BACK. */
static enum outcome
take(Receiver *self, Transfer *t, const unsigned char *p, Py_ssize_t n, int64_t *end,
     Py_ssize_t *back)
{
    unsigned char *segment = self->segment.buf;
    int64_t limit = self->segment_from + self->segment.len;
    Py_ssize_t at = 0;
    while (at < n) {
        if (t->body_remaining) {
            Py_ssize_t count = n - at < t->body_remaining ? n - at : (Py_ssize_t)t->body_remaining;
            memcpy(segment + (*end - self->segment_from), p + at, (size_t)count);
            *end += count;
            at += count;
            t->body_remaining -= count;
            continue;
        }
        const unsigned char *header;
        Py_ssize_t header_start = at;
        if (t->header_length || n - at < HEADER_SIZE) {
            int count = HEADER_SIZE - t->header_length;
            if (n - at < count)
                count = (int)(n - at);
            memcpy(t->header + t->header_length, p + at, (size_t)count);
            t->header_length += count;
            at += count;
            if (t->header_length < HEADER_SIZE)
                break;
            header = t->header;
            header_start = -1;  /* in t->header */
        }
        else {
            header = p + at;
            at += HEADER_SIZE;
        }
        int64_t offset = read_be(header, 8);
        int64_t size = read_be(header + 8, 4);
        if (offset != *end || size < 0 || size > limit - *end) {
            if (header_start >= 0) {
                t->header_length = 0;
                *back = header_start;
            }
            else {
                *back = at;  /* the header itself is in t->header */
            }
            return HANDED_BACK;
        }
        t->header_length = 0;
        t->body_remaining = size;
    }
    return RUNNING;
}

/* Tell the reactor there is progress to take, if it asked (arm). */
static void
wake(Receiver *self)
{
    if (atomic_exchange(&self->armed, 0)) {
        ssize_t ignored = write(self->wake_write, "w", 1);  /* a full pipe: already woken */
        (void)ignored;
    }
}

static enum outcome
loop(Receiver *self, unsigned char *buffer, Transfer *t, Py_ssize_t *kept, Py_ssize_t *back,
     int *error)
{
    int64_t end = atomic_load(&self->end);
    int64_t last_report = now_ms();
    for (;;) {
        int64_t wait = last_report + self->heartbeat_ms - now_ms();
        struct pollfd fds[2] = {{self->fd, POLLIN, 0}, {self->stop_read, POLLIN, 0}};
        int ready = poll(fds, 2, wait > 0 ? (int)(wait < INT32_MAX ? wait : INT32_MAX) : 0);
        if (ready < 0) {
            if (errno == EINTR)
                continue;
            *error = errno;
            return FAILED;
        }
        if (fds[1].revents)
            return STOPPED;
        if (ready == 0) {  /* the heartbeat: report even when nothing grew */
            enum outcome outcome = report(self, self->checked >= 0 ? self->checked : end,
                                          &last_report, error);
            if (outcome != RUNNING)
                return outcome;
            wake(self);
            continue;
        }
        ssize_t n = recv(self->fd, buffer, READ_CAPACITY, 0);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            *error = errno;
            return FAILED;
        }
        if (n == 0)
            return CLOSED;
        atomic_fetch_add(&self->bytes_read, n);
        enum outcome taken = take(self, t, buffer, n, &end, back);
        int64_t acked = end;
        if (self->checked >= 0) {
            unsigned char *segment = self->segment.buf;
            int64_t from = self->segment_from;
            self->refusal = check_records(segment, self->checked - from, end - from,
                                          self->checked, self->segment.len, self->check_crc,
                                          &acked);
            acked += from;
            self->checked = acked;
            if (self->refusal != NULL) {  /* never acknowledged, never dispatched */
                memset(segment + (acked - from), 0, (size_t)(end - acked));
                self->refused_at = acked;
                atomic_store_explicit(&self->end, acked, memory_order_release);
                return BAD_RECORD;
            }
        }
        atomic_store_explicit(&self->end, end, memory_order_release);
        if (taken == HANDED_BACK) {
            *kept = n;
            return HANDED_BACK;
        }
        if (acked > atomic_load(&self->reported)) {
            enum outcome outcome = report(self, acked, &last_report, error);
            if (outcome != RUNNING)
                return outcome;
        }
        wake(self);
    }
}

/* ------------------------------------------------------------------- the methods */

PyDoc_STRVAR(receiver_run_doc,
"run() -> (outcome, leftover, error)\n\n"
"Receive until stopped or until a transfer is not the plain case; call it once, in a\n"
"thread of its own. ``outcome`` is 'stopped', 'closed' (the master closed), 'failed'\n"
"(``error`` is the errno), 'handed back' or 'bad record' (see ``refusal``); ``leftover``\n"
"holds the bytes to hand to the Python client (from a header on, for 'handed back';\n"
"empty otherwise).");

static PyObject *
receiver_run(Receiver *self, PyObject *unused)
{
    if (self->started || self->fd < 0) {
        PyErr_SetString(PyExc_RuntimeError, "HAReceiver.run may be called once, after __init__");
        return NULL;
    }
    self->started = 1;
    atomic_store(&self->running, 1);
    unsigned char *buffer = PyMem_RawMalloc(READ_CAPACITY);
    if (buffer == NULL) {
        atomic_store(&self->running, 0);
        return PyErr_NoMemory();
    }
    Transfer t = {.header_length = self->header_length,
                  .body_remaining = self->body_remaining};
    memcpy(t.header, self->header, HEADER_SIZE);
    Py_ssize_t kept = 0, back = 0;
    int error = 0;
    enum outcome outcome;
    Py_BEGIN_ALLOW_THREADS
    outcome = loop(self, buffer, &t, &kept, &back, &error);
    Py_END_ALLOW_THREADS
    atomic_store(&self->running, 0);
    PyObject *leftover;
    if (outcome == HANDED_BACK) {
        Py_ssize_t header = t.header_length;  /* a header split across reads, completed */
        leftover = PyBytes_FromStringAndSize(NULL, header + kept - back);
        if (leftover != NULL) {
            memcpy(PyBytes_AS_STRING(leftover), t.header, (size_t)header);
            memcpy(PyBytes_AS_STRING(leftover) + header, buffer + back, (size_t)(kept - back));
        }
    }
    else {
        leftover = PyBytes_FromStringAndSize(NULL, 0);
    }
    PyMem_RawFree(buffer);
    if (leftover == NULL)
        return NULL;
    static const char *const names[] = {"running", "stopped", "closed", "failed", "handed back",
                                        "bad record"};
    return Py_BuildValue("(sNi)", names[outcome], leftover, error);
}

PyDoc_STRVAR(receiver_progress_doc,
"progress() -> (end, bytes_read, reported, reports)\n\n"
"The offset the bytes written reach, the bytes read, the last offset reported and the\n"
"number of reports sent, as the loop published them.");

static PyObject *
receiver_progress(Receiver *self, PyObject *unused)
{
    long long end = atomic_load_explicit(&self->end, memory_order_acquire);
    return Py_BuildValue("(LLLL)", end, (long long)atomic_load(&self->bytes_read),
                         (long long)atomic_load(&self->reported),
                         (long long)atomic_load(&self->reports));
}

PyDoc_STRVAR(receiver_arm_doc,
"arm()\n\nWrite a byte to ``wake_fd`` after the next read (once).");

static PyObject *
receiver_arm(Receiver *self, PyObject *unused)
{
    atomic_store(&self->armed, 1);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(receiver_drain_doc, "drain()\n\nRead what is in ``wake_fd``.");

static PyObject *
receiver_drain(Receiver *self, PyObject *unused)
{
    unsigned char bytes[64];
    while (self->wake_read >= 0 && read(self->wake_read, bytes, sizeof(bytes)) > 0)
        ;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(receiver_stop_doc,
"stop()\n\nMake ``run`` return 'stopped' (at once if it has not begun).");

static PyObject *
receiver_stop(Receiver *self, PyObject *unused)
{
    if (self->stop_write >= 0 && write(self->stop_write, "s", 1) < 0 && errno != EAGAIN)
        return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(receiver_close_doc,
"close()\n\nRelease the segment and the descriptors; only once ``run`` has returned (or\n"
"was never called).");

static PyObject *
receiver_close(Receiver *self, PyObject *unused)
{
    if (atomic_load(&self->running)) {
        PyErr_SetString(PyExc_RuntimeError, "HAReceiver.close while run is receiving: stop it "
                        "and wait for run to return");
        return NULL;
    }
    release(self);
    Py_RETURN_NONE;
}

static PyObject *
receiver_refusal(Receiver *self, void *closure)
{
    if (self->refusal == NULL)
        Py_RETURN_NONE;
    return Py_BuildValue("(Ls)", (long long)self->refused_at, self->refusal);
}

PyDoc_STRVAR(receiver_check_records_doc,
"check_records(buffer, pos, end, offset, file_size, check_crc) -> (stop, why)\n\n"
"The C twin of rmqproto.ha.framing.check_records (a static method).");

static PyObject *
receiver_check_records(PyObject *unused, PyObject *args)
{
    Py_buffer buffer;
    long long pos, end, offset, file_size;
    int crc;
    if (!PyArg_ParseTuple(args, "y*LLLLp", &buffer, &pos, &end, &offset, &file_size, &crc))
        return NULL;
    if (pos < 0 || pos > end || end > buffer.len || offset < 0 || file_size <= 0) {
        PyBuffer_Release(&buffer);
        PyErr_SetString(PyExc_ValueError, "need 0 <= pos <= end <= len(buffer), offset >= 0 "
                        "and file_size > 0");
        return NULL;
    }
    int64_t stop;
    const char *why;
    Py_BEGIN_ALLOW_THREADS
    why = check_records(buffer.buf, pos, end, offset, file_size, crc, &stop);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buffer);
    if (why == NULL)
        return Py_BuildValue("(LO)", (long long)stop, Py_None);
    return Py_BuildValue("(Ls)", (long long)stop, why);
}

static PyObject *
receiver_wake_fd(Receiver *self, void *closure)
{
    return PyLong_FromLong(self->wake_read);
}

static PyMethodDef receiver_methods[] = {
    {"run", (PyCFunction)receiver_run, METH_NOARGS, receiver_run_doc},
    {"progress", (PyCFunction)receiver_progress, METH_NOARGS, receiver_progress_doc},
    {"arm", (PyCFunction)receiver_arm, METH_NOARGS, receiver_arm_doc},
    {"drain", (PyCFunction)receiver_drain, METH_NOARGS, receiver_drain_doc},
    {"stop", (PyCFunction)receiver_stop, METH_NOARGS, receiver_stop_doc},
    {"close", (PyCFunction)receiver_close, METH_NOARGS, receiver_close_doc},
    {"check_records", (PyCFunction)receiver_check_records, METH_VARARGS | METH_STATIC,
     receiver_check_records_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef receiver_getset[] = {
    {"wake_fd", (getter)receiver_wake_fd, NULL,
     "The pipe a byte arrives in after a read, once armed (-1 once closed).", NULL},
    {"refusal", (getter)receiver_refusal, NULL,
     "After 'bad record': (offset of the refused record, why); else None.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(receiver_doc,
"HAReceiver(fd, segment, segment_from, end, reported, heartbeat_ms, header=b'',\n"
"           body_remaining=0, checked=-1, check_crc=False)\n\n"
"The receive loop of an HA slave connected on socket ``fd`` (duplicated), appending into\n"
"``segment`` (a writable buffer: the mapped commit-log segment starting at offset\n"
"``segment_from``) from offset ``end`` on; ``reported`` is the offset the master was last\n"
"told, ``heartbeat_ms`` how often to report when nothing grows. The stream stands after\n"
"``header`` (the first bytes of a header) or inside a body with ``body_remaining`` bytes\n"
"to come. With ``checked`` (a record boundary in the segment, at most ``end``) the records\n"
"from there on are checked (their BODYCRC too with ``check_crc``) before they are reported\n"
"or published.");

static PyTypeObject ReceiverType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rmqproto.codec._speedups.HAReceiver",
    .tp_basicsize = sizeof(Receiver),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = receiver_doc,
    .tp_new = receiver_new,
    .tp_init = (initproc)receiver_init,
    .tp_dealloc = (destructor)receiver_dealloc,
    .tp_methods = receiver_methods,
    .tp_getset = receiver_getset,
};

int
hareceiver_add_type(PyObject *module)
{
    if (PyType_Ready(&ReceiverType) < 0)
        return -1;
    Py_INCREF(&ReceiverType);
    if (PyModule_AddObject(module, "HAReceiver", (PyObject *)&ReceiverType) < 0) {
        Py_DECREF(&ReceiverType);
        return -1;
    }
    return 0;
}
