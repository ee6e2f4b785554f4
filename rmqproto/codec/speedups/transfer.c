/*
 * rmqproto.store.transfer: the unit loop of a pull (DefaultMessageStore#getMessage) over
 * the consume queue's units and the commit log's mapped segments.
 */
#include "speedups.h"

PyDoc_STRVAR(transfer_units_doc,
"transfer_units(files, file_size, units, offset, max_msg_nums, message_filter,\n"
"               max_offset_py, memory, caps, messages, queue_offsets)\n"
"    -> (outcome, scanned, max_phy_pulling) or None\n\n"
"rmqproto.store.transfer.python_transfer_units in one call.  None, with nothing done,\n"
"when an argument is not as the store passes it (files, messages and queue_offsets\n"
"lists, units a bytes-like object, numbers within a Java long, file_size above 0): the\n"
"caller then runs the Python loop.");

typedef __int128 wide_t;

/* The MappedFile attributes a pull reads. */
static PyObject *SEGMENT_FROM, *SEGMENT_WROTE, *SEGMENT_MM;

/* Python's floor division and modulo by a positive divisor. */
static int64_t
floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* A segment's int attribute name (within a Java long) in *value: 0, or -1 with an
 * exception set. */
static int
segment_long(PyObject *file, PyObject *name, int64_t *value)
{
    PyObject *object = PyObject_GetAttr(file, name);
    if (object == NULL)
        return -1;
    int ok = 1;
    *value = as_long(object, &ok);
    Py_DECREF(object);
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "a segment's %U must be an int within a Java long",
                     name);
        return -1;
    }
    return 0;
}

/* rmqproto.store.mappedfile.file_by_offset: the segment of files holding offset (a new
 * reference, its offset in *from), Py_None (a new reference) when none, NULL on an error. */
static PyObject *
segment_by_offset(PyObject *files, int64_t file_size, int64_t offset, int64_t *from)
{
    Py_ssize_t count = PyList_GET_SIZE(files);
    if (count == 0)
        Py_RETURN_NONE;
    PyObject *first = Py_NewRef(PyList_GET_ITEM(files, 0));
    int64_t first_from;
    if (segment_long(first, SEGMENT_FROM, &first_from) < 0)
        goto error;
    wide_t index = (wide_t)floor_div(offset, file_size) - floor_div(first_from, file_size);
    for (Py_ssize_t i = -1; i < PyList_GET_SIZE(files); i++) {
        /* first the segment the offset's number points at, then each in turn */
        if (i < 0 && !(index >= 0 && index < PyList_GET_SIZE(files)))
            continue;
        PyObject *file = Py_NewRef(PyList_GET_ITEM(files, i < 0 ? (Py_ssize_t)index : i));
        if (segment_long(file, SEGMENT_FROM, from) < 0) {
            Py_DECREF(file);
            goto error;
        }
        if (*from <= offset && offset < (wide_t)*from + file_size) {
            Py_DECREF(first);
            return file;
        }
        Py_DECREF(file);
    }
    if (offset == 0) {  /* returnFirstOnNotFound, as getMessage asks at 0 */
        *from = first_from;
        return first;
    }
    Py_DECREF(first);
    Py_RETURN_NONE;
error:
    Py_DECREF(first);
    return NULL;
}

/* MappedFile.read of the record at offset: a new bytes object, Py_None (a new reference)
 * when not all of it is written there, NULL on an error. */
static PyObject *
read_segment(PyObject *file, int64_t from, int64_t offset, int32_t size)
{
    wide_t pos = (wide_t)offset - from;
    int64_t wrote;
    if (segment_long(file, SEGMENT_WROTE, &wrote) < 0)
        return NULL;
    if (pos < 0 || size < 0 || pos + size > wrote)
        Py_RETURN_NONE;
    PyObject *mm = PyObject_GetAttr(file, SEGMENT_MM);
    if (mm == NULL)
        return NULL;
    Py_buffer view;
    int got = PyObject_GetBuffer(mm, &view, PyBUF_SIMPLE);
    Py_DECREF(mm);
    if (got < 0)
        return NULL;
    /* a slice of the mapping: what lies within it */
    Py_ssize_t start = pos < view.len ? (Py_ssize_t)pos : view.len;
    Py_ssize_t n = pos + size <= view.len ? size : view.len - start;
    PyObject *data = PyBytes_FromStringAndSize((const char *)view.buf + start, n);
    PyBuffer_Release(&view);
    return data;
}

static PyObject *
transfer_units(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 11, "transfer_units takes files, file_size, units, offset, "
                     "max_msg_nums, message_filter, max_offset_py, memory, caps, messages "
                     "and queue_offsets") < 0)
        return NULL;
    PyObject *files = args[0], *filter = args[5], *messages = args[9], *queue_offsets = args[10];
    PyObject *caps_obj = args[8];
    int ok = PyList_Check(files) && PyList_Check(messages) && PyList_Check(queue_offsets)
        && PyTuple_Check(caps_obj) && PyTuple_GET_SIZE(caps_obj) == 4;
    int64_t file_size = ok ? as_long(args[1], &ok) : 0;
    int64_t offset = ok ? as_long(args[3], &ok) : 0;
    int64_t max_msg_nums = ok ? as_long(args[4], &ok) : 0;
    int64_t max_offset_py = ok ? as_long(args[6], &ok) : 0;
    int64_t memory = ok ? as_long(args[7], &ok) : 0;
    int64_t caps[4] = {0, 0, 0, 0};
    for (int k = 0; ok && k < 4; k++)
        caps[k] = as_long(PyTuple_GET_ITEM(caps_obj, k), &ok);
    Py_buffer units;
    if (!ok || file_size <= 0 || PyObject_GetBuffer(args[2], &units, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    int64_t last_queue_offset;
    if (__builtin_add_overflow(offset, (int64_t)(units.len / 20), &last_queue_offset)) {
        PyBuffer_Release(&units);
        Py_RETURN_NONE;
    }
    const unsigned char *p = units.buf;
    int outcome = 0;  /* NO_MATCH */
    int have_next_start = 0;
    wide_t next_start = 0;
    int64_t max_phy_pulling = 0, total = 0;
    Py_ssize_t i = 0;
    for (; i + 20 <= units.len; i += 20) {
        int64_t offset_py = read_long(p + i);
        int32_t size_py = read_int(p + i + 8);
        int64_t tags_code = read_long(p + i + 12);
        max_phy_pulling = offset_py;
        if (have_next_start && offset_py < next_start)
            continue;
        Py_ssize_t count = PyList_GET_SIZE(messages);
        if (total != 0 && count != 0) {  /* isTheBatchFull */
            int in_disk = (wide_t)max_offset_py - offset_py > memory;
            wide_t max_bytes = caps[in_disk ? 0 : 2], max_count = caps[in_disk ? 1 : 3];
            if (max_msg_nums <= count || (wide_t)total + size_py > max_bytes
                    || count > max_count - 1)
                break;
        }
        if (filter != Py_None) {
            PyObject *code = PyLong_FromLongLong(tags_code);
            PyObject *matched = code == NULL ? NULL : PyObject_CallOneArg(filter, code);
            Py_XDECREF(code);
            int truth = matched == NULL ? -1 : PyObject_IsTrue(matched);
            Py_XDECREF(matched);
            if (truth < 0)
                goto error;
            if (!truth)
                continue;
        }
        int64_t from;
        PyObject *file = segment_by_offset(files, file_size, offset_py, &from);
        if (file == NULL)
            goto error;
        PyObject *data = file == Py_None ? Py_NewRef(Py_None)
            : read_segment(file, from, offset_py, size_py);
        Py_DECREF(file);
        if (data == NULL)
            goto error;
        if (data == Py_None) {
            Py_DECREF(data);
            if (total == 0)
                outcome = 1;  /* REMOVING */
            next_start = (wide_t)offset_py + file_size
                - (offset_py - floor_div(offset_py, file_size) * (wide_t)file_size);
            have_next_start = 1;
            continue;
        }
        PyObject *queue_offset = PyLong_FromLongLong(offset + i / 20);
        int failed = queue_offset == NULL || PyList_Append(messages, data) < 0
            || PyList_Append(queue_offsets, queue_offset) < 0;
        total += PyBytes_GET_SIZE(data);
        Py_DECREF(data);
        Py_XDECREF(queue_offset);
        if (failed)
            goto error;
        outcome = 2;  /* FOUND */
        have_next_start = 0;
    }
    PyBuffer_Release(&units);
    return Py_BuildValue("(inL)", outcome, i / 20, (long long)max_phy_pulling);
error:
    PyBuffer_Release(&units);
    return NULL;
}

int
transfer_init(void)
{
    return (SEGMENT_FROM = PyUnicode_InternFromString("file_from_offset")) == NULL
        || (SEGMENT_WROTE = PyUnicode_InternFromString("wrote_position")) == NULL
        || (SEGMENT_MM = PyUnicode_InternFromString("mm")) == NULL ? -1 : 0;
}

PyMethodDef transfer_methods[] = {
    FASTCALL_METHOD(transfer_units),
    END_OF_METHODS,
};
