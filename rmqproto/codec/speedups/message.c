/*
 * rmqproto.codec.message: a message's properties string, and the usual records of the
 * commit log (CommitLog#checkMessageAndReturnSize) read straight into their dispatch
 * fields. Batches are in message_batch.c.
 */
#include "speedups.h"

/* A new reference to text[start:end], the interned name when it is a usual one. */
static PyObject *
property_name(PyObject *text, Py_ssize_t start, Py_ssize_t end)
{
    if (PyUnicode_KIND(text) == PyUnicode_1BYTE_KIND) {
        const char *name = (const char *)PyUnicode_1BYTE_DATA(text) + start;
        size_t length = end - start;
        for (int i = 0; i < USUAL_NAME_COUNT; i++) {
            if (strlen(USUAL_NAMES[i]) == length && memcmp(USUAL_NAMES[i], name, length) == 0)
                return Py_NewRef(USUAL_NAME[i]);
        }
    }
    return PyUnicode_Substring(text, start, end);
}

/* The properties of a str: each "name\x01value" fragment (split on \x02) with a
 * non-empty name and value, a repeated name keeping its last value. */
PyObject *
properties_of_text(PyObject *text)
{
    PyObject *props = PyDict_New();
    if (props == NULL)
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t start = 0;
    while (start < n) {
        Py_ssize_t end = start, eq = -1;
        for (; end < n; end++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, end);
            if (c == PROPERTY_SEPARATOR)
                break;
            if (c == NAME_VALUE_SEPARATOR && eq < 0)
                eq = end;
        }
        if (eq > start && end > eq + 1) {
            PyObject *name = property_name(text, start, eq);
            PyObject *value = name == NULL ? NULL : PyUnicode_Substring(text, eq + 1, end);
            int failed = value == NULL || PyDict_SetItem(props, name, value);
            Py_XDECREF(name);
            Py_XDECREF(value);
            if (failed) {
                Py_DECREF(props);
                return NULL;
            }
        }
        start = end + 1;
    }
    return props;
}

/* The properties of n bytes at p, UTF-8 (surrogateescape for any other byte). */
PyObject *
properties_of_bytes(const unsigned char *p, Py_ssize_t n)
{
    PyObject *text = decode_text(p, n);
    PyObject *properties = text == NULL ? NULL : properties_of_text(text);
    Py_XDECREF(text);
    return properties;
}

PyDoc_STRVAR(string_to_properties_doc,
"string_to_properties(text)\n\n"
"rmqproto.codec.message.string_to_properties.");

static PyObject *
string_to_properties(PyObject *module, PyObject *text)
{
    if (PyUnicode_Check(text))
        return properties_of_text(text);
    int truth = PyObject_IsTrue(text);  /* None (no properties) and "" alike */
    if (truth == 0)
        return PyDict_New();
    if (truth > 0)
        PyErr_Format(PyExc_TypeError, "properties must be a str, not %.100s",
                     Py_TYPE(text)->tp_name);
    return NULL;
}

PyDoc_STRVAR(properties_utf8_doc,
"properties_utf8(properties) -> bytes or None\n\n"
"rmqproto.codec.message.python_properties_utf8 of a dict whose names are str and whose\n"
"values are str or None; None for any other argument and where the UTF-8 encoder\n"
"refuses a character (the caller asks the Python twin).");

PyObject *
properties_utf8(PyObject *module, PyObject *properties)
{
    if (!PyDict_CheckExact(properties))
        Py_RETURN_NONE;
    /* the length and widest character of "name\x01value" pairs joined by \x02 */
    Py_ssize_t pos = 0, length = -1;
    Py_UCS4 max_char = 0;
    PyObject *name, *value;
    while (PyDict_Next(properties, &pos, &name, &value)) {
        if (value == Py_None)
            continue;
        if (!PyUnicode_CheckExact(name) || !PyUnicode_CheckExact(value))
            Py_RETURN_NONE;
        length += PyUnicode_GET_LENGTH(name) + PyUnicode_GET_LENGTH(value) + 2;
        max_char = Py_MAX(max_char, Py_MAX(PyUnicode_MAX_CHAR_VALUE(name),
                                           PyUnicode_MAX_CHAR_VALUE(value)));
    }
    if (length < 0)
        return PyBytes_FromStringAndSize(NULL, 0);
    /* no Python code runs from here on: the dict is the one measured */
    PyObject *text = PyUnicode_New(length, max_char);
    if (text == NULL)
        return NULL;
    int kind = PyUnicode_KIND(text);
    void *data = PyUnicode_DATA(text);
    Py_ssize_t at = 0;
    pos = 0;
    while (PyDict_Next(properties, &pos, &name, &value)) {
        if (value == Py_None)
            continue;
        if (at > 0)
            PyUnicode_WRITE(kind, data, at++, PROPERTY_SEPARATOR);
        Py_ssize_t name_length = PyUnicode_GET_LENGTH(name);
        if (PyUnicode_CopyCharacters(text, at, name, 0, name_length) < 0)
            goto failed;
        at += name_length;
        PyUnicode_WRITE(kind, data, at++, NAME_VALUE_SEPARATOR);
        Py_ssize_t value_length = PyUnicode_GET_LENGTH(value);
        if (PyUnicode_CopyCharacters(text, at, value, 0, value_length) < 0)
            goto failed;
        at += value_length;
    }
    PyObject *raw = PyUnicode_AsEncodedString(text, "utf-8", "surrogateescape");
    Py_DECREF(text);
    if (raw == NULL && PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return raw;
failed:
    Py_DECREF(text);
    return NULL;
}

PyDoc_STRVAR(pick_properties_doc,
"pick_properties(properties, names, drop) -> dict\n\n"
"rmqproto.codec.message.pick_properties.");

static PyObject *
pick_properties(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 3, "pick_properties takes properties, names and drop") < 0)
        return NULL;
    PyObject *properties = args[0], *drop = args[2];
    PyObject *names = PyObject_GetIter(args[1]);
    PyObject *picked = names == NULL ? NULL : PyDict_New();
    if (picked == NULL) {
        Py_XDECREF(names);
        return NULL;
    }
    PyObject *name;
    while ((name = PyIter_Next(names)) != NULL) {
        int dropped = PySequence_Contains(drop, name);
        PyObject *value = dropped == 0 ? PyObject_GetItem(properties, name) : NULL;
        int failed = dropped < 0
            || (dropped == 0 && (value == NULL || PyDict_SetItem(picked, name, value) < 0));
        Py_XDECREF(value);
        Py_DECREF(name);
        if (failed)
            break;
    }
    Py_DECREF(names);
    if (PyErr_Occurred())
        Py_CLEAR(picked);
    return picked;
}

/* The one topic a run of records usually shares, decoded once. */
typedef struct {
    unsigned char raw[MAX_TOPIC_LENGTH_V1];
    Py_ssize_t length;
    PyObject *text;
} TopicCache;

static PyObject *
topic_text(TopicCache *cache, const unsigned char *p, Py_ssize_t n)
{
    if (cache->text == NULL || cache->length != n || memcmp(cache->raw, p, n) != 0) {
        PyObject *text = decode_text(p, n);
        if (text == NULL)
            return NULL;
        Py_XSETREF(cache->text, text);
        memcpy(cache->raw, p, n);
        cache->length = n;
    }
    return Py_NewRef(cache->text);
}



/* The dispatch-fields tuple of the usual record at buffer[pos:pos + total]; NULL with no
 * error set when the record is not a usual one. */
static PyObject *
usual_record_fields(const unsigned char *buffer, Py_ssize_t size, Py_ssize_t pos,
                    int check_crc, TopicCache *topics, int *failed)
{
    RecordLayout at;
    if (!usual_record_layout(buffer, size, pos, check_crc, &at))
        return NULL;
    const unsigned char *r = buffer + pos;
    PyObject *properties = properties_of_bytes(buffer + at.properties_pos,
                                               at.properties_length);
    if (properties == NULL) {
        *failed = 1;
        return NULL;
    }
    PyObject *topic = topic_text(topics, buffer + at.topic_pos, at.topic_length);
    if (topic == NULL) {
        Py_DECREF(properties);
        *failed = 1;
        return NULL;
    }
    PyObject *fields = Py_BuildValue("(NiLLLLLNL)", topic, read_int(r + 12),
                                     (long long)read_long(r + 20), (long long)read_long(r + 28),
                                     (long long)at.sys_flag, (long long)read_long(r + 56),
                                     (long long)read_long(r + 76), properties,
                                     (long long)at.total);
    if (fields == NULL)
        *failed = 1;
    return fields;
}

PyDoc_STRVAR(take_usual_records_doc,
"take_usual_records(buffer, position, stop_at, max_count, check_crc, out) -> position\n\n"
"Append to the list out the decode_dispatch_fields tuple of each record from position\n"
"on while the records are usual ones (version-1 magic code, IPv4 hosts, every check of\n"
"the record layout passing; with check_crc true, the body's masked CRC32 too), position\n"
"is below stop_at and out holds fewer than max_count tuples; return the position after\n"
"the last record appended.  The record found there (or the end) is left for the caller\n"
"to decide.");

static PyObject *
take_usual_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 6 && PyList_Check(args[5]), "take_usual_records takes buffer, "
                     "position, stop_at, max_count, check_crc and a list") < 0)
        return NULL;
    Py_ssize_t scan[3];  /* position, stop_at, max_count */
    if (ssize_args(args + 1, 3, scan) < 0)
        return NULL;
    Py_ssize_t pos = scan[0], stop_at = scan[1], max_count = scan[2];
    int check_crc = PyObject_IsTrue(args[4]);
    if (check_crc < 0)
        return NULL;
    PyObject *out = args[5];
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *buffer = view.buf;
    Py_ssize_t size = view.len;
    TopicCache topics = {.text = NULL};
    int failed = 0;
    while (pos >= 0 && pos < stop_at && size - pos >= FIXED_V1
           && PyList_GET_SIZE(out) < max_count) {
        PyObject *fields = usual_record_fields(buffer, size, pos, check_crc, &topics, &failed);
        if (fields == NULL)
            break;
        failed = PyList_Append(out, fields);
        Py_DECREF(fields);
        if (failed)
            break;
        pos += read_int(buffer + pos);
    }
    Py_XDECREF(topics.text);
    PyBuffer_Release(&view);
    return failed ? NULL : PyLong_FromSsize_t(pos);
}

#define INDEX_HEADER_SIZE 40
#define HASH_SLOT_SIZE 4
#define INDEX_SIZE 20


PyMethodDef message_methods[] = {
    ONE_ARG_METHOD(string_to_properties),
    ONE_ARG_METHOD(properties_utf8),
    FASTCALL_METHOD(pick_properties),
    FASTCALL_METHOD(take_usual_records),
    END_OF_METHODS,
};
