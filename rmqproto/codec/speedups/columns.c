/*
 * rmqproto.spark.columns: stored message records (a pull's answer body, a commit-log
 * region, the records in a DLedger segment's entries) straight to the column buffers of
 * the Spark readers' rows, with no Python object a record (record_columns).
 */
#include "speedups.h"

#define BLANK_MAGIC_CODE (-875286124)
#define MESSAGE_MAGIC_CODE_V2 (-626843477)
#define COMPRESSED_FLAG 0x1
#define DLEDGER_MAGIC 1
#define DLEDGER_BODY_OFFSET 48
/* a record with more kept properties than this is left to Python */
#define MAX_KEPT_PROPERTIES 128
/* a call stops once a data buffer holds this much (Arrow's offsets are int32); a larger
 * body is left to Python */
#define MAX_BODY_DATA (1 << 30)

/* The buffers, in the order of rmqproto.spark.columns.BUFFERS. */
enum {
    TOPIC_OFFSETS, TOPIC_DATA, QUEUE_ID, QUEUE_OFFSET, COMMIT_LOG_OFFSET, MSG_ID_OFFSETS,
    MSG_ID_DATA, KEYS_VALID, KEYS_OFFSETS, KEYS_DATA, TAGS_VALID, TAGS_OFFSETS, TAGS_DATA,
    BODY_OFFSETS, BODY_DATA, BORN_TIMESTAMP, STORE_TIMESTAMP, BORN_HOST_OFFSETS,
    BORN_HOST_DATA, STORE_HOST_OFFSETS, STORE_HOST_DATA, RECONSUME_TIMES,
    PROPERTIES_OFFSETS, NAME_OFFSETS, NAME_DATA, VALUE_OFFSETS, VALUE_DATA, SYS_FLAG,
    STORE_SIZE, BODY_CRC, CRC_OK, BUFFER_COUNT
};

/* A growing buffer. */
typedef struct {
    unsigned char *p;
    Py_ssize_t length, capacity;
} Out;

/* Room for n more bytes: 0, or -1 with MemoryError set. */
static int
reserve(Out *out, Py_ssize_t n)
{
    if (out->length + n <= out->capacity)
        return 0;
    Py_ssize_t capacity = Py_MAX(out->capacity * 2, out->length + n + 256);
    unsigned char *p = PyMem_Realloc(out->p, capacity);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    out->p = p;
    out->capacity = capacity;
    return 0;
}

static inline int
put(Out *out, const void *p, Py_ssize_t n)
{
    if (n == 0)  /* an empty body: nothing to copy, out->p may still be NULL */
        return 0;
    if (reserve(out, n) < 0)
        return -1;
    memcpy(out->p + out->length, p, n);
    out->length += n;
    return 0;
}

/* Arrow's little-endian ints. */
static inline int
put_int32(Out *out, int32_t value)
{
    unsigned char b[4] = {value, (uint32_t)value >> 8, (uint32_t)value >> 16,
                          (uint32_t)value >> 24};
    return put(out, b, 4);
}

static inline int
put_int64(Out *out, int64_t value)
{
    return put_int32(out, (int32_t)value) < 0 ? -1
        : put_int32(out, (int32_t)((uint64_t)value >> 32));
}

/* Bit row of a bitmap (least significant bit first). */
static inline int
put_bit(Out *out, Py_ssize_t row, int bit)
{
    if (row % 8 == 0 && put(out, "", 1) < 0)
        return -1;
    out->p[row / 8] |= (unsigned char)(bit != 0) << (row % 8);
    return 0;
}

/* A string or binary value: its bytes to out[data], its end to out[data - 1]. */
static inline int
put_value(Out *out, int data, const void *p, Py_ssize_t n)
{
    return put(&out[data], p, n) < 0 ? -1 : put_int32(&out[data - 1], (int32_t)out[data].length);
}

/* Whether the n bytes at p are UTF-8 Python's strict decoder accepts. */
static int
utf8_ok(const unsigned char *p, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        uint64_t eight;
        if (n - i >= 8 && (memcpy(&eight, p + i, 8), !(eight & 0x8080808080808080ULL))) {
            i += 8;  /* eight ASCII bytes */
            continue;
        }
        unsigned char c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int more;
        unsigned char low = 0x80, high = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            more = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            more = 2;
            if (c == 0xE0)
                low = 0xA0;
            else if (c == 0xED)
                high = 0x9F;
        }
        else if (c >= 0xF0 && c <= 0xF4) {
            more = 3;
            if (c == 0xF0)
                low = 0x90;
            else if (c == 0xF4)
                high = 0x8F;
        }
        else
            return 0;
        if (n - i <= more || p[i + 1] < low || p[i + 1] > high)
            return 0;
        for (int k = 2; k <= more; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return 0;
        }
        i += more + 1;
    }
    return 1;
}

typedef struct {
    const unsigned char *name, *value;
    Py_ssize_t name_length, value_length;
} Property;

/* The properties string_to_properties keeps of p[:n] into kept (*count of them), in the
 * order of their names' first fragments, a name given twice with its last value (as a
 * batch message stores the names of its own and of its batch: CommitLog.
 * MessageExtBatchEncoder): 0 when one is not UTF-8 or there are too many. */
static int
kept_properties(const unsigned char *p, Py_ssize_t n, Property *kept, int *count)
{
    *count = 0;
    for (Py_ssize_t start = 0; start < n;) {
        Py_ssize_t eq, end = fragment_end(p, n, start, &eq);
        if (eq > start && end > eq + 1) {
            Property property = {p + start, p + eq + 1, eq - start, end - eq - 1};
            if (!utf8_ok(property.name, property.name_length)
                    || !utf8_ok(property.value, property.value_length))
                return 0;
            int i = 0;
            while (i < *count && (kept[i].name_length != property.name_length
                                  || memcmp(kept[i].name, property.name,
                                            property.name_length) != 0))
                i++;
            if (i == MAX_KEPT_PROPERTIES)
                return 0;
            kept[i] = property;
            *count += i == *count;
        }
        start = end + 1;
    }
    return 1;
}

/* The value of the kept property named name, or NULL. */
static const Property *
property_named(const Property *kept, int count, const char *name)
{
    Py_ssize_t length = strlen(name);
    for (int i = 0; i < count; i++) {
        if (kept[i].name_length == length && memcmp(kept[i].name, name, length) == 0)
            return &kept[i];
    }
    return NULL;
}

static inline int
put_optional(Out *out, int valid, Py_ssize_t row, const Property *property)
{
    return put_bit(&out[valid], row, property != NULL) < 0 ? -1
        : property == NULL ? put_int32(&out[valid + 1], (int32_t)out[valid + 2].length)
        : put_value(out, valid + 2, property->value, property->value_length);
}

/* A host's text, kept while the next record has the same host. */
typedef struct {
    unsigned char raw[8];
    int length;
    char text[32];
} HostText;

/* "a.b.c.d:port" of the IPv4 address and port at p. */
static inline int
put_host(Out *out, int data, const unsigned char *p, HostText *host)
{
    if (host->length == 0 || memcmp(host->raw, p, 8) != 0) {
        memcpy(host->raw, p, 8);
        host->length = snprintf(host->text, sizeof host->text, "%u.%u.%u.%u:%d", p[0], p[1],
                                p[2], p[3], (int)read_int(p + 4));
    }
    return put_value(out, data, host->text, host->length);
}

/* The offset message id (MessageDecoder.createMessageId) of store host and offset. */
static inline int
put_msg_id(Out *out, const unsigned char *store_host, int64_t offset)
{
    static const char hex[] = "0123456789ABCDEF";
    unsigned char raw[16];
    char text[32];
    memcpy(raw, store_host, 8);
    write_long(raw + 8, offset);
    for (int i = 0; i < 16; i++) {
        text[2 * i] = hex[raw[i] >> 4];
        text[2 * i + 1] = hex[raw[i] & 15];
    }
    return put_value(out, MSG_ID_DATA, text, 32);
}

/* What a call fills: the buffers, the rows so far, the hosts' texts. */
typedef struct {
    Out out[BUFFER_COUNT];
    Py_ssize_t rows;
    HostText born, store;
    int check_crc;
} Walk;

/* The row of the usual record at buffer[pos:] (size bytes in all): 1, 0 when it is not a
 * usual one (nothing written), -1 with an error set. */
static int
add_record(Walk *walk, const unsigned char *buffer, Py_ssize_t size, Py_ssize_t pos)
{
    Out *out = walk->out;
    Py_ssize_t row = walk->rows;
    int check_crc = walk->check_crc;
    RecordLayout at;
    Property kept[MAX_KEPT_PROPERTIES];
    int count;
    if (size - pos < FIXED_V1 || !usual_record_layout(buffer, size, pos, 0, &at)
            || (at.sys_flag & COMPRESSED_FLAG)
            || !utf8_ok(buffer + at.topic_pos, at.topic_length)
            || !kept_properties(buffer + at.properties_pos, at.properties_length, kept, &count))
        return 0;
    const unsigned char *r = buffer + pos;
    int32_t body_length = read_int(r + 84);
    if (body_length > MAX_BODY_DATA)
        return 0;
    if (put_value(out, TOPIC_DATA, buffer + at.topic_pos, at.topic_length) < 0
            || put_int32(&out[QUEUE_ID], read_int(r + 12)) < 0
            || put_int64(&out[QUEUE_OFFSET], read_long(r + 20)) < 0
            || put_int64(&out[COMMIT_LOG_OFFSET], read_long(r + 28)) < 0
            || put_msg_id(out, r + 64, read_long(r + 28)) < 0
            || put_optional(out, KEYS_VALID, row, property_named(kept, count, "KEYS")) < 0
            || put_optional(out, TAGS_VALID, row, property_named(kept, count, "TAGS")) < 0
            || put_value(out, BODY_DATA, r + FIXED_V1, body_length) < 0
            || put_int64(&out[BORN_TIMESTAMP], (int64_t)((uint64_t)read_long(r + 40) * 1000)) < 0
            || put_int64(&out[STORE_TIMESTAMP], (int64_t)((uint64_t)read_long(r + 56) * 1000)) < 0
            || put_host(out, BORN_HOST_DATA, r + 48, &walk->born) < 0
            || put_host(out, STORE_HOST_DATA, r + 64, &walk->store) < 0
            || put_int32(&out[RECONSUME_TIMES], read_int(r + 72)) < 0)
        return -1;
    for (int i = 0; i < count; i++) {
        if (put_value(out, NAME_DATA, kept[i].name, kept[i].name_length) < 0
                || put_value(out, VALUE_DATA, kept[i].value, kept[i].value_length) < 0)
            return -1;
    }
    if (put_int32(&out[PROPERTIES_OFFSETS], (int32_t)(out[NAME_OFFSETS].length / 4 - 1)) < 0
            || put_int32(&out[SYS_FLAG], (int32_t)at.sys_flag) < 0
            || put_int32(&out[STORE_SIZE], (int32_t)at.total) < 0
            || put_int32(&out[BODY_CRC], read_int(r + 8)) < 0
            || (check_crc && put_bit(&out[CRC_OK], row, masked_crc32(r + FIXED_V1, body_length)
                                                        == read_int(r + 8)) < 0))
        return -1;
    walk->rows++;
    return 1;
}

static int
all_zero(const unsigned char *p, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p[i])
            return 0;
    }
    return 1;
}

/* One step of a commit-log walk at pos: the record's size (its row added when take), 0
 * with *stop set where the walk stops, -1 with an error set. */
static Py_ssize_t
commitlog_step(Walk *walk, const unsigned char *buffer, Py_ssize_t size, Py_ssize_t pos,
               int take, const char **stop)
{
    const unsigned char *r = buffer + pos;
    if (size - pos < 8) {
        *stop = all_zero(r, size - pos) ? "empty" : "unusual";
        return 0;
    }
    int32_t total = read_int(r), magic = read_int(r + 4);
    if (magic == BLANK_MAGIC_CODE || (magic == 0 && total == 0)) {
        *stop = magic ? "blank" : "empty";
        return 0;
    }
    if (take) {
        int result = add_record(walk, buffer, size, pos);
        if (result <= 0) {
            *stop = "unusual";
            return result;
        }
        return total;
    }
    RecordLayout at;
    if (size - pos < FIXED_V1 || !usual_record_layout(buffer, size, pos, 0, &at)) {
        *stop = "unusual";
        return 0;
    }
    return total;
}

/* One step of a DLedger walk at pos, as commitlog_step: the entry's size. */
static Py_ssize_t
dledger_step(Walk *walk, const unsigned char *buffer, Py_ssize_t size, Py_ssize_t pos,
             int take, const char **stop)
{
    const unsigned char *e = buffer + pos;
    if (size - pos < DLEDGER_BODY_OFFSET) {
        *stop = "empty";
        return 0;
    }
    if (read_int(e) == -1 || all_zero(e, 8)) {
        *stop = read_int(e) == -1 ? "blank" : "empty";
        return 0;
    }
    int32_t entry_size = read_int(e + 4), body_length = read_int(e + 44);
    if (read_int(e) != DLEDGER_MAGIC || entry_size < DLEDGER_BODY_OFFSET) {
        *stop = "unusual";
        return 0;
    }
    if (!take)
        return entry_size;
    if (body_length < 0 || entry_size != DLEDGER_BODY_OFFSET + body_length
            || size - pos - DLEDGER_BODY_OFFSET < body_length) {
        *stop = "unusual";
        return 0;
    }
    const unsigned char *record = e + DLEDGER_BODY_OFFSET;
    if (body_length < 8)
        return entry_size;
    int32_t magic = read_int(record + 4);
    if (magic != MESSAGE_MAGIC_CODE && magic != MESSAGE_MAGIC_CODE_V2)
        return entry_size;
    int result = magic == MESSAGE_MAGIC_CODE ? add_record(walk, record, body_length, 0) : 0;
    if (result <= 0) {
        *stop = "unusual";
        return result;
    }
    return entry_size;
}

/* The tuple of out's bytes, or NULL. */
static PyObject *
buffers_tuple(Out *out)
{
    PyObject *buffers = PyTuple_New(BUFFER_COUNT);
    for (int i = 0; buffers != NULL && i < BUFFER_COUNT; i++) {
        PyObject *bytes = PyBytes_FromStringAndSize((const char *)out[i].p, out[i].length);
        if (bytes == NULL)
            Py_CLEAR(buffers);
        else
            PyTuple_SET_ITEM(buffers, i, bytes);
    }
    return buffers;
}

PyDoc_STRVAR(record_columns_doc,
"record_columns(buffer, position, start, end, is_dledger, check_crc, max_rows)\n"
"    -> (rows, buffers, position, stop, None)\n\n"
"rmqproto.spark.columns.python_record_columns for usual records (version-1 magic code,\n"
"IPv4 hosts, a body not compressed, a topic and properties of UTF-8, at most 128\n"
"properties): it stops before any other record or entry, and before bytes the reference would\n"
"call corrupt, with stop 'unusual' and position there, for the caller to take it the\n"
"reference's way.");

static PyObject *
record_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 7, "record_columns takes buffer, position, start, end, "
                     "is_dledger, check_crc and max_rows") < 0)
        return NULL;
    Py_ssize_t range[3], max_rows;
    int is_dledger, check_crc;
    if (ssize_args(args + 1, 3, range) < 0 || (is_dledger = PyObject_IsTrue(args[4])) < 0
            || (check_crc = PyObject_IsTrue(args[5])) < 0
            || ((max_rows = PyLong_AsSsize_t(args[6])) == -1 && PyErr_Occurred()))
        return NULL;
    Py_ssize_t pos = range[0], start = range[1], end = range[2];
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Walk walk = {.check_crc = check_crc};
    Out *out = walk.out;
    const char *stop = NULL;
    PyObject *result = NULL;
    static const int offsets[] = {TOPIC_OFFSETS, MSG_ID_OFFSETS, KEYS_OFFSETS, TAGS_OFFSETS,
                                  BODY_OFFSETS, BORN_HOST_OFFSETS, STORE_HOST_OFFSETS,
                                  PROPERTIES_OFFSETS, NAME_OFFSETS, VALUE_OFFSETS};
    for (int i = 0; i < COUNT(offsets); i++) {
        if (put_int32(&out[offsets[i]], 0) < 0)
            goto done;
    }
    if (pos < 0)
        stop = "unusual";
    while (stop == NULL && pos < end && walk.rows < max_rows
           && out[BODY_DATA].length < MAX_BODY_DATA && out[NAME_DATA].length < MAX_BODY_DATA
           && out[VALUE_DATA].length < MAX_BODY_DATA) {
        Py_ssize_t step = (is_dledger ? dledger_step : commitlog_step)(
            &walk, view.buf, view.len, pos, pos >= start, &stop);
        if (step < 0)
            goto done;
        pos += step;
    }
    PyObject *buffers = buffers_tuple(out);
    if (buffers != NULL)
        result = Py_BuildValue("nNnzO", walk.rows, buffers, pos, stop, Py_None);
done:
    for (int i = 0; i < BUFFER_COUNT; i++)
        PyMem_Free(out[i].p);
    PyBuffer_Release(&view);
    return result;
}

PyMethodDef columns_methods[] = {
    FASTCALL_METHOD(record_columns),
    END_OF_METHODS
};
