/*
 * rmqproto.codec._speedups: C versions of codec hot paths.
 *
 * Each function does exactly what the Python function named in its docstring does
 * (tests/codec/test_speedups*.py compare them on random inputs); the Python versions
 * stay the reference and are used when this module is not built.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <structmember.h>

#include "crc32.h"
#include "hareceiver.h"
#include "jsonheader.h"

/* Defined with the send path's functions, below: PyObject_SetAttr, straight into a
 * __slots__ slot; a dict's item looked for where the last one found left off. */
static int set_attribute(PyObject *object, PyObject *name, PyObject *value);
static PyObject *item_in_order(PyObject *dict, Py_ssize_t *cursor, PyObject *key);

#define PROPERTY_SEPARATOR 2
#define NAME_VALUE_SEPARATOR 1

/* A version-1 record with IPv4 hosts, the fixed part up to and including BODY LENGTH. */
#define FIXED_V1 88
#define MESSAGE_MAGIC_CODE (-626843481)
#define MIN_RECORD_LENGTH 91
#define HOST_FLAGS 48
#define MAX_TOPIC_LENGTH_V1 127
#define MAX_PROPERTIES_LENGTH 32767

static int32_t
read_int(const unsigned char *p)
{
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16)
                     | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

static int64_t
read_long(const unsigned char *p)
{
    return (int64_t)(((uint64_t)(uint32_t)read_int(p) << 32) | (uint32_t)read_int(p + 4));
}

static PyObject *
decode_text(const unsigned char *p, Py_ssize_t n)
{
    return PyUnicode_DecodeUTF8((const char *)p, n, "surrogateescape");
}

/* The property names clients and brokers set on most messages, interned once (at module
 * init): a name among them is not made anew (nor hashed) for each message. */
static const char *const USUAL_NAMES[] = {  /* the first three: KEYS, TAGS, UNIQ_KEY below */
    "KEYS", "TAGS", "UNIQ_KEY", "WAIT", "CLUSTER", "DELAY", "MSG_REGION", "TRACE_ON",
    "MIN_OFFSET", "MAX_OFFSET", "REAL_TOPIC", "REAL_QID", "RETRY_TOPIC", "TRAN_MSG", "PGROUP",
};
#define USUAL_NAME_COUNT ((int)(sizeof(USUAL_NAMES) / sizeof(USUAL_NAMES[0])))
#define DELAY_NAME 5  /* USUAL_NAMES[DELAY_NAME] is "DELAY" */
static PyObject *USUAL_NAME[USUAL_NAME_COUNT];

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
static PyObject *
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

static PyObject *
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

/* h continued over n one-byte code units (Latin-1 text, ASCII bytes): Java's
 * String.hashCode step. */
static uint32_t
hash_bytes(uint32_t h, const unsigned char *p, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        h = 31 * h + p[i];
    return h;
}

/* h continued over the UTF-16 code units of text[start:end]. */
static uint32_t
hash_continued(uint32_t h, PyObject *text, Py_ssize_t start, Py_ssize_t end)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (kind == PyUnicode_1BYTE_KIND)
        return hash_bytes(h, (const Py_UCS1 *)data + start, end - start);
    for (Py_ssize_t i = start; i < end; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c > 0xFFFF) {
            c -= 0x10000;
            h = 31 * h + (0xD800 + (c >> 10));
            h = 31 * h + (0xDC00 + (c & 0x3FF));
        }
        else {
            h = 31 * h + c;
        }
    }
    return h;
}

static int
require_str(PyObject *value, const char *what)
{
    if (PyUnicode_Check(value))
        return 0;
    PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", what, Py_TYPE(value)->tp_name);
    return -1;
}

/* 0 when the arguments are right (ok), else -1 with TypeError saying what the function
 * takes (usage). */
static int
arguments_ok(int ok, const char *usage)
{
    if (ok)
        return 0;
    PyErr_SetString(PyExc_TypeError, usage);
    return -1;
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

PyDoc_STRVAR(java_string_hash_continued_doc,
"java_string_hash_continued(prefix_hash, text)\n\n"
"rmqproto.codec.javalang.java_string_hash_continued.");

static PyObject *
java_string_hash_continued(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 2, "java_string_hash_continued takes prefix_hash and text") < 0)
        return NULL;
    if (!PyLong_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "prefix_hash must be an int");
        return NULL;
    }
    PyObject *text = args[1];
    if (require_str(text, "text") < 0)
        return NULL;
    /* h = prefix, then h = 31 h + unit for each UTF-16 code unit: prefix * 31**n + hash */
    uint32_t h = (uint32_t)PyLong_AsUnsignedLongLongMask(args[0]);
    if (h == (uint32_t)-1 && PyErr_Occurred())
        return NULL;
    h = hash_continued(h, text, 0, PyUnicode_GET_LENGTH(text));
    return PyLong_FromLong((int32_t)h);
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

/* UtilAll.crc32: the CRC32 of n bytes at p with the top bit cleared. */
static int64_t
masked_crc32(const unsigned char *p, Py_ssize_t n)
{
    return rmq_crc32(0, p, (size_t)n) & 0x7FFFFFFF;
}

/* Where the parts of a usual record are. */
typedef struct {
    Py_ssize_t total, topic_pos, topic_length, properties_pos, properties_length;
    int64_t sys_flag;
} RecordLayout;

/* Whether buffer[pos:] starts with a usual record (version-1 magic code, IPv4 hosts, every
 * check of the layout passing; with check_crc, the body's masked CRC32 too), and if so
 * where its parts are. */
static int
usual_record_layout(const unsigned char *buffer, Py_ssize_t size, Py_ssize_t pos,
                    int check_crc, RecordLayout *layout)
{
    const unsigned char *r = buffer + pos;
    int64_t total = read_int(r);
    int64_t sys_flag = read_int(r + 36);
    int64_t body_length = read_int(r + 84);
    int64_t end = pos + total;
    int64_t topic_pos = pos + FIXED_V1 + body_length + 1;  /* after the topic's length byte */
    if (read_int(r + 4) != MESSAGE_MAGIC_CODE || total < MIN_RECORD_LENGTH || end > size
            || (sys_flag & HOST_FLAGS) || body_length < 0 || topic_pos > end)
        return 0;
    int64_t topic_length = buffer[topic_pos - 1];
    int64_t properties_pos = topic_pos + topic_length + 2;
    int64_t properties_length = end - properties_pos;
    if (topic_length > MAX_TOPIC_LENGTH_V1 || properties_length < 0
            || properties_length > MAX_PROPERTIES_LENGTH
            || buffer[properties_pos - 2] != (properties_length >> 8)
            || buffer[properties_pos - 1] != (properties_length & 0xFF))
        return 0;
    if (check_crc && masked_crc32(r + FIXED_V1, body_length) != read_int(r + 8))
        return 0;
    *layout = (RecordLayout){total, topic_pos, topic_length, properties_pos, properties_length,
                             sys_flag};
    return 1;
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
    PyObject *text = decode_text(buffer + at.properties_pos, at.properties_length);
    PyObject *properties = text == NULL ? NULL : properties_of_text(text);
    Py_XDECREF(text);
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
    Py_ssize_t pos, stop_at, max_count;
    if ((pos = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred())
        return NULL;
    if ((stop_at = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred())
        return NULL;
    if ((max_count = PyLong_AsSsize_t(args[3])) == -1 && PyErr_Occurred())
        return NULL;
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

static void
write_int(unsigned char *p, int32_t value)
{
    uint32_t v = (uint32_t)value;
    p[0] = v >> 24;
    p[1] = v >> 16;
    p[2] = v >> 8;
    p[3] = v;
}

static void
write_long(unsigned char *p, int64_t value)
{
    write_int(p, (int32_t)((uint64_t)value >> 32));
    write_int(p + 4, (int32_t)value);
}

/* The int64 value of an int object; 0 with *ok cleared for anything else. */
static int64_t
as_long(PyObject *value, int *ok)
{
    int overflow = 0;
    long long v = PyLong_Check(value) ? PyLong_AsLongLongAndOverflow(value, &overflow) : 0;
    if (!PyLong_Check(value) || overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        *ok = 0;
    }
    return v;
}

PyDoc_STRVAR(put_index_hashes_doc,
"put_index_hashes(buffer, entries, start, index_num, slot_num, count, slot_count,\n"
"                 begin_timestamp, begin_phy_offset)\n"
"    -> (next, count, slot_count, begin_timestamp, begin_phy_offset)\n\n"
"The loop of rmqproto.codec.indexfile.IndexFile.put_hashes over the writable index file\n"
"buffer: put each (hash_code, phy_offset, store_timestamp) of entries (a list or tuple,\n"
"or a bytes-like object of entries packed as PackedEntries packs them) from start on\n"
"while count < index_num.  It stops before an entry it cannot put as the Python loop\n"
"would (not a tuple of three ints, a hash outside int32, an offset or timestamp outside\n"
"a Java long, a position outside the buffer), leaving that entry to the caller.  The\n"
"header is left to the caller.");

#define PACKED_ENTRY_SIZE 20

/* Entry i of a list or tuple of entries, or of packed entries when packed is not NULL:
 * 0 when it is not one C can put (not a tuple of three ints, a hash outside int32). */
static int
index_entry_at(PyObject *entries, const unsigned char *packed, Py_ssize_t i,
               int64_t *key_hash, int64_t *phy_offset, int64_t *timestamp)
{
    if (packed != NULL) {
        const unsigned char *p = packed + i * PACKED_ENTRY_SIZE;
        *key_hash = read_int(p);
        *phy_offset = read_long(p + 4);
        *timestamp = read_long(p + 12);
        return 1;
    }
    PyObject *entry = PySequence_Fast_GET_ITEM(entries, i);
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3)
        return 0;
    int ok = 1;
    *key_hash = as_long(PyTuple_GET_ITEM(entry, 0), &ok);
    *phy_offset = as_long(PyTuple_GET_ITEM(entry, 1), &ok);
    *timestamp = as_long(PyTuple_GET_ITEM(entry, 2), &ok);
    return ok && *key_hash >= INT32_MIN && *key_hash <= INT32_MAX;
}

static PyObject *
put_index_hashes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 9, "put_index_hashes takes buffer, entries, start, index_num, "
                     "slot_num, count, slot_count, begin_timestamp and begin_phy_offset") < 0)
        return NULL;
    PyObject *entries = args[1];
    long long numbers[7];  /* start, index_num, slot_num, count, slot_count, begin times */
    for (int k = 0; k < 7; k++) {
        if ((numbers[k] = PyLong_AsLongLong(args[k + 2])) == -1 && PyErr_Occurred())
            return NULL;
    }
    Py_ssize_t i = (Py_ssize_t)numbers[0];
    long long index_num = numbers[1], slot_num = numbers[2], count = numbers[3];
    long long slot_count = numbers[4], begin_timestamp = numbers[5];
    long long begin_phy_offset = numbers[6];
    if (i < 0) {
        PyErr_SetString(PyExc_ValueError, "start must not be negative");
        return NULL;
    }
    Py_buffer packed = {.buf = NULL};
    Py_ssize_t end;
    if (PyList_Check(entries) || PyTuple_Check(entries))
        end = PySequence_Fast_GET_SIZE(entries);
    else if (PyObject_GetBuffer(entries, &packed, PyBUF_SIMPLE) == 0)
        end = packed.len / PACKED_ENTRY_SIZE;
    else
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE) < 0) {
        if (packed.buf != NULL)
            PyBuffer_Release(&packed);
        return NULL;
    }
    unsigned char *buffer = view.buf;
    long long size = view.len;
    long long entries_at = INDEX_HEADER_SIZE + slot_num * HASH_SLOT_SIZE;
    for (; i < end && count < index_num && slot_num > 0; i++) {
        int64_t key_hash, phy_offset, timestamp;
        if (!index_entry_at(entries, packed.buf, i, &key_hash, &phy_offset, &timestamp))
            break;
        if (key_hash < 0)  /* Math.abs, and 0 for Integer.MIN_VALUE */
            key_hash = key_hash == INT32_MIN ? 0 : -key_hash;
        long long slot_pos = INDEX_HEADER_SIZE + (key_hash % slot_num) * HASH_SLOT_SIZE;
        long long entry_pos = entries_at + count * INDEX_SIZE;
        if (count < 0 || slot_pos + HASH_SLOT_SIZE > size || entry_pos + INDEX_SIZE > size)
            break;
        int32_t slot_value = read_int(buffer + slot_pos);
        if (slot_value <= 0 || slot_value > count) {
            slot_value = 0;
            slot_count++;
        }
        int32_t time_diff = 0;
        if (begin_timestamp > 0 && timestamp >= begin_timestamp) {
            uint64_t seconds = ((uint64_t)timestamp - (uint64_t)begin_timestamp) / 1000;
            time_diff = seconds > INT32_MAX ? INT32_MAX : (int32_t)seconds;
        }
        unsigned char *p = buffer + entry_pos;
        write_int(p, (int32_t)key_hash);
        write_long(p + 4, phy_offset);
        write_int(p + 12, time_diff);
        write_int(p + 16, slot_value);
        write_int(buffer + slot_pos, (int32_t)count);
        if (count <= 1) {
            begin_phy_offset = phy_offset;
            begin_timestamp = timestamp;
        }
        count++;
    }
    PyBuffer_Release(&view);
    if (packed.buf != NULL)
        PyBuffer_Release(&packed);
    return Py_BuildValue("(nLLLL)", i, count, slot_count, begin_timestamp, begin_phy_offset);
}

/* Property names the dispatch reads (interned with the usual names at module init). */
static PyObject *TAGS, *KEYS, *UNIQ_KEY, *EMPTY;

PyDoc_STRVAR(requests_of_fields_doc,
"requests_of_fields(fields, schedule_topic, schedule_tags_code)\n\n"
"rmqproto.store.dispatch.requests_of_fields: the request tuple of each fields tuple, the\n"
"tags code the TAGS hash; for records of schedule_topic it is\n"
"schedule_tags_code(topic, properties, store_timestamp).");

static PyObject *
requests_of_fields(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 3, "requests_of_fields takes fields, schedule_topic and "
                     "schedule_tags_code") < 0)
        return NULL;
    PyObject *fields = PySequence_Fast(args[0], "fields must be iterable");
    if (fields == NULL)
        return NULL;
    PyObject *schedule_topic = args[1], *schedule_tags_code = args[2];
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fields);
    PyObject *requests = PyList_New(n);
    if (requests == NULL)
        goto failed;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fields, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 9
                || !PyDict_Check(PyTuple_GET_ITEM(item, 7))) {
            PyErr_SetString(PyExc_TypeError, "a fields tuple has nine items, the eighth a dict");
            goto failed;
        }
        PyObject *topic = PyTuple_GET_ITEM(item, 0);
        PyObject *properties = PyTuple_GET_ITEM(item, 7);
        PyObject *store_timestamp = PyTuple_GET_ITEM(item, 5);
        PyObject *tags_code;
        int scheduled = PyObject_RichCompareBool(topic, schedule_topic, Py_EQ);
        if (scheduled < 0)
            goto failed;
        if (scheduled) {
            tags_code = PyObject_CallFunctionObjArgs(schedule_tags_code, topic, properties,
                                                     store_timestamp, NULL);
        }
        else {
            PyObject *tags = PyDict_GetItemWithError(properties, TAGS);
            if (tags == NULL && PyErr_Occurred())
                goto failed;
            if (tags != NULL && require_str(tags, "TAGS") < 0)
                goto failed;
            uint32_t h = tags == NULL ? 0 : hash_continued(0, tags, 0, PyUnicode_GET_LENGTH(tags));
            tags_code = PyLong_FromLong((int32_t)h);
        }
        if (tags_code == NULL)
            goto failed;
        PyObject *keys = PyDict_GetItemWithError(properties, KEYS);
        if (keys == NULL && PyErr_Occurred()) {
            Py_DECREF(tags_code);
            goto failed;
        }
        PyObject *uniq_key = PyDict_GetItemWithError(properties, UNIQ_KEY);
        if (uniq_key == NULL && PyErr_Occurred()) {
            Py_DECREF(tags_code);
            goto failed;
        }
        PyObject *request = PyTuple_Pack(
            12, topic, PyTuple_GET_ITEM(item, 1), PyTuple_GET_ITEM(item, 3),
            PyTuple_GET_ITEM(item, 8), tags_code, store_timestamp, PyTuple_GET_ITEM(item, 2),
            keys == NULL ? EMPTY : keys, uniq_key == NULL ? Py_None : uniq_key,
            PyTuple_GET_ITEM(item, 4), PyTuple_GET_ITEM(item, 6), properties);
        Py_DECREF(tags_code);
        if (request == NULL)
            goto failed;
        PyList_SET_ITEM(requests, i, request);
    }
    Py_DECREF(fields);
    return requests;
failed:
    Py_DECREF(fields);
    Py_XDECREF(requests);
    return NULL;
}

/* Item i of the fast sequence of requests, checked to be a request tuple (twelve items in
 * DispatchRequest order); NULL with TypeError set otherwise. */
static PyObject *
request_at(PyObject *requests, Py_ssize_t i)
{
    PyObject *item = PySequence_Fast_GET_ITEM(requests, i);
    if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 12)
        return item;
    PyErr_SetString(PyExc_TypeError, "a request tuple has twelve items");
    return NULL;
}

/* Append (hash, offset, timestamp) to entries; -1 on error. */
static int
append_entry(PyObject *entries, uint32_t h, PyObject *offset, PyObject *timestamp)
{
    PyObject *hash = PyLong_FromLong((int32_t)h);
    if (hash == NULL)
        return -1;
    PyObject *entry = PyTuple_Pack(3, hash, offset, timestamp);
    Py_DECREF(hash);
    if (entry == NULL)
        return -1;
    int failed = PyList_Append(entries, entry);
    Py_DECREF(entry);
    return failed;
}

PyDoc_STRVAR(index_entries_doc,
"index_entries(requests, newest_end_phy_offset, rollback_type) -> (entries, rolls)\n\n"
"The loop of rmqproto.store.indexservice.index_entries.");

static PyObject *
index_entries(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 3, "index_entries takes requests, newest_end_phy_offset and "
                     "rollback_type") < 0)
        return NULL;
    long rollback = PyLong_AsLong(args[2]);
    if (rollback == -1 && PyErr_Occurred())
        return NULL;
    PyObject *requests = PySequence_Fast(args[0], "requests must be iterable");
    if (requests == NULL)
        return NULL;
    PyObject *entries = PyList_New(0);
    PyObject *end_object = NULL, *topic = NULL;
    uint32_t prefix = 0;
    int rolls = 0;
    if (entries == NULL)
        goto failed;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(requests);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = request_at(requests, i);
        if (item == NULL)
            goto failed;
        PyObject *words = PyTuple_GET_ITEM(item, 7), *uniq_key = PyTuple_GET_ITEM(item, 8);
        int has_uniq = PyObject_IsTrue(uniq_key), has_words = PyObject_IsTrue(words);
        if (has_uniq < 0 || has_words < 0)
            goto failed;
        if (!has_uniq && !has_words)
            continue;
        if (end_object == NULL) {  /* the newest file, found at the first request with keys */
            end_object = PyObject_CallNoArgs(args[1]);
            if (end_object == NULL)
                goto failed;
        }
        rolls = 1;
        PyObject *offset = PyTuple_GET_ITEM(item, 2), *timestamp = PyTuple_GET_ITEM(item, 5);
        int before = PyObject_RichCompareBool(offset, end_object, Py_LT);
        if (before < 0)
            goto failed;
        long sys_flag = PyLong_AsLong(PyTuple_GET_ITEM(item, 9));
        if (sys_flag == -1 && PyErr_Occurred())
            goto failed;
        if (before || (sys_flag & rollback) == rollback)
            continue;
        PyObject *request_topic = PyTuple_GET_ITEM(item, 0);
        if (topic == NULL || (request_topic != topic
                              && PyUnicode_Compare(request_topic, topic) != 0)) {
            if (require_str(request_topic, "topic") < 0)
                goto failed;
            Py_XSETREF(topic, Py_NewRef(request_topic));
            prefix = 31 * hash_continued(0, topic, 0, PyUnicode_GET_LENGTH(topic)) + '#';
        }
        Py_ssize_t count = PyList_GET_SIZE(entries);
        if (has_uniq) {
            if (require_str(uniq_key, "UNIQ_KEY") < 0
                    || append_entry(entries, hash_continued(prefix, uniq_key, 0,
                                                            PyUnicode_GET_LENGTH(uniq_key)),
                                    offset, timestamp) < 0)
                goto failed;
        }
        if (has_words) {
            if (require_str(words, "KEYS") < 0)
                goto failed;
            int kind = PyUnicode_KIND(words);
            const void *data = PyUnicode_DATA(words);
            Py_ssize_t length = PyUnicode_GET_LENGTH(words), start = 0;
            for (Py_ssize_t j = 0; j <= length; j++) {
                if (j < length && PyUnicode_READ(kind, data, j) != ' ')
                    continue;
                if (j > start && append_entry(entries, hash_continued(prefix, words, start, j),
                                              offset, timestamp) < 0)
                    goto failed;
                start = j + 1;
            }
        }
        if (PyList_GET_SIZE(entries) > count) {
            Py_SETREF(end_object, Py_NewRef(offset));
            rolls = 0;
        }
    }
    Py_DECREF(requests);
    Py_XDECREF(end_object);
    Py_XDECREF(topic);
    return Py_BuildValue("(NO)", entries, rolls ? Py_True : Py_False);
failed:
    Py_DECREF(requests);
    Py_XDECREF(entries);
    Py_XDECREF(end_object);
    Py_XDECREF(topic);
    return NULL;
}

#define TRANSACTION_BITS 0xC
#define TRANSACTION_PREPARED_TYPE 0x4

PyDoc_STRVAR(consume_queue_runs_doc,
"consume_queue_runs(requests) -> (runs, store_timestamp)\n\n"
"rmqproto.store.dispatch.consume_queue_runs.");

static PyObject *
consume_queue_runs(PyObject *module, PyObject *requests_arg)
{
    PyObject *requests = PySequence_Fast(requests_arg, "requests must be iterable");
    if (requests == NULL)
        return NULL;
    PyObject *runs = PyDict_New(), *key = NULL, *store_timestamp = Py_None;
    PyObject *last_topic = NULL, *last_queue_id = NULL, *last_units = NULL;
    if (runs == NULL)
        goto failed;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(requests);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = request_at(requests, i);
        if (item == NULL)
            goto failed;
        long sys_flag = PyLong_AsLong(PyTuple_GET_ITEM(item, 9));
        if (sys_flag == -1 && PyErr_Occurred())
            goto failed;
        long transaction = sys_flag & TRANSACTION_BITS;
        if (transaction == TRANSACTION_PREPARED_TYPE || transaction == TRANSACTION_BITS)
            continue;  /* prepared or rolled back: not consumable */
        PyObject *topic = PyTuple_GET_ITEM(item, 0), *queue_id = PyTuple_GET_ITEM(item, 1);
        PyObject *units = last_units;
        if (topic != last_topic || queue_id != last_queue_id) {  /* the usual run: same objects */
            key = PyTuple_Pack(2, topic, queue_id);
            if (key == NULL)
                goto failed;
            units = PyDict_GetItemWithError(runs, key);
            if (units == NULL) {
                if (PyErr_Occurred() || (units = PyList_New(0)) == NULL
                        || PyDict_SetItem(runs, key, units) < 0) {
                    Py_XDECREF(units);
                    goto failed;
                }
                Py_DECREF(units);  /* the dict holds it */
            }
            Py_CLEAR(key);
            last_topic = topic;
            last_queue_id = queue_id;
            last_units = units;
        }
        PyObject *unit = PyTuple_Pack(4, PyTuple_GET_ITEM(item, 2), PyTuple_GET_ITEM(item, 3),
                                      PyTuple_GET_ITEM(item, 4), PyTuple_GET_ITEM(item, 6));
        if (unit == NULL)
            goto failed;
        int appended = PyList_Append(units, unit);
        Py_DECREF(unit);
        if (appended < 0)
            goto failed;
        store_timestamp = PyTuple_GET_ITEM(item, 5);
    }
    Py_DECREF(requests);
    return Py_BuildValue("(NO)", runs, store_timestamp);
failed:
    Py_DECREF(requests);
    Py_XDECREF(runs);
    Py_XDECREF(key);
    return NULL;
}

/* ---- the reput of usual records, straight from the commit log's bytes ---- */

/* Most queues one call of dispatch_usual_records gathers units for, and most records it
 * takes. */
#define MAX_DISPATCH_QUEUES 64
#define MAX_DISPATCH_RECORDS 65536
#define CQ_UNIT_SIZE 20

/* Bytes of a record: a property's value (never empty when present), a topic. */
typedef struct {
    const unsigned char *p;
    Py_ssize_t length;
} Span;

/* The units one call gathers for one queue, their logical offsets one after another. */
typedef struct {
    Span topic;
    int32_t queue_id;
    int64_t first_cq_offset, next_cq_offset;
    Py_ssize_t count;
} QueueRun;

/* A growing buffer of packed index entries. */
typedef struct {
    unsigned char *data;
    Py_ssize_t length, capacity;
} PackedOut;

static int
all_ascii(Span span)
{
    unsigned char any = 0;
    for (Py_ssize_t i = 0; i < span.length; i++)
        any |= span.p[i];
    return any < 0x80;
}

static int
same_span(Span a, Span b)
{
    return a.length == b.length && memcmp(a.p, b.p, a.length) == 0;
}

/* The TAGS, KEYS and UNIQ_KEY values among the properties bytes p[:n], as
 * properties_of_text reads them (a repeated name keeps its last value; absent: length 0);
 * 0 when one of them is not ASCII (the record is then left to the Python path). */
static int
dispatch_properties(const unsigned char *p, Py_ssize_t n, Span *tags, Span *keys, Span *uniq)
{
    *tags = *keys = *uniq = (Span){NULL, 0};
    Py_ssize_t start = 0;
    while (start < n) {
        Py_ssize_t end = start, eq = -1;
        for (; end < n && p[end] != PROPERTY_SEPARATOR; end++) {
            if (p[end] == NAME_VALUE_SEPARATOR && eq < 0)
                eq = end;
        }
        if (eq > start && end > eq + 1) {
            Span name = {p + start, eq - start}, value = {p + eq + 1, end - eq - 1};
            if (same_span(name, (Span){(const unsigned char *)"TAGS", 4}))
                *tags = value;
            else if (same_span(name, (Span){(const unsigned char *)"KEYS", 4}))
                *keys = value;
            else if (same_span(name, (Span){(const unsigned char *)"UNIQ_KEY", 8}))
                *uniq = value;
        }
        start = end + 1;
    }
    return all_ascii(*tags) && all_ascii(*keys) && all_ascii(*uniq);
}

/* Append one packed entry; -1 with MemoryError set when out of memory. */
static int
pack_entry(PackedOut *out, uint32_t h, int64_t offset, int64_t timestamp)
{
    if (out->length + PACKED_ENTRY_SIZE > out->capacity) {
        Py_ssize_t capacity = out->capacity ? 2 * out->capacity : 64 * PACKED_ENTRY_SIZE;
        unsigned char *data = PyMem_Realloc(out->data, capacity);
        if (data == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        out->data = data;
        out->capacity = capacity;
    }
    unsigned char *p = out->data + out->length;
    write_int(p, (int32_t)h);
    write_long(p + 4, offset);
    write_long(p + 12, timestamp);
    out->length += PACKED_ENTRY_SIZE;
    return 0;
}

/* The index entries of one record, as index_entries makes them: its UNIQ_KEY, then each
 * KEYS word (split on spaces), hashed as "topic#key" from the topic's prefix hash. */
static int
pack_record_entries(PackedOut *out, uint32_t prefix, Span uniq, Span keys, int64_t offset,
                    int64_t timestamp)
{
    if (uniq.length && pack_entry(out, hash_bytes(prefix, uniq.p, uniq.length), offset,
                                  timestamp) < 0)
        return -1;
    Py_ssize_t start = 0;
    for (Py_ssize_t j = 0; j <= keys.length; j++) {
        if (j < keys.length && keys.p[j] != ' ')
            continue;
        if (j > start && pack_entry(out, hash_bytes(prefix, keys.p + start, j - start),
                                    offset, timestamp) < 0)
            return -1;
        start = j + 1;
    }
    return 0;
}

/* The runs as (topic, queue_id, first_cq_offset, units) tuples, units the packed 20-byte
 * units of the run in order (units holds all of them, queue_of says whose each is). */
static PyObject *
queue_run_tuples(const QueueRun *runs, int run_count, const unsigned char *units,
                 const unsigned char *queue_of, Py_ssize_t unit_count)
{
    PyObject *out = PyList_New(run_count);
    for (int q = 0; out != NULL && q < run_count; q++) {
        PyObject *data = PyBytes_FromStringAndSize(NULL, runs[q].count * CQ_UNIT_SIZE);
        PyObject *topic = data == NULL ? NULL : decode_text(runs[q].topic.p,
                                                            runs[q].topic.length);
        if (topic == NULL) {
            Py_XDECREF(data);
            Py_CLEAR(out);
            break;
        }
        unsigned char *p = (unsigned char *)PyBytes_AS_STRING(data);
        for (Py_ssize_t i = 0; i < unit_count; i++) {
            if (queue_of[i] == q) {
                memcpy(p, units + i * CQ_UNIT_SIZE, CQ_UNIT_SIZE);
                p += CQ_UNIT_SIZE;
            }
        }
        PyList_SET_ITEM(out, q, Py_BuildValue("(NiLN)", topic, runs[q].queue_id,
                                              (long long)runs[q].first_cq_offset, data));
        if (PyList_GET_ITEM(out, q) == NULL)
            Py_CLEAR(out);
    }
    return out;
}

PyDoc_STRVAR(dispatch_usual_records_doc,
"dispatch_usual_records(buffer, position, stop_at, max_count, schedule_topic,\n"
"                       newest_end_phy_offset, rollback_type)\n"
"    -> (position, runs, entries, rolls, store_timestamp)\n\n"
"What the reput makes of the records take_usual_records would take from position on\n"
"(requests_of_fields, consume_queue_runs and, unless newest_end_phy_offset is None,\n"
"rmqproto.store.indexservice.index_entries), made straight from the bytes with no Python\n"
"object a record.  runs: (topic, queue_id, first_cq_offset, units) for each queue in the\n"
"order first seen, units its 20-byte consume-queue units packed back to back; entries:\n"
"the index entries packed as PackedEntries packs them; rolls and store_timestamp as\n"
"index_entries and consume_queue_runs give them.  It takes at most max_count records\n"
"(65536 at most) and stops before a record that is not a usual one, is of schedule_topic\n"
"(bytes) or has a topic, TAGS, KEYS or UNIQ_KEY that is not ASCII, whose consumable\n"
"unit does not follow its queue's last one of this call or would be the unit of a queue\n"
"beyond the 64th: the caller takes that record its own way.");

static PyObject *
dispatch_usual_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 7 && PyBytes_Check(args[4]), "dispatch_usual_records takes "
                     "buffer, position, stop_at, max_count, schedule_topic (bytes), "
                     "newest_end_phy_offset and rollback_type") < 0)
        return NULL;
    Py_ssize_t pos, stop_at, max_count;
    long rollback;
    if (((pos = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred())
            || ((stop_at = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred())
            || ((max_count = PyLong_AsSsize_t(args[3])) == -1 && PyErr_Occurred())
            || ((rollback = PyLong_AsLong(args[6])) == -1 && PyErr_Occurred()))
        return NULL;
    max_count = Py_MAX(0, Py_MIN(max_count, MAX_DISPATCH_RECORDS));
    Span schedule = {(const unsigned char *)PyBytes_AS_STRING(args[4]),
                     PyBytes_GET_SIZE(args[4])};
    PyObject *newest_end = args[5] == Py_None ? NULL : args[5];
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *buffer = view.buf;
    Py_ssize_t size = view.len;
    unsigned char *units = PyMem_Malloc(max_count * CQ_UNIT_SIZE + 1);
    unsigned char *queue_of = PyMem_Malloc(max_count + 1);
    PackedOut entries = {NULL, 0, 0};
    PyObject *result = NULL;
    if (units == NULL || queue_of == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    QueueRun runs[MAX_DISPATCH_QUEUES];
    int run_count = 0, last_run = -1, rolls = 0, have_end = 0, timestamped = 0;
    int64_t end_phy_offset = 0, store_timestamp = 0;
    Span prefix_topic = {NULL, -1};
    uint32_t prefix = 0;
    Py_ssize_t unit_count = 0, taken = 0;
    while (pos >= 0 && pos < stop_at && size - pos >= FIXED_V1 && taken < max_count) {
        RecordLayout at;
        Span tags, keys, uniq;
        if (!usual_record_layout(buffer, size, pos, 0, &at))
            break;
        Span topic = {buffer + at.topic_pos, at.topic_length};
        if (same_span(topic, schedule) || !all_ascii(topic)
                || !dispatch_properties(buffer + at.properties_pos, at.properties_length,
                                        &tags, &keys, &uniq))
            break;
        const unsigned char *r = buffer + pos;
        int32_t queue_id = read_int(r + 12);
        int64_t cq_offset = read_long(r + 20), offset = read_long(r + 28);
        int64_t timestamp = read_long(r + 56);
        int64_t transaction = at.sys_flag & TRANSACTION_BITS;
        int consumable = transaction != TRANSACTION_PREPARED_TYPE
                         && transaction != TRANSACTION_BITS;
        int q = -1;
        if (consumable) {
            if (last_run >= 0 && runs[last_run].queue_id == queue_id
                    && same_span(runs[last_run].topic, topic))
                q = last_run;
            for (int k = 0; q < 0 && k < run_count; k++) {
                if (runs[k].queue_id == queue_id && same_span(runs[k].topic, topic))
                    q = k;
            }
            if (q < 0 ? run_count == MAX_DISPATCH_QUEUES
                      : runs[q].next_cq_offset != cq_offset || cq_offset == INT64_MAX)
                break;
        }
        if (newest_end != NULL && (uniq.length || keys.length)) {
            if (!have_end) {  /* the newest file, found at the first record with keys */
                PyObject *value = PyObject_CallNoArgs(newest_end);
                if (value == NULL)
                    goto done;
                int ok = 1;
                end_phy_offset = as_long(value, &ok);
                Py_DECREF(value);
                if (!ok) {
                    PyErr_SetString(PyExc_TypeError,
                                    "newest_end_phy_offset must return a Java long");
                    goto done;
                }
                have_end = 1;
            }
            rolls = 1;
            if (offset >= end_phy_offset && (at.sys_flag & rollback) != rollback) {
                if (!same_span(topic, prefix_topic)) {
                    prefix_topic = topic;
                    prefix = 31 * hash_bytes(0, topic.p, topic.length) + '#';
                }
                Py_ssize_t before = entries.length;
                if (pack_record_entries(&entries, prefix, uniq, keys, offset, timestamp) < 0)
                    goto done;
                if (entries.length > before) {
                    end_phy_offset = offset;
                    rolls = 0;
                }
            }
        }
        if (consumable) {
            if (q < 0) {
                q = run_count++;
                runs[q] = (QueueRun){topic, queue_id, cq_offset, cq_offset, 0};
            }
            unsigned char *p = units + unit_count * CQ_UNIT_SIZE;
            write_long(p, offset);
            write_int(p + 8, (int32_t)at.total);
            write_long(p + 12, (int32_t)(tags.length ? hash_bytes(0, tags.p, tags.length) : 0));
            queue_of[unit_count++] = (unsigned char)q;
            runs[q].next_cq_offset++;
            runs[q].count++;
            last_run = q;
            store_timestamp = timestamp;
            timestamped = 1;
        }
        taken++;
        pos += at.total;
    }
    PyObject *run_list = queue_run_tuples(runs, run_count, units, queue_of, unit_count);
    PyObject *packed = run_list == NULL ? NULL
        : PyBytes_FromStringAndSize((const char *)entries.data, entries.length);
    if (packed == NULL) {
        Py_XDECREF(run_list);
        goto done;
    }
    PyObject *last = timestamped ? PyLong_FromLongLong(store_timestamp) : Py_NewRef(Py_None);
    if (last == NULL) {
        Py_DECREF(run_list);
        Py_DECREF(packed);
        goto done;
    }
    result = Py_BuildValue("(nNNON)", pos, run_list, packed, rolls ? Py_True : Py_False, last);
done:
    PyMem_Free(units);
    PyMem_Free(queue_of);
    PyMem_Free(entries.data);
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(encode_units_doc,
"encode_units(units) -> bytes or None\n\n"
"rmqproto.codec.consumequeue.encode_units: the 20-byte consume-queue unit of the first\n"
"three items (offset, size, tags_code) of each tuple, back to back; None when one is not\n"
"such a tuple of ints in range (the caller then encodes them to say which).");

static PyObject *
encode_units(PyObject *module, PyObject *units_arg)
{
    PyObject *units = PySequence_Fast(units_arg, "units must be iterable");
    if (units == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(units);
    PyObject *data = PyBytes_FromStringAndSize(NULL, n * 20);
    if (data == NULL) {
        Py_DECREF(units);
        return NULL;
    }
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(data);
    for (Py_ssize_t i = 0; i < n; i++, p += 20) {
        PyObject *unit = PySequence_Fast_GET_ITEM(units, i);
        int ok = PyTuple_Check(unit) && PyTuple_GET_SIZE(unit) >= 3;
        int64_t offset = ok ? as_long(PyTuple_GET_ITEM(unit, 0), &ok) : 0;
        int64_t size = ok ? as_long(PyTuple_GET_ITEM(unit, 1), &ok) : 0;
        int64_t tags_code = ok ? as_long(PyTuple_GET_ITEM(unit, 2), &ok) : 0;
        if (!ok || size < INT32_MIN || size > INT32_MAX) {
            Py_DECREF(units);
            Py_DECREF(data);
            Py_RETURN_NONE;
        }
        write_long(p, offset);
        write_int(p + 8, (int32_t)size);
        write_long(p + 12, tags_code);
    }
    Py_DECREF(units);
    return data;
}

PyDoc_STRVAR(put_unit_run_doc,
"put_unit_run(buffer, position, file_from_offset, units, start, max_physic_offset)\n"
"    -> (end, end_physic_offset)\n\n"
"The usual step of rmqproto.store.consumequeue.ConsumeQueue.put_positions: the run of\n"
"units (offset, size, tags_code, cq_offset) from start on that continues the queue's last\n"
"file exactly (position, its write position, neither 0 nor the buffer's end; logical\n"
"offsets one after another from the file's end; commit-log ends growing past\n"
"max_physic_offset; as many as there is room for), written into the writable buffer of\n"
"that file.  Returns the index after the run and the commit-log end of its last unit.\n"
"When the run is empty or holds a unit that is not a tuple of four ints in range, or\n"
"max_physic_offset is beyond a Java long, nothing is written and end is start (the\n"
"caller then takes the step in Python).");

/* One unit of a run: its values, or 0 when it is not a tuple of four ints in range. */
static int
read_unit(PyObject *unit, int64_t values[4])
{
    if (!PyTuple_Check(unit) || PyTuple_GET_SIZE(unit) != 4)
        return 0;
    int ok = 1;
    for (int k = 0; k < 4; k++)
        values[k] = as_long(PyTuple_GET_ITEM(unit, k), &ok);
    return ok && values[1] >= INT32_MIN && values[1] <= INT32_MAX;
}

static PyObject *
put_unit_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 6 && (PyList_Check(args[3]) || PyTuple_Check(args[3])),
                     "put_unit_run takes buffer, position, file_from_offset, a list or tuple "
                     "of units, start and max_physic_offset") < 0)
        return NULL;
    int ok = 1;
    int64_t position = as_long(args[1], &ok);
    int64_t file_from_offset = as_long(args[2], &ok);
    int64_t start = as_long(args[4], &ok);
    if (!ok) {
        PyErr_SetString(PyExc_TypeError, "put_unit_run takes ints for its numbers");
        return NULL;
    }
    int64_t max_physic = as_long(args[5], &ok);
    if (!ok)  /* beyond a Java long: Python decides */
        return Py_BuildValue("(LO)", (long long)start, args[5]);
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE) < 0)
        return NULL;
    PyObject *units = args[3];
    Py_ssize_t count = PySequence_Fast_GET_SIZE(units);
    int64_t expect, end_physic = max_physic, values[4];
    Py_ssize_t end = start < 0 || start > count ? count : (Py_ssize_t)start;
    if (position <= 0 || position >= view.len
            || __builtin_add_overflow(file_from_offset, position, &expect))
        end = count;
    /* first pass: the run's extent, every unit of it checked before anything is written */
    Py_ssize_t first = end;
    for (int64_t room = position; end < count && room + 20 <= view.len; end++, room += 20) {
        int64_t unit_end, cq_position;
        if (!read_unit(PySequence_Fast_GET_ITEM(units, end), values)
                || __builtin_add_overflow(values[0], values[1], &unit_end)
                || __builtin_mul_overflow(values[3], 20, &cq_position)) {
            end = first;  /* Python decides about this run */
            break;
        }
        if (unit_end <= end_physic || cq_position != expect + (room - position))
            break;
        end_physic = unit_end;
    }
    if (end == first) {
        end = (Py_ssize_t)start;
        end_physic = max_physic;
    }
    unsigned char *p = (unsigned char *)view.buf + position;
    for (Py_ssize_t i = first; i < end; i++, p += 20) {
        read_unit(PySequence_Fast_GET_ITEM(units, i), values);
        write_long(p, values[0]);
        write_int(p + 8, (int32_t)values[1]);
        write_long(p + 12, values[2]);
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(nL)", end, (long long)end_physic);
}

/* ---- pulls: the unit loop of getMessage ---- */

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

/* A segment's file_from_offset in *from: 0, or -1 with an exception set. */
static int
segment_from(PyObject *file, int64_t *from)
{
    PyObject *value = PyObject_GetAttr(file, SEGMENT_FROM);
    if (value == NULL)
        return -1;
    int ok = 1;
    *from = as_long(value, &ok);
    Py_DECREF(value);
    if (!ok) {
        PyErr_SetString(PyExc_TypeError, "a segment's file_from_offset must be an int "
                        "within a Java long");
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
    if (segment_from(first, &first_from) < 0)
        goto error;
    wide_t index = (wide_t)floor_div(offset, file_size) - floor_div(first_from, file_size);
    for (Py_ssize_t i = -1; i < PyList_GET_SIZE(files); i++) {
        /* first the segment the offset's number points at, then each in turn */
        if (i < 0 && !(index >= 0 && index < PyList_GET_SIZE(files)))
            continue;
        PyObject *file = Py_NewRef(PyList_GET_ITEM(files, i < 0 ? (Py_ssize_t)index : i));
        if (segment_from(file, from) < 0) {
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
    PyObject *value = PyObject_GetAttr(file, SEGMENT_WROTE);
    if (value == NULL)
        return NULL;
    int ok = 1;
    int64_t wrote = as_long(value, &ok);
    Py_DECREF(value);
    if (!ok) {
        PyErr_SetString(PyExc_TypeError, "a segment's wrote_position must be an int "
                        "within a Java long");
        return NULL;
    }
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

/* ---- batches: the records of SEND_BATCH_MESSAGE, their checks and their encoding ---- */

/* The MessageRecord attributes the batch functions read and write, by index. */
enum {
    F_TOPIC, F_BODY, F_PROPERTIES, F_QUEUE_ID, F_FLAG, F_QUEUE_OFFSET, F_COMMIT_LOG_OFFSET,
    F_STORE_TIMESTAMP, F_SYS_FLAG, F_BORN_TIMESTAMP, F_BORN_HOST, F_STORE_HOST,
    F_RECONSUME_TIMES, F_PREPARED, F_BODY_CRC, F_MAGIC_CODE, F_STORE_SIZE,
    F_STORED_PROPERTIES, FIELD_COUNT
};
static const char *const FIELD_NAMES[FIELD_COUNT] = {
    "topic", "body", "properties", "queue_id", "flag", "queue_offset", "commit_log_offset",
    "store_timestamp", "sys_flag", "born_timestamp", "born_host", "store_host",
    "reconsume_times", "prepared_transaction_offset", "body_crc", "magic_code", "_store_size",
    "stored_properties",
};
static PyObject *FIELD[FIELD_COUNT];
/* MESSAGE_MAGIC_CODE as an int. */
static PyObject *MAGIC_CODE_V1, *EMPTY_TUPLE;

#define TRANSACTION_ROLLBACK_TYPE 0xC
#define BORNHOST_V6_FLAG 0x10
#define STOREHOSTADDRESS_V6_FLAG 0x20
#define BATCH_HEAD 20
#define COUNT(array) ((int)(sizeof(array) / sizeof((array)[0])))

/* What a batch record takes from the prototype, and what it starts at 0. */
static const int PROTOTYPE_FIELDS[] = {F_TOPIC, F_QUEUE_ID, F_SYS_FLAG, F_BORN_TIMESTAMP,
                                       F_BORN_HOST, F_STORE_HOST, F_RECONSUME_TIMES,
                                       F_MAGIC_CODE};
static const int ALL_FIELDS[FIELD_COUNT] = {
    F_TOPIC, F_BODY, F_PROPERTIES, F_QUEUE_ID, F_FLAG, F_QUEUE_OFFSET, F_COMMIT_LOG_OFFSET,
    F_STORE_TIMESTAMP, F_SYS_FLAG, F_BORN_TIMESTAMP, F_BORN_HOST, F_STORE_HOST,
    F_RECONSUME_TIMES, F_PREPARED, F_BODY_CRC, F_MAGIC_CODE, F_STORE_SIZE,
    F_STORED_PROPERTIES};
static const int ZERO_FIELDS[] = {F_QUEUE_OFFSET, F_COMMIT_LOG_OFFSET, F_STORE_TIMESTAMP,
                                  F_PREPARED, F_BODY_CRC};

/* ---- record fields straight from their __slots__ ----
 * The FIELD slots of a record type (its member descriptors' offsets) are found once and
 * used while the type's version tag says it has not changed since, as the interpreter's
 * own attribute caches do. A field that is not a writable object slot of the type, and
 * every type once the table is full, goes through getattr and setattr. */
#define RECORD_TYPES 4
typedef struct {
    PyTypeObject *type;              /* a strong reference; NULL: a free entry */
    unsigned int version;
    Py_ssize_t offset[FIELD_COUNT];  /* 0: not a slot (getattr and setattr) */
} RecordSlots;
static RecordSlots RECORD_SLOTS[RECORD_TYPES];

/* Whether type has not changed since its version tag was version. */
static int
version_current(PyTypeObject *type, unsigned int version)
{
#ifdef Py_TPFLAGS_VALID_VERSION_TAG
    if (!PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG))
        return 0;
#endif
    return version != 0 && type->tp_version_tag == version;
}

/* The offset of the writable object slot that descriptor (type's attribute) is, or 0. */
static Py_ssize_t
slot_offset(PyTypeObject *type, PyObject *descriptor)
{
    if (descriptor == NULL || !Py_IS_TYPE(descriptor, &PyMemberDescr_Type)
            || !PyType_IsSubtype(type, PyDescr_TYPE(descriptor)))
        return 0;
    PyMemberDef *member = ((PyMemberDescrObject *)descriptor)->d_member;
    return member->type == T_OBJECT_EX && !(member->flags & READONLY) ? member->offset : 0;
}

/* The entry record_slots found last: a batch's records share their type. */
static RecordSlots *LAST_SLOTS;

/* record_slots past the last entry found. */
static const RecordSlots *
find_record_slots(PyTypeObject *type)
{
    RecordSlots *entry = NULL;
    for (int i = 0; i < RECORD_TYPES; i++) {
        if (RECORD_SLOTS[i].type == type) {
            if (version_current(type, RECORD_SLOTS[i].version))
                return LAST_SLOTS = &RECORD_SLOTS[i];
            entry = &RECORD_SLOTS[i];
            break;
        }
        if (RECORD_SLOTS[i].type == NULL && entry == NULL)
            entry = &RECORD_SLOTS[i];
    }
    if (entry == NULL || type->tp_getattro != PyObject_GenericGetAttr
            || type->tp_setattro != PyObject_GenericSetAttr)
        return NULL;
    for (int f = 0; f < FIELD_COUNT; f++)  /* a lookup also gives the type its tag */
        entry->offset[f] = slot_offset(type, _PyType_Lookup(type, FIELD[f]));
    unsigned int version = type->tp_version_tag;
    if (!version_current(type, version))
        return NULL;
    if (entry->type == NULL)
        entry->type = (PyTypeObject *)Py_NewRef(type);
    entry->version = version;
    return LAST_SLOTS = entry;
}

/* The FIELD slots of type, found now unless known and current; NULL for a type whose
 * attributes are not looked up the generic way, or when the table is full. */
static inline const RecordSlots *
record_slots(PyTypeObject *type)
{
    if (LAST_SLOTS != NULL && LAST_SLOTS->type == type
            && version_current(type, LAST_SLOTS->version))
        return LAST_SLOTS;
    return find_record_slots(type);
}

/* The slot of record's field f, or NULL to go through getattr and setattr. */
static inline PyObject **
field_slot(PyObject *record, int f)
{
    const RecordSlots *slots = record_slots(Py_TYPE(record));
    if (slots == NULL || slots->offset[f] == 0)
        return NULL;
    return (PyObject **)((char *)record + slots->offset[f]);
}

/* record.<field f>: a new reference, or NULL with an error set. */
static inline PyObject *
get_field(PyObject *record, int f)
{
    PyObject **slot = field_slot(record, f);
    if (slot != NULL && *slot != NULL)
        return Py_NewRef(*slot);
    return PyObject_GetAttr(record, FIELD[f]);  /* AttributeError for an empty slot */
}

/* record.<field f> = value: 0, or -1 with an error set. */
static inline int
set_field(PyObject *record, int f, PyObject *value)
{
    PyObject **slot = field_slot(record, f);
    if (slot == NULL)
        return PyObject_SetAttr(record, FIELD[f], value);
    Py_XSETREF(*slot, Py_NewRef(value));
    return 0;
}

static int
set_fields(PyObject *record, const int *fields, int count, PyObject *const *values)
{
    for (int i = 0; i < count; i++) {
        if (set_field(record, fields[i], values[fields[i]]) < 0)
            return -1;
    }
    return 0;
}

/* One message of a batch body, as the client encodes it (MessageDecoder.encodeMessages):
 * TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODY LENGTH, BODY, PROPERTIES LENGTH (2 bytes),
 * PROPERTIES (the message's own string). */
typedef struct {
    int32_t flag;
    const unsigned char *body, *own;
    Py_ssize_t body_length, own_length;
    Py_ssize_t next;  /* where the next message starts */
} BatchItem;

/* Read the batch message at pos of data (end bytes): 1, or 0 when it is not well-formed
 * there (a TOTALSIZE that does not match its fields included; the Python decoder says
 * why). */
static int
read_batch_item(const unsigned char *data, Py_ssize_t pos, Py_ssize_t end, BatchItem *item)
{
    if (end - pos < BATCH_HEAD + 2)
        return 0;
    int64_t total = read_int(data + pos), body_length = read_int(data + pos + 16);
    Py_ssize_t body_pos = pos + BATCH_HEAD;
    if (body_length < 0 || body_pos + body_length + 2 > end)
        return 0;
    Py_ssize_t own_pos = body_pos + body_length + 2;
    int64_t own_length = (int16_t)((data[own_pos - 2] << 8) | data[own_pos - 1]);
    if (own_length < 0 || own_pos + own_length > end || total != own_pos + own_length - pos)
        return 0;
    item->flag = read_int(data + pos + 12);
    item->body = data + body_pos;
    item->body_length = body_length;
    item->own = data + own_pos;
    item->own_length = own_length;
    item->next = own_pos + own_length;
    return 1;
}

/* Whether a batch message's stored properties string puts a 0x02 between its own string
 * (n bytes at own) and the batch's (m bytes): when both are non-empty and own does not
 * end in one. */
static inline int
batch_separator(const unsigned char *own, Py_ssize_t n, Py_ssize_t m)
{
    return n > 0 && m > 0 && own[n - 1] != PROPERTY_SEPARATOR;
}

/* stored_batch_properties(own, batch): own, a 0x02 when both are non-empty and own does
 * not end in one, then batch. */
static PyObject *
stored_batch_properties(const unsigned char *own, Py_ssize_t n, PyObject *batch)
{
    Py_ssize_t m = PyBytes_GET_SIZE(batch);
    Py_ssize_t separator = batch_separator(own, n, m);
    PyObject *joined = PyBytes_FromStringAndSize(NULL, n + separator + m);
    if (joined == NULL)
        return NULL;
    char *p = PyBytes_AS_STRING(joined);
    memcpy(p, own, n);
    if (separator)
        p[n] = PROPERTY_SEPARATOR;
    memcpy(p + n + separator, PyBytes_AS_STRING(batch), m);
    return joined;
}

/* A batch message's properties: those of its own string, then the batch's (which win). */
static PyObject *
batch_message_properties(const unsigned char *own, Py_ssize_t n, PyObject *batch_parsed)
{
    PyObject *text = decode_text(own, n);
    PyObject *properties = text == NULL ? NULL : properties_of_text(text);
    Py_XDECREF(text);
    if (properties != NULL && PyDict_Update(properties, batch_parsed) < 0)
        Py_CLEAR(properties);
    return properties;
}

/* ---- the properties of a batch's messages, by the first one's pattern ----
 * The messages of one batch usually carry the same names in the same order (a unique key,
 * often keys and tags), only their values differ. Once a message's dict was made by
 * batch_message_properties, a later message whose own string is plain (ASCII fragments,
 * each a non-empty name and value, no name twice) with the same names in the same order
 * gets a copy of that dict with its own values set: the same keys, order and values,
 * without decoding and parsing its string nor merging the batch's dict again. */
#define PATTERN_NAMES 8

typedef struct {
    int count;
    const unsigned char *name[PATTERN_NAMES], *value[PATTERN_NAMES];
    Py_ssize_t name_length[PATTERN_NAMES], value_length[PATTERN_NAMES];
} PlainFragments;

/* Split own (n bytes) into f when it is plain: 1, else 0. */
static int
plain_fragments(const unsigned char *own, Py_ssize_t n, PlainFragments *f)
{
    f->count = 0;
    for (Py_ssize_t start = 0; start < n;) {
        Py_ssize_t end = start, eq = -1;
        for (; end < n && own[end] != PROPERTY_SEPARATOR; end++) {
            if (own[end] >= 0x80)
                return 0;
            if (own[end] == NAME_VALUE_SEPARATOR && eq < 0)
                eq = end;
        }
        if (eq <= start || end <= eq + 1 || f->count == PATTERN_NAMES)
            return 0;
        for (int j = 0; j < f->count; j++) {
            if (f->name_length[j] == eq - start
                    && memcmp(f->name[j], own + start, eq - start) == 0)
                return 0;
        }
        f->name[f->count] = own + start;
        f->name_length[f->count] = eq - start;
        f->value[f->count] = own + eq + 1;
        f->value_length[f->count] = end - eq - 1;
        f->count++;
        start = end + 1;
    }
    return 1;
}

typedef struct {
    PyObject *dict;                /* a private copy of the first plain message's dict */
    PyObject *key[PATTERN_NAMES];  /* its first keys, the names (borrowed from dict) */
    int batch_wins[PATTERN_NAMES]; /* the batch's value stays for that key */
    PlainFragments names;          /* pointing into the batch body */
} PropertiesPattern;

static void
clear_pattern(PropertiesPattern *pattern)
{
    Py_CLEAR(pattern->dict);
}

/* Whether f has the pattern's names in its order. */
static int
same_names(const PlainFragments *f, const PropertiesPattern *pattern)
{
    if (pattern->dict == NULL || f->count != pattern->names.count)
        return 0;
    for (int j = 0; j < f->count; j++) {
        if (f->name_length[j] != pattern->names.name_length[j]
                || memcmp(f->name[j], pattern->names.name[j], f->name_length[j]) != 0)
            return 0;
    }
    return 1;
}

/* Take properties (made of the plain f) as the pattern when its first keys are f's names:
 * 0, or -1 with an error set. */
static int
learn_pattern(PropertiesPattern *pattern, PyObject *properties, const PlainFragments *f,
              PyObject *batch_parsed)
{
    PyObject *copy = PyDict_Copy(properties), *key, *value;
    if (copy == NULL)
        return -1;
    Py_ssize_t cursor = 0;
    for (int j = 0; j < f->count; j++) {
        if (!PyDict_Next(copy, &cursor, &key, &value) || !PyUnicode_Check(key)
                || !PyUnicode_IS_ASCII(key) || PyUnicode_GET_LENGTH(key) != f->name_length[j]
                || memcmp(PyUnicode_1BYTE_DATA(key), f->name[j], f->name_length[j]) != 0) {
            Py_DECREF(copy);
            return 0;
        }
        int wins = PyDict_Contains(batch_parsed, key);
        if (wins < 0) {
            Py_DECREF(copy);
            return -1;
        }
        pattern->key[j] = key;
        pattern->batch_wins[j] = wins;
    }
    pattern->dict = copy;
    pattern->names = *f;
    return 0;
}

/* batch_message_properties(own, n, batch_parsed), by the pattern when it fits. */
static PyObject *
patterned_properties(PropertiesPattern *pattern, const unsigned char *own, Py_ssize_t n,
                     PyObject *batch_parsed)
{
    PlainFragments f;
    int plain = plain_fragments(own, n, &f);
    if (plain && same_names(&f, pattern)) {
        PyObject *properties = PyDict_Copy(pattern->dict);
        for (int j = 0; properties != NULL && j < f.count; j++) {
            if (pattern->batch_wins[j])
                continue;
            PyObject *value = PyUnicode_New(f.value_length[j], 127);
            if (value != NULL)
                memcpy(PyUnicode_1BYTE_DATA(value), f.value[j], f.value_length[j]);
            if (value == NULL || PyDict_SetItem(properties, pattern->key[j], value) < 0)
                Py_CLEAR(properties);
            Py_XDECREF(value);
        }
        return properties;
    }
    PyObject *properties = batch_message_properties(own, n, batch_parsed);
    if (properties != NULL && plain && pattern->dict == NULL
            && learn_pattern(pattern, properties, &f, batch_parsed) < 0)
        Py_CLEAR(properties);
    return properties;
}

PyDoc_STRVAR(batch_records_doc,
"batch_records(data, batch_raw, batch_parsed, prototype, record_type) -> list or None\n\n"
"rmqproto.codec.message.python_batch_records, each record an instance of record_type\n"
"(BatchRecord); None when data is not a well-formed batch body (the caller decodes it\n"
"in Python to say why).");

static PyObject *
batch_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 5 && PyBytes_Check(args[1]) && PyDict_Check(args[2])
                     && PyType_Check(args[4])
                     && ((PyTypeObject *)args[4])->tp_new == PyBaseObject_Type.tp_new,
                     "batch_records takes data, batch_raw (bytes), batch_parsed (dict), "
                     "prototype and a record type made by object.__new__") < 0)
        return NULL;
    PyObject *batch_raw = args[1], *batch_parsed = args[2], *prototype = args[3];
    PyTypeObject *type = (PyTypeObject *)args[4];
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *values[FIELD_COUNT] = {NULL};
    PyObject *records = NULL;
    PropertiesPattern pattern = {NULL};
    for (int i = 0; i < COUNT(PROTOTYPE_FIELDS); i++) {
        int f = PROTOTYPE_FIELDS[i];
        if ((values[f] = get_field(prototype, f)) == NULL)
            goto done;
    }
    for (int i = 0; i < COUNT(ZERO_FIELDS); i++) {
        if ((values[ZERO_FIELDS[i]] = PyLong_FromLong(0)) == NULL)
            goto done;
    }
    values[F_STORE_SIZE] = Py_NewRef(Py_None);
    if ((records = PyList_New(0)) == NULL)
        goto done;
    const unsigned char *data = view.buf;
    Py_ssize_t pos = 0, end = view.len;
    BatchItem item;
    while (pos < end) {
        if (!read_batch_item(data, pos, end, &item))
            goto malformed;
        values[F_FLAG] = PyLong_FromLong(item.flag);
        values[F_BODY] = PyBytes_FromStringAndSize((const char *)item.body, item.body_length);
        values[F_PROPERTIES] = patterned_properties(&pattern, item.own, item.own_length,
                                                    batch_parsed);
        values[F_STORED_PROPERTIES] = stored_batch_properties(item.own, item.own_length,
                                                              batch_raw);
        PyObject *record = NULL;
        if (values[F_FLAG] && values[F_BODY] && values[F_PROPERTIES]
                && values[F_STORED_PROPERTIES]) {
            record = PyBaseObject_Type.tp_new(type, EMPTY_TUPLE, NULL);
            if (record != NULL) {
                if (set_fields(record, ALL_FIELDS, FIELD_COUNT, values) < 0
                        || PyList_Append(records, record) < 0)
                    Py_CLEAR(record);
            }
        }
        Py_CLEAR(values[F_FLAG]);
        Py_CLEAR(values[F_BODY]);
        Py_CLEAR(values[F_PROPERTIES]);
        Py_CLEAR(values[F_STORED_PROPERTIES]);
        if (record == NULL) {
            Py_CLEAR(records);
            goto done;
        }
        Py_DECREF(record);
        pos = item.next;
    }
    goto done;
malformed:
    Py_SETREF(records, Py_NewRef(Py_None));
done:
    for (int i = 0; i < FIELD_COUNT; i++)
        Py_XDECREF(values[i]);
    clear_pattern(&pattern);
    PyBuffer_Release(&view);
    return records;
}

/* Whether record.<field> == expected as a tuple compares its items (identity first):
 * 1, 0, or -1 with an error set. */
static int
field_equals(PyObject *record, int field, PyObject *expected)
{
    PyObject *value = get_field(record, field);
    if (value == NULL)
        return -1;
    int equal = PyObject_RichCompareBool(value, expected, Py_EQ);
    Py_DECREF(value);
    return equal;
}

/* Whether record.<field> != expected, as the operator says: 1, 0, or -1 with an error set. */
static int
field_differs(PyObject *record, int field, PyObject *expected)
{
    PyObject *value = get_field(record, field);
    if (value == NULL)
        return -1;
    PyObject *differs = PyObject_RichCompare(value, expected, Py_NE);
    Py_DECREF(value);
    if (differs == NULL)
        return -1;
    int truth = PyObject_IsTrue(differs);
    Py_DECREF(differs);
    return truth;
}

/* The int64 value of record.<field>; 0 with *ok cleared when it is not an int in range,
 * -1 (and *ok untouched) with an error set when the attribute is missing. */
static int64_t
long_field(PyObject *record, int field, int *ok)
{
    PyObject *value = get_field(record, field);
    if (value == NULL) {
        *ok = -1;
        return 0;
    }
    int64_t v = as_long(value, ok);
    Py_DECREF(value);
    return v;
}

/* The record length without body and properties (calMsgLength, version 1). */
static int64_t
record_overhead(int64_t sys_flag, Py_ssize_t topic_length)
{
    return MIN_RECORD_LENGTH + (sys_flag & BORNHOST_V6_FLAG ? 12 : 0)
        + (sys_flag & STOREHOSTADDRESS_V6_FLAG ? 12 : 0) + topic_length;
}

PyDoc_STRVAR(check_batch_records_doc,
"check_batch_records(records, topic, queue_id, topic_length) -> (list, int) or None\n\n"
"The loop of rmqproto.store.commitlog.check_batch for records that pass it: the stored\n"
"properties bytes of each record, which gets the version-1 magic code and its store\n"
"size, and the records' total size.  None when a record is of another topic or queue, is a transaction's, or has no\n"
"stored properties bytes or more than 32767 of them (the caller checks the records in\n"
"Python to say why).");

static PyObject *
check_batch_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 4, "check_batch_records takes records, topic, queue_id and "
                     "topic_length") < 0)
        return NULL;
    Py_ssize_t topic_length = PyLong_AsSsize_t(args[3]);
    if (topic_length == -1 && PyErr_Occurred())
        return NULL;
    PyObject *records = PySequence_Fast(args[0], "records must be iterable");
    if (records == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(records);
    int64_t total = 0;
    PyObject *properties = PyList_New(n);
    if (properties == NULL)
        goto failed;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *record = PySequence_Fast_GET_ITEM(records, i);
        int other_topic = field_differs(record, F_TOPIC, args[1]);
        int other_queue = other_topic == 0 ? field_differs(record, F_QUEUE_ID, args[2]) : 0;
        int ok = 1;
        int64_t sys_flag = other_topic == 0 && other_queue == 0
            ? long_field(record, F_SYS_FLAG, &ok) : 0;
        if (other_topic < 0 || other_queue < 0 || ok < 0)
            goto failed;
        if (other_topic || other_queue || !ok || sys_flag & TRANSACTION_ROLLBACK_TYPE)
            goto refused;
        PyObject *stored = get_field(record, F_STORED_PROPERTIES);
        if (stored == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                goto failed;
            PyErr_Clear();
            goto refused;
        }
        PyList_SET_ITEM(properties, i, stored);
        if (!PyBytes_Check(stored) || PyBytes_GET_SIZE(stored) > MAX_PROPERTIES_LENGTH)
            goto refused;
        PyObject *body = get_field(record, F_BODY);
        if (body == NULL)
            goto failed;
        int is_bytes = PyBytes_Check(body);
        int64_t size = is_bytes ? record_overhead(sys_flag, topic_length)
            + PyBytes_GET_SIZE(body) + PyBytes_GET_SIZE(stored) : 0;
        Py_DECREF(body);
        if (!is_bytes)
            goto refused;
        PyObject *store_size = PyLong_FromLongLong(size);
        if (store_size == NULL)
            goto failed;
        int set = set_field(record, F_MAGIC_CODE, MAGIC_CODE_V1) < 0
            || set_field(record, F_STORE_SIZE, store_size) < 0;
        Py_DECREF(store_size);
        if (set)
            goto failed;
        total += size;  /* each below 2**32: no overflow for any list that fits memory */
    }
    Py_DECREF(records);
    return Py_BuildValue("(NL)", properties, (long long)total);
refused:
    Py_DECREF(records);
    Py_DECREF(properties);
    Py_RETURN_NONE;
failed:
    Py_DECREF(records);
    Py_XDECREF(properties);
    return NULL;
}

PyDoc_STRVAR(fix_batch_host_flags_doc,
"fix_batch_host_flags(records, born_host, store_host, flags) -> bool\n\n"
"The loop of rmqproto.store.defaultstore.DefaultMessageStore._fix_batch_host_flags for\n"
"records whose hosts are born_host and store_host themselves (as those of a batch the\n"
"broker decoded are): each sys flag gets flags as its IPv6 host bits.  False from the\n"
"first record with other host objects or a sys flag that is not an int (exactly) of\n"
"32 bits; the caller's loop then sets every record's bits (again).");

static PyObject *
fix_batch_host_flags(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 4 && PyLong_Check(args[3]), "fix_batch_host_flags takes "
                     "records, born_host, store_host and flags (an int)") < 0)
        return NULL;
    int ok = 1;
    int64_t flags = as_long(args[3], &ok);
    if (!ok || (flags & ~(int64_t)HOST_FLAGS))
        Py_RETURN_FALSE;
    PyObject *records = PySequence_Fast(args[0], "records must be iterable");
    if (records == NULL)
        return NULL;
    PyObject *result = Py_False;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(records); i++) {
        PyObject *record = PySequence_Fast_GET_ITEM(records, i);
        PyObject *born = get_field(record, F_BORN_HOST);
        PyObject *store = born == NULL ? NULL : get_field(record, F_STORE_HOST);
        PyObject *sys_flag = store == NULL ? NULL : get_field(record, F_SYS_FLAG);
        int shared = sys_flag != NULL && born == args[1] && store == args[2]
            && PyLong_CheckExact(sys_flag);
        int64_t value = shared ? as_long(sys_flag, &ok) : 0;
        int fixed = 0;
        if (shared && ok && value >= INT32_MIN && value <= INT32_MAX) {
            int64_t wanted = (value & ~(int64_t)HOST_FLAGS) | flags;
            PyObject *new_flag = wanted == value ? NULL : PyLong_FromLongLong(wanted);
            fixed = wanted == value || (new_flag != NULL
                                        && set_field(record, F_SYS_FLAG, new_flag) == 0) ? 1 : -1;
            Py_XDECREF(new_flag);
        }
        Py_XDECREF(born);
        Py_XDECREF(store);
        Py_XDECREF(sys_flag);
        if (sys_flag == NULL || fixed < 0)
            result = NULL;
        if (fixed <= 0)
            goto done;
    }
    result = Py_True;
done:
    Py_DECREF(records);
    return Py_XNewRef(result);
}

PyDoc_STRVAR(check_message_record_doc,
"check_message_record(record, topic_length, max_message_size) -> (bytes, int) or None\n\n"
"rmqproto.store.commitlog.check_message after the topic check, for a record that passes\n"
"it: its properties_utf8 bytes and its store size, which the record gets, with the\n"
"version-1 magic code.  None when its properties are not a dict of str, its body is not bytes, its sys\n"
"flag not an int64, topic_length not within 0..127 or when a size check fails (the\n"
"caller checks the record in Python to say why).");

/* check_message_record's answer for record: a new reference, or NULL with an error set.
 * ok: whether topic_length and max_message_size were ints in range. */
static PyObject *
checked_message(PyObject *module, PyObject *record, int64_t topic_length,
                int64_t max_message_size, int ok)
{
    int64_t sys_flag = ok ? long_field(record, F_SYS_FLAG, &ok) : 0;
    if (ok < 0)
        return NULL;
    PyObject *properties = ok ? get_field(record, F_PROPERTIES) : NULL;
    if (properties == NULL)
        return ok ? NULL : Py_NewRef(Py_None);
    PyObject *stored = properties_utf8(module, properties);
    Py_DECREF(properties);
    PyObject *body = stored == NULL ? NULL : get_field(record, F_BODY);
    if (body == NULL) {
        Py_XDECREF(stored);
        return NULL;
    }
    int64_t body_length = PyBytes_CheckExact(body) ? PyBytes_GET_SIZE(body) : -1;
    Py_DECREF(body);
    if (stored == Py_None || body_length < 0 || topic_length < 0
            || topic_length > MAX_TOPIC_LENGTH_V1
            || PyBytes_GET_SIZE(stored) > MAX_PROPERTIES_LENGTH || body_length > max_message_size)
        goto refused;
    /* within max_message_size and the encoder's 64 KiB headroom: the body is, and the
     * rest is 242 + 32767 bytes at most */
    PyObject *store_size = PyLong_FromLongLong(record_overhead(sys_flag, topic_length)
                                               + body_length + PyBytes_GET_SIZE(stored));
    int set = store_size == NULL
        || set_field(record, F_MAGIC_CODE, MAGIC_CODE_V1) < 0
        || set_field(record, F_STORE_SIZE, store_size) < 0;
    PyObject *checked = set ? NULL : PyTuple_New(2);
    if (checked == NULL) {
        Py_XDECREF(store_size);
        Py_DECREF(stored);
        return NULL;
    }
    PyTuple_SET_ITEM(checked, 0, stored);
    PyTuple_SET_ITEM(checked, 1, store_size);
    return checked;
refused:
    Py_DECREF(stored);
    Py_RETURN_NONE;
}

static PyObject *
check_message_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 3 && PyLong_Check(args[1]) && PyLong_Check(args[2]),
                     "check_message_record takes a record, topic_length and "
                     "max_message_size (ints)") < 0)
        return NULL;
    int ok = 1;
    int64_t topic_length = as_long(args[1], &ok), max_message_size = as_long(args[2], &ok);
    return checked_message(module, args[0], topic_length, max_message_size, ok);
}


/* 0 (the error cleared) when the error set is a UnicodeEncodeError, else -1. */
static int
unless_unencodable(void)
{
    if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
        return -1;
    PyErr_Clear();
    return 0;
}

/* Whether host is an (ip, port) tuple whose ip is a str without a colon (not IPv6, as
 * DefaultMessageStore.put_message_at_once tells): 1, 0, or -1 with an error set. */
static int
colonless_host(PyObject *host)
{
    if (!PyTuple_Check(host) || PyTuple_GET_SIZE(host) < 1
            || !PyUnicode_Check(PyTuple_GET_ITEM(host, 0)))
        return 0;
    PyObject *ip = PyTuple_GET_ITEM(host, 0);
    Py_ssize_t at = PyUnicode_FindChar(ip, ':', 0, PyUnicode_GET_LENGTH(ip), 1);
    return at == -2 ? -1 : at == -1;
}

/* The UTF-8 length of a topic legal_topic_length accepts, 0 for any other (or one that
 * does not encode without surrogateescape), -1 with an error set. */
static Py_ssize_t
legal_topic_length(PyObject *topic)
{
    if (!PyUnicode_Check(topic) || PyUnicode_GET_LENGTH(topic) > MAX_TOPIC_LENGTH_V1)
        return 0;
    Py_ssize_t length;
    const char *raw = PyUnicode_AsUTF8AndSize(topic, &length);
    if (raw == NULL)
        return unless_unencodable();
    if (length == 0 || length > MAX_TOPIC_LENGTH_V1 || memchr(raw, '/', length) != NULL
            || memchr(raw, '\0', length) != NULL || strcmp(raw, ".") == 0
            || strcmp(raw, "..") == 0)
        return 0;
    return length;
}

PyDoc_STRVAR(check_usual_message_doc,
"check_usual_message(record, max_message_size) -> (bytes, int) or None\n\n"
"rmqproto.store.commitlog.python_check_usual_message: the checks of a single put, in one\n"
"call, for the usual message: no DELAY property (a dict of properties), born and store\n"
"hosts that are not IPv6 and no IPv6 host bits, a legal topic of plain UTF-8 (no lone\n"
"surrogate), and check_message passed;\n"
"then what check_message_record answers (the record gets its magic code and store\n"
"size).  None for any other record, which the caller checks in Python.");

static PyObject *
check_usual_message(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 2 && PyLong_Check(args[1]),
                     "check_usual_message takes a record and max_message_size (an int)") < 0)
        return NULL;
    PyObject *record = args[0];
    int ok = 1;
    int64_t max_message_size = as_long(args[1], &ok);
    int64_t sys_flag = ok ? long_field(record, F_SYS_FLAG, &ok) : 0;
    if (ok < 0)
        return NULL;
    if (!ok || sys_flag & HOST_FLAGS)
        Py_RETURN_NONE;
    PyObject *values[4] = {NULL};
    static const int fields[4] = {F_TOPIC, F_BORN_HOST, F_STORE_HOST, F_PROPERTIES};
    PyObject *result = NULL;
    for (int i = 0; i < 4; i++) {
        if ((values[i] = get_field(record, fields[i])) == NULL)
            goto done;
    }
    Py_ssize_t topic_length = legal_topic_length(values[0]);
    int usual = topic_length;
    if (usual > 0)
        usual = colonless_host(values[1]);
    if (usual > 0)
        usual = colonless_host(values[2]);
    if (usual > 0 && !PyDict_CheckExact(values[3]))
        usual = 0;
    if (usual > 0) {
        int delayed = PyDict_Contains(values[3], USUAL_NAME[DELAY_NAME]);
        usual = delayed < 0 ? -1 : !delayed;
    }
    if (usual < 0)
        goto done;
    result = usual ? checked_message(module, record, topic_length, max_message_size, 1)
        : Py_NewRef(Py_None);
done:
    for (int i = 0; i < 4; i++)
        Py_XDECREF(values[i]);
    return result;
}

/* An IPv4 (ip, port) host: the 4 address bytes and the port; 0 when it is not one in
 * range, -1 with an error set when reading it fails. */
static int
ipv4_host(PyObject *host, unsigned char address[4], int32_t *port)
{
    if (!PyTuple_Check(host) || PyTuple_GET_SIZE(host) != 2
            || !PyUnicode_Check(PyTuple_GET_ITEM(host, 0)))
        return 0;
    Py_ssize_t length;
    const char *ip = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(host, 0), &length);
    if (ip == NULL)
        return unless_unencodable();
    if (strlen(ip) != (size_t)length)  /* a NUL inside */
        return 0;
    int ok = 1;
    int64_t value = as_long(PyTuple_GET_ITEM(host, 1), &ok);
    if (!ok || value < INT32_MIN || value > INT32_MAX || inet_pton(AF_INET, ip, address) != 1)
        return 0;
    *port = (int32_t)value;
    return 1;
}

/* What the records of a batch share, read from the first. */
typedef struct {
    PyObject *values[FIELD_COUNT];   /* the shared attributes, by field */
    PyObject *topic;                 /* UTF-8 */
    int64_t queue_id, sys_flag, born_timestamp, reconsume_times, prepared;
    unsigned char born_ip[4], store_ip[4];
    int32_t born_port, store_port;
} SharedFields;

static const int SHARED_FIELDS[] = {F_TOPIC, F_QUEUE_ID, F_SYS_FLAG, F_MAGIC_CODE,
                                    F_BORN_HOST, F_STORE_HOST, F_BORN_TIMESTAMP,
                                    F_RECONSUME_TIMES, F_PREPARED};

static void
clear_shared(SharedFields *shared)
{
    for (int i = 0; i < FIELD_COUNT; i++)
        Py_CLEAR(shared->values[i]);
    Py_CLEAR(shared->topic);
}

/* Read the shared fields of record: 1, 0 when they are not those of a version-1 record
 * with IPv4 hosts and fields in range, -1 with an error set. */
static int
read_shared(PyObject *record, SharedFields *shared)
{
    for (int i = 0; i < COUNT(SHARED_FIELDS); i++) {
        int f = SHARED_FIELDS[i];
        if ((shared->values[f] = get_field(record, f)) == NULL)
            return -1;
    }
    if (!PyUnicode_Check(shared->values[F_TOPIC]))
        return 0;
    shared->topic = PyUnicode_AsEncodedString(shared->values[F_TOPIC], "utf-8",
                                              "surrogateescape");
    if (shared->topic == NULL)
        return unless_unencodable();
    int ok = 1;
    int64_t magic = as_long(shared->values[F_MAGIC_CODE], &ok);
    shared->queue_id = as_long(shared->values[F_QUEUE_ID], &ok);
    shared->sys_flag = as_long(shared->values[F_SYS_FLAG], &ok);
    shared->born_timestamp = as_long(shared->values[F_BORN_TIMESTAMP], &ok);
    shared->reconsume_times = as_long(shared->values[F_RECONSUME_TIMES], &ok);
    shared->prepared = as_long(shared->values[F_PREPARED], &ok);
    if (!ok || magic != MESSAGE_MAGIC_CODE || PyBytes_GET_SIZE(shared->topic) > MAX_TOPIC_LENGTH_V1
            || shared->sys_flag & HOST_FLAGS || shared->queue_id < INT32_MIN
            || shared->queue_id > INT32_MAX || shared->sys_flag < INT32_MIN
            || shared->sys_flag > INT32_MAX || shared->reconsume_times < INT32_MIN
            || shared->reconsume_times > INT32_MAX)
        return 0;
    int born = ipv4_host(shared->values[F_BORN_HOST], shared->born_ip, &shared->born_port);
    if (born <= 0)
        return born;
    return ipv4_host(shared->values[F_STORE_HOST], shared->store_ip, &shared->store_port);
}

/* Whether record shares the shared fields: 1, 0, or -1 with an error set. */
static int
shares_fields(PyObject *record, SharedFields *shared)
{
    for (int i = 0; i < COUNT(SHARED_FIELDS); i++) {
        int f = SHARED_FIELDS[i];
        int equal = field_equals(record, f, shared->values[f]);
        if (equal <= 0)
            return equal;
    }
    return 1;
}

/* The offset message id: the store host's address and port, then offset, in upper hex. */
static PyObject *
message_id(const SharedFields *shared, int64_t offset)
{
    static const char hex[] = "0123456789ABCDEF";
    unsigned char raw[16];
    char text[32];
    memcpy(raw, shared->store_ip, 4);
    write_int(raw + 4, shared->store_port);
    write_long(raw + 8, offset);
    for (int i = 0; i < 16; i++) {
        text[2 * i] = hex[raw[i] >> 4];
        text[2 * i + 1] = hex[raw[i] & 0xF];
    }
    return PyUnicode_FromStringAndSize(text, 32);
}

/* A record's stored properties string in up to two pieces: the first, a 0x02 when
 * separator is set, then the second (a batch message's own string and the batch's). */
typedef struct {
    const unsigned char *first, *second;
    Py_ssize_t first_length, second_length;
    int separator;
} StoredProperties;

static inline Py_ssize_t
stored_length(const StoredProperties *properties)
{
    return properties->first_length + properties->separator + properties->second_length;
}

/* The stored properties of a bytes object, in one piece. */
static inline StoredProperties
whole_properties(PyObject *bytes)
{
    StoredProperties properties = {(const unsigned char *)PyBytes_AS_STRING(bytes), NULL,
                                   PyBytes_GET_SIZE(bytes), 0, 0};
    return properties;
}

/* Write one version-1 IPv4 record of size bytes at p. */
static void
write_record(unsigned char *p, const SharedFields *shared, int64_t size, int64_t crc,
             int64_t flag, int64_t queue_offset, int64_t offset, int64_t store_timestamp,
             const unsigned char *body, Py_ssize_t body_length,
             const StoredProperties *properties)
{
    Py_ssize_t topic_length = PyBytes_GET_SIZE(shared->topic);
    Py_ssize_t properties_length = stored_length(properties);
    write_int(p, (int32_t)size);
    write_int(p + 4, MESSAGE_MAGIC_CODE);
    write_int(p + 8, (int32_t)crc);
    write_int(p + 12, (int32_t)shared->queue_id);
    write_int(p + 16, (int32_t)flag);
    write_long(p + 20, queue_offset);
    write_long(p + 28, offset);
    write_int(p + 36, (int32_t)shared->sys_flag);
    write_long(p + 40, shared->born_timestamp);
    memcpy(p + 48, shared->born_ip, 4);
    write_int(p + 52, shared->born_port);
    write_long(p + 56, store_timestamp);
    memcpy(p + 64, shared->store_ip, 4);
    write_int(p + 68, shared->store_port);
    write_int(p + 72, (int32_t)shared->reconsume_times);
    write_long(p + 76, shared->prepared);
    write_int(p + 84, (int32_t)body_length);
    p += FIXED_V1;
    memcpy(p, body, body_length);
    p += body_length;
    *p++ = (unsigned char)topic_length;
    memcpy(p, PyBytes_AS_STRING(shared->topic), topic_length);
    p += topic_length;
    *p++ = (unsigned char)(properties_length >> 8);
    *p++ = (unsigned char)properties_length;
    memcpy(p, properties->first, properties->first_length);
    p += properties->first_length;
    if (properties->separator)
        *p++ = PROPERTY_SEPARATOR;
    if (properties->second_length > 0)
        memcpy(p, properties->second, properties->second_length);
}


/* Set the four fields the encoding fills in. */
static int
set_stored_fields(PyObject *record, PyObject *store_timestamp, int64_t crc,
                  PyObject *offset, PyObject *queue_offset)
{
    PyObject *values[FIELD_COUNT] = {NULL};
    static const int fields[] = {F_STORE_TIMESTAMP, F_BODY_CRC, F_COMMIT_LOG_OFFSET,
                                 F_QUEUE_OFFSET};
    values[F_STORE_TIMESTAMP] = store_timestamp;
    values[F_COMMIT_LOG_OFFSET] = offset;
    values[F_QUEUE_OFFSET] = queue_offset;
    if ((values[F_BODY_CRC] = PyLong_FromLongLong(crc)) == NULL)
        return -1;
    int failed = set_fields(record, fields, COUNT(fields), values);
    Py_DECREF(values[F_BODY_CRC]);
    return failed ? -1 : 0;
}

/* A stored record's dispatch fields, in the order of
 * rmqproto.codec.message.DISPATCH_FIELDS, or NULL with an error set. */
static PyObject *
stored_dispatch_fields(PyObject *properties, const SharedFields *shared,
                       PyObject *store_timestamp, PyObject *offset, PyObject *queue_offset,
                       int64_t size)
{
    PyObject *size_object = PyLong_FromLongLong(size);
    PyObject *fields = size_object == NULL ? NULL : PyTuple_Pack(
        9, shared->values[F_TOPIC], shared->values[F_QUEUE_ID], queue_offset, offset,
        shared->values[F_SYS_FLAG], store_timestamp, shared->values[F_PREPARED], properties,
        size_object);
    Py_XDECREF(size_object);
    return fields;
}

/* ---- the writers of a stored batch: write_stored_batch (records) and
 * write_packed_batch (a batch body) ---- */

/* One record of a batch being stored, measured and its body CRC computed. */
typedef struct {
    const unsigned char *body;
    Py_ssize_t body_length;
    int64_t flag, size, crc;
    StoredProperties stored;
} StoredEntry;

/* What both writers are given besides their records: the buffer, the position and total
 * (arguments 0 to 2) and the store timestamp and first commit-log and queue offsets
 * (arguments at, at + 1 and at + 2), as ints and as the objects passed. */
typedef struct {
    Py_buffer view;
    int64_t position, total, store_timestamp, begin_offset, begin_queue_offset;
    PyObject *store_timestamp_object, *offset_object, *queue_offset_object;
    int in_range;  /* the last three ints are int64 and the offsets not negative */
} BatchTarget;

/* Open the target of args: 0, or -1 with an error set (ValueError when total bytes from
 * position do not fit the buffer). */
static int
open_target(PyObject *const *args, int at, BatchTarget *target)
{
    int fits = 1, ok = 1;
    target->position = as_long(args[1], &fits);
    target->total = as_long(args[2], &fits);
    target->store_timestamp = as_long(args[at], &ok);
    target->begin_offset = as_long(args[at + 1], &ok);
    target->begin_queue_offset = as_long(args[at + 2], &ok);
    target->store_timestamp_object = args[at];
    target->offset_object = args[at + 1];
    target->queue_offset_object = args[at + 2];
    target->in_range = ok && target->begin_offset >= 0;
    if (PyObject_GetBuffer(args[0], &target->view, PyBUF_WRITABLE) < 0)
        return -1;
    if (!fits || target->position < 0 || target->total < 0
            || target->total > target->view.len - target->position) {
        PyBuffer_Release(&target->view);
        PyErr_SetString(PyExc_ValueError, "the records do not fit the buffer");
        return -1;
    }
    return 0;
}

/* Whether n entries of total bytes (as the target expects) fit the offsets' range. */
static int
entries_fit(const BatchTarget *target, Py_ssize_t n, int64_t total)
{
    return target->in_range && n > 0 && total == target->total
        && target->begin_offset <= INT64_MAX - total
        && target->begin_queue_offset <= INT64_MAX - (n - 1);
}

/* A new reference to entry i's properties dict (its dispatch's), or NULL with an error set. */
typedef PyObject *(*EntryProperties)(void *context, Py_ssize_t i);

/* The message ids and dispatch fields of the n measured entries (records, when not NULL,
 * get the fields the encoding fills in), then the entries written at the target's position:
 * (ids, dispatch fields), or NULL with an error set and nothing written. */
static PyObject *
store_entries(const BatchTarget *target, const SharedFields *shared, const StoredEntry *entries,
              Py_ssize_t n, PyObject *records, EntryProperties properties_of, void *context)
{
    PyObject *result = NULL, *ids = PyList_New(n), *dispatch = PyList_New(n);
    PyObject *offset_object = NULL, *queue_offset_object = NULL, *properties = NULL;
    if (ids == NULL || dispatch == NULL)
        goto done;
    int64_t offset = target->begin_offset;
    for (Py_ssize_t i = 0; i < n; offset += entries[i].size, i++) {
        PyObject *id = message_id(shared, offset);
        if (id == NULL)
            goto done;
        PyList_SET_ITEM(ids, i, id);
        /* the first record's offsets are the arguments, as Python stores them */
        offset_object = i == 0 ? Py_NewRef(target->offset_object) : PyLong_FromLongLong(offset);
        queue_offset_object = i == 0 ? Py_NewRef(target->queue_offset_object)
            : PyLong_FromLongLong(target->begin_queue_offset + i);
        if (offset_object == NULL || queue_offset_object == NULL)
            goto done;
        if (records != NULL
                && set_stored_fields(PySequence_Fast_GET_ITEM(records, i),
                                     target->store_timestamp_object, entries[i].crc,
                                     offset_object, queue_offset_object) < 0)
            goto done;
        if ((properties = properties_of(context, i)) == NULL)
            goto done;
        PyObject *fields = stored_dispatch_fields(properties, shared,
                                                  target->store_timestamp_object,
                                                  offset_object, queue_offset_object,
                                                  entries[i].size);
        if (fields == NULL)
            goto done;
        PyList_SET_ITEM(dispatch, i, fields);
        Py_CLEAR(offset_object);
        Py_CLEAR(queue_offset_object);
        Py_CLEAR(properties);
    }
    /* last: the bytes, which cannot fail half-way */
    unsigned char *p = (unsigned char *)target->view.buf + target->position;
    offset = target->begin_offset;
    for (Py_ssize_t i = 0; i < n; i++) {
        const StoredEntry *e = &entries[i];
        write_record(p, shared, e->size, e->crc, e->flag, target->begin_queue_offset + i,
                     offset, target->store_timestamp, e->body, e->body_length, &e->stored);
        offset += e->size;
        p += e->size;
    }
    result = PyTuple_Pack(2, ids, dispatch);
done:
    Py_XDECREF(ids);
    Py_XDECREF(dispatch);
    Py_XDECREF(offset_object);
    Py_XDECREF(queue_offset_object);
    Py_XDECREF(properties);
    return result;
}

static PyObject *
record_properties(void *records, Py_ssize_t i)
{
    return get_field(PySequence_Fast_GET_ITEM((PyObject *)records, i), F_PROPERTIES);
}

PyDoc_STRVAR(write_stored_batch_doc,
"write_stored_batch(buffer, position, total, records, properties, store_timestamp,\n"
"                   commit_log_offset, queue_offset) -> (ids, dispatch fields) or None\n\n"
"rmqproto.codec.message.python_write_stored_batch for a batch whose records all share\n"
"the first one's topic (at most 127 UTF-8 bytes), queue, sys flag, born and store hosts\n"
"(IPv4), born timestamp, reconsume times, prepared offset and version-1 magic code, with\n"
"bytes bodies and properties, as many properties as records, every field in range and\n"
"total bytes in all: they are encoded straight into the writable buffer at position.\n"
"ValueError when total bytes from position do not fit the buffer; None for any other\n"
"batch (the caller writes it in Python); either way with nothing written or changed.");

static PyObject *
write_stored_batch(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 8 && PyLong_Check(args[1]) && PyLong_Check(args[2]),
                     "write_stored_batch takes buffer, position and total (ints), records, "
                     "properties, store_timestamp, commit_log_offset and queue_offset") < 0)
        return NULL;
    BatchTarget target;
    if (open_target(args, 5, &target) < 0)
        return NULL;
    PyObject *records = PySequence_Fast(args[3], "records must be iterable");
    PyObject *properties = records == NULL ? NULL
        : PySequence_Fast(args[4], "properties must be iterable");
    if (properties == NULL) {
        Py_XDECREF(records);
        PyBuffer_Release(&target.view);
        return NULL;
    }
    SharedFields shared = {{NULL}};
    PyObject *result = NULL;
    StoredEntry *entries = NULL;
    PyObject **bodies = NULL;
    int shares = 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(records);
    if (!target.in_range || n == 0 || n != PySequence_Fast_GET_SIZE(properties)
            || target.begin_queue_offset > INT64_MAX - (n - 1))
        goto other;
    shares = read_shared(PySequence_Fast_GET_ITEM(records, 0), &shared);
    if (shares <= 0)
        goto not_shared;
    /* first: every record is checked, measured and its CRC computed before anything is
     * changed */
    entries = PyMem_Calloc(n, sizeof(StoredEntry));
    bodies = PyMem_Calloc(n, sizeof(PyObject *));
    if (entries == NULL || bodies == NULL) {
        PyErr_NoMemory();
        goto decided;
    }
    int64_t total = 0;
    int64_t overhead = record_overhead(0, PyBytes_GET_SIZE(shared.topic));
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *record = PySequence_Fast_GET_ITEM(records, i);
        PyObject *props = PySequence_Fast_GET_ITEM(properties, i);
        StoredEntry *e = &entries[i];
        int ok = 1;
        shares = i == 0 ? 1 : shares_fields(record, &shared);
        if (shares <= 0)
            goto not_shared;
        if ((bodies[i] = get_field(record, F_BODY)) == NULL)
            goto decided;
        e->flag = long_field(record, F_FLAG, &ok);
        if (ok < 0)
            goto decided;
        if (!ok || !PyBytes_Check(bodies[i]) || !PyBytes_Check(props)
                || PyBytes_GET_SIZE(props) > MAX_PROPERTIES_LENGTH
                || e->flag < INT32_MIN || e->flag > INT32_MAX)
            goto other;
        e->body = (const unsigned char *)PyBytes_AS_STRING(bodies[i]);
        e->body_length = PyBytes_GET_SIZE(bodies[i]);
        e->stored = whole_properties(props);
        e->size = overhead + e->body_length + stored_length(&e->stored);
        if (e->size > INT32_MAX || total > INT64_MAX - e->size)
            goto other;
        total += e->size;
        e->crc = masked_crc32(e->body, e->body_length);
    }
    if (!entries_fit(&target, n, total))
        goto other;
    result = store_entries(&target, &shared, entries, n, records, record_properties, records);
    goto decided;
not_shared:
    if (shares < 0)
        goto decided;
other:
    result = Py_NewRef(Py_None);
decided:
    if (bodies != NULL) {
        for (Py_ssize_t i = 0; i < n; i++)
            Py_XDECREF(bodies[i]);
    }
    PyMem_Free(bodies);
    PyMem_Free(entries);
    clear_shared(&shared);
    Py_DECREF(records);
    Py_DECREF(properties);
    PyBuffer_Release(&target.view);
    return result;
}

/* ---------------------------------------------------------------- a batch body written whole */

/* The stored properties of a batch message: its own string, then the batch's. */
static inline StoredProperties
batch_message_stored(const BatchItem *item, const unsigned char *batch, Py_ssize_t batch_length)
{
    StoredProperties properties = {
        item->own, batch, item->own_length, batch_length,
        batch_separator(item->own, item->own_length, batch_length)};
    return properties;
}

PyDoc_STRVAR(usual_batch_prototype_doc,
"usual_batch_prototype(prototype) -> bool\n\n"
"Whether write_stored_batch encodes records sharing the fields of prototype in C:\n"
"version 1, a topic of at most 127 UTF-8 bytes, IPv4 hosts without host flags, and every\n"
"shared field an int in range.");

static PyObject *
usual_batch_prototype(PyObject *module, PyObject *prototype)
{
    SharedFields shared = {{NULL}};
    int usual = read_shared(prototype, &shared);
    clear_shared(&shared);
    return usual < 0 ? NULL : PyBool_FromLong(usual);
}

PyDoc_STRVAR(measure_packed_batch_doc,
"measure_packed_batch(data, batch_length) -> (count, payload) or None\n\n"
"The number of messages in the batch body data and the bytes of their bodies and stored\n"
"properties strings (each message's own string, a 0x02 when needed, then the batch's\n"
"string of batch_length bytes), when data is well-formed, holds a message and no stored\n"
"string is over 32767 bytes; None otherwise (decode_batch_records then decodes it or\n"
"says why it cannot).");

static PyObject *
measure_packed_batch(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 2 && PyLong_Check(args[1]),
                     "measure_packed_batch takes data and batch_length (an int)") < 0)
        return NULL;
    Py_ssize_t batch_length = PyLong_AsSsize_t(args[1]);
    if (batch_length == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *data = view.buf;
    Py_ssize_t count = 0, pos = 0;
    int64_t payload = 0;
    int usual = batch_length >= 0 && view.len > 0;
    BatchItem item;
    while (usual && pos < view.len) {
        usual = read_batch_item(data, pos, view.len, &item);
        if (usual) {
            StoredProperties stored = batch_message_stored(&item, NULL, batch_length);
            usual = stored_length(&stored) <= MAX_PROPERTIES_LENGTH;
            payload += item.body_length + stored_length(&stored);
            count++;
            pos = item.next;
        }
    }
    PyBuffer_Release(&view);
    if (!usual)
        Py_RETURN_NONE;
    return Py_BuildValue("(nL)", count, (long long)payload);
}

PyDoc_STRVAR(write_packed_batch_doc,
"write_packed_batch(buffer, position, total, data, batch_raw, batch_parsed, prototype,\n"
"                   store_timestamp, commit_log_offset, queue_offset, count)\n"
"    -> (ids, dispatch fields) or None\n\n"
"write_stored_batch of the records decode_batch_records(data, ...) would make, straight\n"
"from the batch body data (batch_raw: the batch's properties string as UTF-8,\n"
"batch_parsed: what parsing it gives) without making them, for a batch whose prototype's\n"
"shared fields are those write_stored_batch encodes in C and whose count records are\n"
"total bytes. ValueError when they do not fit the buffer at position; None for any other batch\n"
"(the caller makes the records and writes them); either way with nothing written.");

/* The dispatch's properties of a packed batch's messages. */
typedef struct {
    const StoredEntry *entries;
    PyObject *batch_parsed;
    PropertiesPattern pattern;
} PackedProperties;

static PyObject *
packed_properties(void *context, Py_ssize_t i)
{
    PackedProperties *packed = context;
    const StoredProperties *stored = &packed->entries[i].stored;
    return patterned_properties(&packed->pattern, stored->first, stored->first_length,
                                packed->batch_parsed);
}

static PyObject *
write_packed_batch(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 11 && PyLong_Check(args[1]) && PyLong_Check(args[2])
                     && PyBytes_Check(args[4]) && PyDict_Check(args[5])
                     && PyLong_Check(args[10]),
                     "write_packed_batch takes buffer, position and total (ints), data, "
                     "batch_raw (bytes), batch_parsed (dict), prototype, store_timestamp, "
                     "commit_log_offset, queue_offset and count (an int)") < 0)
        return NULL;
    BatchTarget target;
    Py_buffer body_view;
    if (open_target(args, 7, &target) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[3], &body_view, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&target.view);
        return NULL;
    }
    const unsigned char *data = body_view.buf;
    const unsigned char *batch = (const unsigned char *)PyBytes_AS_STRING(args[4]);
    Py_ssize_t batch_length = PyBytes_GET_SIZE(args[4]);
    PyObject *result = NULL;
    StoredEntry *entries = NULL;
    SharedFields shared = {{NULL}};
    PackedProperties properties = {NULL, args[5], {NULL}};
    BatchItem item;
    Py_ssize_t n = 0, pos;
    int shares = target.in_range ? read_shared(args[6], &shared) : 0;
    if (shares <= 0)
        goto not_shared;
    /* first: the count messages (pack_batch counted them) are measured and their CRCs
     * computed; a body of another count is declined */
    n = PyLong_AsSsize_t(args[10]);
    if (n == -1 && PyErr_Occurred())
        goto decided;
    if (n <= 0 || n > body_view.len / (BATCH_HEAD + 2))
        goto other;
    if ((entries = PyMem_Calloc(n, sizeof(StoredEntry))) == NULL) {
        PyErr_NoMemory();
        goto decided;
    }
    int64_t overhead = record_overhead(0, PyBytes_GET_SIZE(shared.topic)), total = 0;
    pos = 0;
    for (Py_ssize_t i = 0; i < n; pos = item.next, i++) {
        StoredEntry *e = &entries[i];
        if (!read_batch_item(data, pos, body_view.len, &item))
            goto other;
        e->body = item.body;
        e->body_length = item.body_length;
        e->flag = item.flag;
        e->stored = batch_message_stored(&item, batch, batch_length);
        e->size = overhead + item.body_length + stored_length(&e->stored);
        if (stored_length(&e->stored) > MAX_PROPERTIES_LENGTH || e->size > INT32_MAX)
            goto other;
        total += e->size;
        e->crc = masked_crc32(e->body, e->body_length);
    }
    if (pos != body_view.len || !entries_fit(&target, n, total))
        goto other;
    properties.entries = entries;
    result = store_entries(&target, &shared, entries, n, NULL, packed_properties, &properties);
    goto decided;
not_shared:
    if (shares < 0)
        goto decided;
other:
    result = Py_NewRef(Py_None);
decided:
    PyMem_Free(entries);
    clear_pattern(&properties.pattern);
    clear_shared(&shared);
    PyBuffer_Release(&body_view);
    PyBuffer_Release(&target.view);
    return result;
}

/* ---------------------------------------------------------------- request headers */

enum { FIELD_STRING, FIELD_INT32, FIELD_INT64, FIELD_BOOLEAN };

/* 1 with *value set when ASCII text is a Java int of bits (an optional sign, then decimal
 * digits, in range); 0 when Python must decide (other digits, bad text, out of range). */
static int
java_integral(PyObject *text, int bits, long long *value)
{
    if (!PyUnicode_IS_ASCII(text))
        return 0;
    const char *s = (const char *)PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), i = 0;
    int negative = 0;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) {
        negative = s[0] == '-';
        i = 1;
    }
    if (i == n)
        return 0;
    unsigned long long limit = (1ULL << (bits - 1)) - (negative ? 0 : 1), v = 0;
    for (; i < n; i++) {
        unsigned digit = (unsigned char)s[i] - '0';
        if (digit > 9 || v > (limit - digit) / 10)
            return 0;
        v = v * 10 + digit;
    }
    *value = negative ? (long long)(0 - v) : (long long)v;
    return 1;
}

/* 1 with *value set to Boolean.parseBoolean of ASCII text; 0 for Python to decide. */
static int
java_boolean(PyObject *text, int *value)
{
    if (!PyUnicode_IS_ASCII(text))
        return 0;
    const char *s = (const char *)PyUnicode_DATA(text);
    static const char TRUE_TEXT[] = "true";
    *value = PyUnicode_GET_LENGTH(text) == 4;
    for (int i = 0; *value && i < 4; i++)
        *value = (s[i] | 0x20) == TRUE_TEXT[i];
    return 1;
}

/* The value of a field of kind from text: a new reference, NULL with no error set when
 * Python must decide, NULL with an error set on failure. */
static PyObject *
field_value(PyObject *text, long kind)
{
    long long number;
    int flag;
    switch (kind) {
    case FIELD_STRING:
        return Py_NewRef(text);
    case FIELD_INT32:
    case FIELD_INT64:
        if (!java_integral(text, kind == FIELD_INT32 ? 32 : 64, &number))
            return NULL;
        return PyLong_FromLongLong(number);
    case FIELD_BOOLEAN:
        if (!java_boolean(text, &flag))
            return NULL;
        return Py_NewRef(flag ? Py_True : Py_False);
    }
    return NULL;
}

/* Item i of tuple when it is a tuple of size items (borrowed); else NULL with a TypeError
 * saying what. */
static PyObject *
sized_item(PyObject *tuple, Py_ssize_t i, Py_ssize_t size, const char *what)
{
    PyObject *item = PyTuple_GET_ITEM(tuple, i);
    if (PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) == size)
        return item;
    PyErr_SetString(PyExc_TypeError, what);
    return NULL;
}

PyDoc_STRVAR(decode_header_doc,
"decode_header(plan, ext_fields)\n\n"
"The written-out decoder of rmqproto.codec.headers._compile_decoder. plan is\n"
"(target class, ((wire, attribute, kind, required, initial value), ...),\n"
"((attribute, initial value), ...), the Python decoder); the Python decoder decides\n"
"every ext_fields this does not decode itself (a missing required field, a value that\n"
"is not a str, text that is not plain ASCII, a number it would refuse).");

static PyObject *
decode_header(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 2 && PyTuple_CheckExact(args[0]) && PyTuple_GET_SIZE(args[0]) == 4,
                     "decode_header(plan, ext_fields): plan is a 4-tuple") < 0)
        return NULL;
    PyObject *plan = args[0], *ext = args[1];
    PyTypeObject *target = (PyTypeObject *)PyTuple_GET_ITEM(plan, 0);
    PyObject *fields = PyTuple_GET_ITEM(plan, 1), *not_decoded = PyTuple_GET_ITEM(plan, 2);
    PyObject *python = PyTuple_GET_ITEM(plan, 3);
    if (!PyType_Check(target) || !PyTuple_CheckExact(fields) || !PyTuple_CheckExact(not_decoded)) {
        PyErr_SetString(PyExc_TypeError, "decode_header: a malformed plan");
        return NULL;
    }
    if (ext != Py_None && !PyDict_CheckExact(ext))
        return PyObject_CallOneArg(python, ext);
    PyObject *header = target->tp_new(target, EMPTY_TUPLE, NULL);
    if (header == NULL)
        return NULL;
    Py_ssize_t cursor = 0;  /* extFields usually list the fields in the plan's order */
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields); i++) {
        PyObject *field = sized_item(fields, i, 5, "decode_header: a malformed field");
        if (field == NULL)
            goto failed;
        PyObject *wire = PyTuple_GET_ITEM(field, 0), *text = NULL;
        if (ext != Py_None && (text = item_in_order(ext, &cursor, wire)) == NULL)
            text = PyDict_GetItemWithError(ext, wire);
        PyObject *value;
        if (text == NULL && PyErr_Occurred())
            goto failed;
        if (text == NULL || text == Py_None) {
            if (PyTuple_GET_ITEM(field, 3) == Py_True)
                goto python_decides;  /* a required field is missing */
            value = Py_NewRef(PyTuple_GET_ITEM(field, 4));
        }
        else {
            if (!PyUnicode_CheckExact(text))
                goto python_decides;
            value = field_value(text, PyLong_AsLong(PyTuple_GET_ITEM(field, 2)));
            if (value == NULL) {
                if (PyErr_Occurred())
                    goto failed;
                goto python_decides;
            }
        }
        int set = set_attribute(header, PyTuple_GET_ITEM(field, 1), value);
        Py_DECREF(value);
        if (set < 0)
            goto failed;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(not_decoded); i++) {
        PyObject *pair = sized_item(not_decoded, i, 2, "decode_header: a malformed initial value");
        if (pair == NULL)
            goto failed;
        if (set_attribute(header, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1)) < 0)
            goto failed;
    }
    return header;
python_decides:
    Py_DECREF(header);
    return PyObject_CallOneArg(python, ext);
failed:
    Py_DECREF(header);
    return NULL;
}

/* ---------------------------------------------------------------- frames */

static const char *COMMAND_ATTR_NAMES[] = {
    "code", "opaque", "flag", "ext_fields", "body", "remark", "language", "version",
    "serialize_type"};
#define COMMAND_ATTR_COUNT 9
static PyObject *COMMAND_ATTR[COMMAND_ATTR_COUNT];
static PyObject *JAVA, *ZERO;

PyDoc_STRVAR(decode_frame_doc,
"decode_frame(plan, frame)\n\n"
"rmqproto.codec.frame.python_decode_frame for a JSON frame whose header is the usual\n"
"one (an object; extFields an object of strings; code, opaque, flag and version ints;\n"
"remark a string; language a name), read in C (jsonheader.c). plan is (RemotingCommand,\n"
"python_decode_frame); every other frame goes to python_decode_frame, which decodes it or\n"
"raises what it raises.");

static PyObject *
decode_frame(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 2 && PyTuple_CheckExact(args[0]) && PyTuple_GET_SIZE(args[0]) == 2
                     && PyType_Check(PyTuple_GET_ITEM(args[0], 0)),
                     "decode_frame(plan, frame): plan is (command class, python)") < 0)
        return NULL;
    PyTypeObject *command_type = (PyTypeObject *)PyTuple_GET_ITEM(args[0], 0);
    PyObject *python = PyTuple_GET_ITEM(args[0], 1);
    PyObject *frame = args[1];
    if (!PyBytes_CheckExact(frame) || PyBytes_GET_SIZE(frame) < 4)
        return PyObject_CallOneArg(python, frame);
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(frame);
    Py_ssize_t size = PyBytes_GET_SIZE(frame);
    Py_ssize_t header_length = ((Py_ssize_t)p[1] << 16) | (p[2] << 8) | p[3];
    if (p[0] != 0 || header_length > size - 4)  /* not JSON, or a bad length: Python says */
        return PyObject_CallOneArg(python, frame);
    PyObject *parsed[JSON_KEY_COUNT] = {NULL};
    int usual = rmq_json_header(p + 4, header_length, parsed);
    if (usual <= 0)
        return usual < 0 ? NULL : PyObject_CallOneArg(python, frame);
    PyObject *body = PyBytes_FromStringAndSize((const char *)p + 4 + header_length,
                                               size - 4 - header_length);
    PyObject *command = body == NULL ? NULL : command_type->tp_new(command_type, EMPTY_TUPLE, NULL);
    if (command == NULL)
        goto failed;
    /* code, opaque, flag, ext_fields, body, remark, language, version, serialize_type; an
     * absent key's default (a null extFields or remark is None) */
#define PARSED(key, absent) (parsed[key] != NULL ? parsed[key] : (absent))
    PyObject *attrs[COMMAND_ATTR_COUNT] = {
        PARSED(JSON_CODE, ZERO), PARSED(JSON_OPAQUE, ZERO), PARSED(JSON_FLAG, ZERO),
        PARSED(JSON_EXT_FIELDS, Py_None), body, PARSED(JSON_REMARK, Py_None),
        PARSED(JSON_LANGUAGE, JAVA), PARSED(JSON_VERSION, ZERO), ZERO};
#undef PARSED
    for (int i = 0; i < COMMAND_ATTR_COUNT; i++) {
        if (set_attribute(command, COMMAND_ATTR[i], attrs[i]) < 0) {
            Py_CLEAR(command);
            goto failed;
        }
    }
failed:
    Py_XDECREF(body);
    for (int i = 0; i < JSON_KEY_COUNT; i++)
        Py_XDECREF(parsed[i]);
    return command;
}

PyDoc_STRVAR(split_frames_doc,
"split_frames(python, data, max_frame_length)\n\n"
"rmqproto.codec.frame.python_split_frames for bytes or a bytearray whose length\n"
"prefixes are all good; every other call goes to python (python_split_frames).");

static PyObject *
split_frames(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 3, "split_frames(python, data, max_frame_length)") < 0)
        return NULL;
    PyObject *python = args[0], *data = args[1];
    int is_bytes = PyBytes_CheckExact(data), overflow = 1;
    long long max_length = PyLong_CheckExact(args[2])
        ? PyLong_AsLongLongAndOverflow(args[2], &overflow) : -1;
    if (max_length == -1 && PyErr_Occurred())
        PyErr_Clear();
    if ((!is_bytes && !PyByteArray_CheckExact(data)) || overflow || max_length < 0)
        return PyObject_Vectorcall(python, args + 1, 2, NULL);
    PyObject *frames = PyList_New(0);
    if (frames == NULL)
        return NULL;
    Py_ssize_t pos = 0;
    for (;;) {
        /* read again after each allocation, which could run code that resizes a bytearray */
        const unsigned char *p = (const unsigned char *)(
            is_bytes ? PyBytes_AS_STRING(data) : PyByteArray_AS_STRING(data));
        Py_ssize_t size = is_bytes ? PyBytes_GET_SIZE(data) : PyByteArray_GET_SIZE(data);
        if (size - pos < 4)
            break;
        int32_t length = read_int(p + pos);
        if (length < 4 || (long long)length + 4 > max_length) {  /* Python says what is wrong */
            Py_DECREF(frames);
            return PyObject_Vectorcall(python, args + 1, 2, NULL);
        }
        if (pos + 4 + (Py_ssize_t)length > size)
            break;
        PyObject *frame = PyBytes_FromStringAndSize((const char *)p + pos + 4, length);
        if (frame == NULL || PyList_Append(frames, frame) < 0) {
            Py_XDECREF(frame);
            Py_DECREF(frames);
            return NULL;
        }
        Py_DECREF(frame);
        pos += 4 + (Py_ssize_t)length;
    }
    return Py_BuildValue("(NnO)", frames, pos, Py_None);
}

/* ---------------------------------------------------------------- response frames */

#define MAX_RESPONSE_VALUES 16
#define MAX_HEADER_LENGTH 0xFFFFFF

/* value in decimal into out (room for 20 digits and a sign); its length. */
static Py_ssize_t
write_decimal(char *out, long long value)
{
    char reversed[20];
    unsigned long long magnitude = value < 0 ? 0ULL - (unsigned long long)value
                                             : (unsigned long long)value;
    int n = 0;
    do {
        reversed[n++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    Py_ssize_t length = 0;
    if (value < 0)
        out[length++] = '-';
    while (n)
        out[length++] = reversed[--n];
    return length;
}

/* The text of a value: an int in decimal (into digits) or an ASCII str; 0 for anything
 * else (Python decides). */
static int
value_text(PyObject *value, char *digits, const char **text, Py_ssize_t *length)
{
    if (PyLong_Check(value)) {
        int overflow;
        long long n = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow || (n == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        *text = digits;
        *length = write_decimal(digits, n);
        return 1;
    }
    if (PyUnicode_CheckExact(value) && PyUnicode_IS_ASCII(value)) {
        *text = (const char *)PyUnicode_DATA(value);
        *length = PyUnicode_GET_LENGTH(value);
        return 1;
    }
    return 0;
}

PyDoc_STRVAR(response_frame_doc,
"response_frame(plan, *values)\n\n"
"rmqproto.codec.frame.python_response_frame for up to 16 values, each an int within\n"
"64 bits or an ASCII str. plan is (parts, order, python_response_frame); every other\n"
"call goes to python_response_frame.");

static PyObject *
response_frame(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs >= 1 && PyTuple_CheckExact(args[0]) && PyTuple_GET_SIZE(args[0]) == 3
                     && PyTuple_CheckExact(PyTuple_GET_ITEM(args[0], 0))
                     && PyTuple_CheckExact(PyTuple_GET_ITEM(args[0], 1)),
                     "response_frame(plan, *values): plan is (parts, order, python)") < 0)
        return NULL;
    PyObject *parts = PyTuple_GET_ITEM(args[0], 0), *order = PyTuple_GET_ITEM(args[0], 1);
    PyObject *python = PyTuple_GET_ITEM(args[0], 2);
    Py_ssize_t count = nargs - 1;
    if (count > MAX_RESPONSE_VALUES || PyTuple_GET_SIZE(order) != count
            || PyTuple_GET_SIZE(parts) != count + 1)
        return PyObject_Vectorcall(python, args, nargs, NULL);
    char digits[MAX_RESPONSE_VALUES][24];
    const char *text[MAX_RESPONSE_VALUES];
    Py_ssize_t length[MAX_RESPONSE_VALUES];
    Py_ssize_t size = 0;
    for (Py_ssize_t i = 0; i <= count; i++) {
        PyObject *part = PyTuple_GET_ITEM(parts, i);
        if (!PyBytes_CheckExact(part))
            return PyObject_Vectorcall(python, args, nargs, NULL);
        size += PyBytes_GET_SIZE(part);
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *index = PyTuple_GET_ITEM(order, i);
        Py_ssize_t at = PyLong_CheckExact(index) ? PyLong_AsSsize_t(index) : -1;
        if (at == -1 && PyErr_Occurred())
            PyErr_Clear();
        if (at < 0 || at >= count || !value_text(args[1 + at], digits[i], &text[i], &length[i]))
            return PyObject_Vectorcall(python, args, nargs, NULL);
        size += length[i];
    }
    if (size > MAX_HEADER_LENGTH)
        return PyObject_Vectorcall(python, args, nargs, NULL);
    PyObject *frame = PyBytes_FromStringAndSize(NULL, 8 + size);
    if (frame == NULL)
        return NULL;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(frame);
    write_int(p, (int32_t)(4 + size));
    write_int(p + 4, (int32_t)size);  /* serialize type JSON, header length */
    p += 8;
    for (Py_ssize_t i = 0; i <= count; i++) {
        PyObject *part = PyTuple_GET_ITEM(parts, i);
        memcpy(p, PyBytes_AS_STRING(part), PyBytes_GET_SIZE(part));
        p += PyBytes_GET_SIZE(part);
        if (i < count) {
            memcpy(p, text[i], length[i]);
            p += length[i];
        }
    }
    return frame;
}

/* ---------------------------------------------------------------- the send processor */

/* What a record of SEND_MESSAGE(_V2) gets besides its arguments: MESSAGE_MAGIC_CODE_V2 and
 * the born host of a connection without one. */
static PyObject *MAGIC_CODE_V2, *DEFAULT_BORN_HOST;
#define MESSAGE_MAGIC_CODE_V2 (-626843477)
#define WAIT_NAME USUAL_NAME[3]
#define CLUSTER_NAME USUAL_NAME[4]
#define TRAN_MSG_NAME USUAL_NAME[13]
/* The most properties send_record orders itself (more go to Python). */
#define MAX_ORDERED 64

static int
set_attribute(PyObject *object, PyObject *name, PyObject *value)
{
    /* what PyObject_GenericSetAttr does for a writable object slot: its member descriptor
     * (a data descriptor, so ahead of any instance dict) sets it (PyMember_SetOne) */
    PyTypeObject *type = Py_TYPE(object);
    Py_ssize_t offset = type->tp_setattro == PyObject_GenericSetAttr && PyUnicode_CheckExact(name)
        ? slot_offset(type, _PyType_Lookup(type, name)) : 0;
    if (offset == 0)
        return PyObject_SetAttr(object, name, value);
    Py_XSETREF(*(PyObject **)((char *)object + offset), Py_NewRef(value));
    return 0;
}

/* dict[key] when key is the key of the item after *cursor (a PyDict_Next position), which
 * then moves past it; NULL when that item has another key (or is not there), with no error
 * set. Looking up keys in the order a dict lists them so costs no hashing nor probing. */
static PyObject *
item_in_order(PyObject *dict, Py_ssize_t *cursor, PyObject *key)
{
    Py_ssize_t pos = *cursor;
    PyObject *found, *value;
    if (!PyDict_Next(dict, &pos, &found, &value))
        return NULL;
    /* exact strs: equal when their canonical forms (length, kind, data) are */
    if (found != key && !(PyUnicode_CheckExact(found) && PyUnicode_CheckExact(key)
                          && PyUnicode_GET_LENGTH(found) == PyUnicode_GET_LENGTH(key)
                          && PyUnicode_KIND(found) == PyUnicode_KIND(key)
                          && memcmp(PyUnicode_DATA(found), PyUnicode_DATA(key),
                                    PyUnicode_GET_LENGTH(key) * PyUnicode_KIND(key)) == 0))
        return NULL;
    *cursor = pos;
    return value;
}

static int
send_init(void)
{
    MAGIC_CODE_V2 = PyLong_FromLong(MESSAGE_MAGIC_CODE_V2);
    DEFAULT_BORN_HOST = Py_BuildValue("(si)", "127.0.0.1", 0);
    return MAGIC_CODE_V2 == NULL || DEFAULT_BORN_HOST == NULL ? -1 : 0;
}

/* properties (str names, at most MAX_ORDERED) as a new dict in the order a default
 * java.util.HashMap iterates them (rmqproto.codec.fastjson.java_hashmap_order), without
 * drop, which still counts for the capacity (Java removes it after inserting it). */
static PyObject *
hashmap_ordered(PyObject *properties, PyObject *drop)
{
    PyObject *names[MAX_ORDERED], *values[MAX_ORDERED];
    uint32_t buckets[MAX_ORDERED];
    Py_ssize_t n = 0, pos = 0;
    uint32_t capacity = 16;
    while (PyDict_GET_SIZE(properties) > (Py_ssize_t)(capacity * 3 / 4))
        capacity *= 2;
    PyObject *name, *value;
    while (PyDict_Next(properties, &pos, &name, &value)) {
        uint32_t h = hash_continued(0, name, 0, PyUnicode_GET_LENGTH(name));
        uint32_t bucket = (h ^ (h >> 16)) & (capacity - 1);
        Py_ssize_t at = n++;  /* insertion sort: stable, as within a bucket Java keeps order */
        for (; at > 0 && buckets[at - 1] > bucket; at--) {
            names[at] = names[at - 1];
            values[at] = values[at - 1];
            buckets[at] = buckets[at - 1];
        }
        names[at] = name;
        values[at] = value;
        buckets[at] = bucket;
    }
    PyObject *ordered = PyDict_New();
    for (Py_ssize_t i = 0; ordered != NULL && i < n; i++) {
        /* a name is drop's interned object unless its text was not all Latin-1 */
        int dropped = names[i] == drop
            || (PyUnicode_GET_LENGTH(names[i]) == PyUnicode_GET_LENGTH(drop)
                && PyUnicode_Compare(names[i], drop) == 0);
        if (!dropped && PyDict_SetItem(ordered, names[i], values[i]) < 0)
            Py_CLEAR(ordered);
    }
    return ordered;
}

/* Whether host is an (ip str, port) tuple, whose ip tells the sysFlag IPv6 bit. */
static int
host_ok(PyObject *host)
{
    return PyTuple_CheckExact(host) && PyTuple_GET_SIZE(host) == 2
        && PyUnicode_CheckExact(PyTuple_GET_ITEM(host, 0));
}

static int
is_ipv6(PyObject *host)
{
    PyObject *ip = PyTuple_GET_ITEM(host, 0);
    return PyUnicode_FindChar(ip, ':', 0, PyUnicode_GET_LENGTH(ip), 1) >= 0;
}

/* 1 with *flag set when value (a property's, NULL when absent: absent) is ASCII, *flag
 * telling whether it is "true" in any case; 0 when Python must decide. */
static int
property_true(PyObject *value, int absent, int *flag)
{
    if (value == NULL) {
        *flag = absent;
        return 1;
    }
    return PyUnicode_CheckExact(value) && java_boolean(value, flag);
}

PyDoc_STRVAR(send_record_doc,
"send_record(plan, topic, body, properties_text, cluster, queue_id, flag, sys_flag,\n"
"            born_timestamp, born_host, store_host, reconsume_times)\n\n"
"rmqproto.broker.processors.send.python_send_record. plan is (MessageRecord,\n"
"python_send_record); python_send_record decides every call this does not (an argument\n"
"of another type, a topic or WAIT / TRAN_MSG value not ASCII, more than 64 properties).");

static PyObject *
send_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 12 && PyTuple_CheckExact(args[0]) && PyTuple_GET_SIZE(args[0]) == 2
                     && PyType_Check(PyTuple_GET_ITEM(args[0], 0))
                     && ((PyTypeObject *)PyTuple_GET_ITEM(args[0], 0))->tp_new
                        == PyBaseObject_Type.tp_new,
                     "send_record(plan, topic, body, properties_text, cluster, queue_id, flag, "
                     "sys_flag, born_timestamp, born_host, store_host, reconsume_times): plan is "
                     "(a record type made by object.__new__, python)") < 0)
        return NULL;
    PyTypeObject *type = (PyTypeObject *)PyTuple_GET_ITEM(args[0], 0);
    PyObject *python = PyTuple_GET_ITEM(args[0], 1);
    PyObject *topic = args[1], *text = args[3], *born_host = args[9], *store_host = args[10];
    PyObject *reconsume_times = args[11] == Py_None ? ZERO : args[11];
    if (born_host == Py_None)
        born_host = DEFAULT_BORN_HOST;
    if (!PyUnicode_CheckExact(topic) || !PyUnicode_IS_ASCII(topic)
            || (text != Py_None && !PyUnicode_CheckExact(text)) || !PyLong_CheckExact(args[7])
            || !host_ok(born_host) || !host_ok(store_host) || !PyLong_CheckExact(reconsume_times))
        return PyObject_Vectorcall(python, args, nargs, NULL);
    long sys_flag = PyLong_AsLong(args[7]);
    if (sys_flag == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return PyObject_Vectorcall(python, args, nargs, NULL);
    }
    PyObject *properties = text == Py_None ? PyDict_New() : properties_of_text(text);
    if (properties == NULL || PyDict_SetItem(properties, CLUSTER_NAME, args[4]) < 0) {
        Py_XDECREF(properties);
        return NULL;
    }
    int transaction, wait;
    if (!property_true(PyDict_GetItemWithError(properties, TRAN_MSG_NAME), 0, &transaction)
            || !property_true(PyDict_GetItemWithError(properties, WAIT_NAME), 1, &wait)
            || PyDict_GET_SIZE(properties) > MAX_ORDERED) {
        Py_DECREF(properties);
        return PyObject_Vectorcall(python, args, nargs, NULL);
    }
    if (transaction) {  /* a prepared transaction message: the caller's */
        Py_DECREF(properties);
        Py_RETURN_NONE;
    }
    PyObject *values[FIELD_COUNT] = {NULL};
    values[F_PROPERTIES] = hashmap_ordered(properties, WAIT_NAME);
    Py_DECREF(properties);
    values[F_SYS_FLAG] = PyLong_FromLong(
        (sys_flag & ~HOST_FLAGS) | (is_ipv6(born_host) ? BORNHOST_V6_FLAG : 0)
        | (is_ipv6(store_host) ? STOREHOSTADDRESS_V6_FLAG : 0));
    PyObject *record = NULL;
    if (values[F_PROPERTIES] != NULL && values[F_SYS_FLAG] != NULL)
        record = PyBaseObject_Type.tp_new(type, EMPTY_TUPLE, NULL);
    if (record != NULL) {
        values[F_TOPIC] = topic;
        values[F_BODY] = args[2];
        values[F_QUEUE_ID] = args[5];
        values[F_FLAG] = args[6];
        values[F_QUEUE_OFFSET] = values[F_COMMIT_LOG_OFFSET] = values[F_STORE_TIMESTAMP] = ZERO;
        values[F_PREPARED] = values[F_BODY_CRC] = ZERO;
        values[F_BORN_TIMESTAMP] = args[8];
        values[F_BORN_HOST] = born_host;
        values[F_STORE_HOST] = store_host;
        values[F_RECONSUME_TIMES] = reconsume_times;
        values[F_MAGIC_CODE] = PyUnicode_GET_LENGTH(topic) <= MAX_TOPIC_LENGTH_V1
            ? MAGIC_CODE_V1 : MAGIC_CODE_V2;
        values[F_STORE_SIZE] = Py_None;
        /* every field of ALL_FIELDS but the last, stored_properties (a BatchRecord's) */
        if (set_fields(record, ALL_FIELDS, FIELD_COUNT - 1, values) < 0)
            Py_CLEAR(record);
    }
    Py_XDECREF(values[F_PROPERTIES]);
    Py_XDECREF(values[F_SYS_FLAG]);
    if (record == NULL)
        return NULL;
    PyObject *made = PyTuple_Pack(2, record, wait ? Py_True : Py_False);
    Py_DECREF(record);
    return made;
}

/* Bytes above which crc32 lets other threads run meanwhile (zlib.crc32: 5 KiB). */
#define CRC32_WITHOUT_GIL (64 * 1024)

PyDoc_STRVAR(crc32_doc,
"crc32(data, value=0, /) -> int\n\n"
"zlib.crc32: the CRC32 of a bytes-like object, continuing from value, folded with the\n"
"CPU's carry-less multiply where it has one (crc32_folds()); other threads run during\n"
"one of more than 64 KiB.");

static PyObject *
crc32(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 1 || nargs == 2, "crc32 takes data and an optional value") < 0)
        return NULL;
    uint32_t value = 0;
    if (nargs == 2) {
        unsigned long given = PyLong_AsUnsignedLongMask(args[1]);
        if (given == (unsigned long)-1 && PyErr_Occurred())
            return NULL;
        value = (uint32_t)given;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (view.len > CRC32_WITHOUT_GIL) {  /* the export keeps the buffer from being resized */
        Py_BEGIN_ALLOW_THREADS
        value = rmq_crc32(value, view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    }
    else {
        value = rmq_crc32(value, view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(value);
}

PyDoc_STRVAR(crc32_folds_doc,
"crc32_folds() -> bool\n\n"
"Whether crc32 folds with PCLMULQDQ on this CPU (else it goes a byte a step).");

static PyObject *
crc32_folds(PyObject *module, PyObject *unused)
{
    return PyBool_FromLong(rmq_crc32_folds());
}

static PyMethodDef methods[] = {
    {"crc32", (PyCFunction)(void (*)(void))crc32, METH_FASTCALL, crc32_doc},
    {"crc32_folds", crc32_folds, METH_NOARGS, crc32_folds_doc},
    {"string_to_properties", (PyCFunction)string_to_properties, METH_O,
     string_to_properties_doc},
    {"properties_utf8", (PyCFunction)properties_utf8, METH_O, properties_utf8_doc},
    {"pick_properties", (PyCFunction)(void (*)(void))pick_properties, METH_FASTCALL,
     pick_properties_doc},
    {"java_string_hash_continued", (PyCFunction)(void (*)(void))java_string_hash_continued,
     METH_FASTCALL, java_string_hash_continued_doc},
    {"take_usual_records", (PyCFunction)(void (*)(void))take_usual_records, METH_FASTCALL,
     take_usual_records_doc},
    {"put_index_hashes", (PyCFunction)(void (*)(void))put_index_hashes, METH_FASTCALL,
     put_index_hashes_doc},
    {"requests_of_fields", (PyCFunction)(void (*)(void))requests_of_fields, METH_FASTCALL,
     requests_of_fields_doc},
    {"index_entries", (PyCFunction)(void (*)(void))index_entries, METH_FASTCALL,
     index_entries_doc},
    {"dispatch_usual_records", (PyCFunction)(void (*)(void))dispatch_usual_records,
     METH_FASTCALL, dispatch_usual_records_doc},
    {"encode_units", (PyCFunction)encode_units, METH_O, encode_units_doc},
    {"put_unit_run", (PyCFunction)(void (*)(void))put_unit_run, METH_FASTCALL,
     put_unit_run_doc},
    {"consume_queue_runs", (PyCFunction)consume_queue_runs, METH_O, consume_queue_runs_doc},
    {"transfer_units", (PyCFunction)(void (*)(void))transfer_units, METH_FASTCALL,
     transfer_units_doc},
    {"batch_records", (PyCFunction)(void (*)(void))batch_records, METH_FASTCALL,
     batch_records_doc},
    {"fix_batch_host_flags", (PyCFunction)(void (*)(void))fix_batch_host_flags,
     METH_FASTCALL, fix_batch_host_flags_doc},
    {"check_batch_records", (PyCFunction)(void (*)(void))check_batch_records, METH_FASTCALL,
     check_batch_records_doc},
    {"check_usual_message", (PyCFunction)(void (*)(void))check_usual_message, METH_FASTCALL,
     check_usual_message_doc},
    {"check_message_record", (PyCFunction)(void (*)(void))check_message_record, METH_FASTCALL,
     check_message_record_doc},
    {"write_stored_batch", (PyCFunction)(void (*)(void))write_stored_batch, METH_FASTCALL,
     write_stored_batch_doc},
    {"usual_batch_prototype", (PyCFunction)usual_batch_prototype, METH_O,
     usual_batch_prototype_doc},
    {"measure_packed_batch", (PyCFunction)(void (*)(void))measure_packed_batch,
     METH_FASTCALL, measure_packed_batch_doc},
    {"write_packed_batch", (PyCFunction)(void (*)(void))write_packed_batch, METH_FASTCALL,
     write_packed_batch_doc},
    {"decode_header", (PyCFunction)(void (*)(void))decode_header, METH_FASTCALL,
     decode_header_doc},
    {"decode_frame", (PyCFunction)(void (*)(void))decode_frame, METH_FASTCALL,
     decode_frame_doc},
    {"split_frames", (PyCFunction)(void (*)(void))split_frames, METH_FASTCALL,
     split_frames_doc},
    {"response_frame", (PyCFunction)(void (*)(void))response_frame, METH_FASTCALL,
     response_frame_doc},
    /* the send processor */
    {"send_record", (PyCFunction)(void (*)(void))send_record, METH_FASTCALL, send_record_doc},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, hareceiver_add_type},
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "rmqproto.codec._speedups",
    .m_doc = "C versions of codec hot paths (see each function's Python twin), and an HA "
             "slave's receive loop (HAReceiver).",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    if (EMPTY == NULL) {
        if ((EMPTY = PyUnicode_InternFromString("")) == NULL)
            return NULL;
        for (int i = 0; i < USUAL_NAME_COUNT; i++) {
            if ((USUAL_NAME[i] = PyUnicode_InternFromString(USUAL_NAMES[i])) == NULL)
                return NULL;
        }
        KEYS = USUAL_NAME[0];
        TAGS = USUAL_NAME[1];
        UNIQ_KEY = USUAL_NAME[2];
        for (int i = 0; i < FIELD_COUNT; i++) {
            if ((FIELD[i] = PyUnicode_InternFromString(FIELD_NAMES[i])) == NULL)
                return NULL;
        }
        rmq_crc32_init();
        for (int i = 0; i < COMMAND_ATTR_COUNT; i++) {
            if ((COMMAND_ATTR[i] = PyUnicode_InternFromString(COMMAND_ATTR_NAMES[i])) == NULL)
                return NULL;
        }
        if ((SEGMENT_FROM = PyUnicode_InternFromString("file_from_offset")) == NULL
                || (SEGMENT_WROTE = PyUnicode_InternFromString("wrote_position")) == NULL
                || (SEGMENT_MM = PyUnicode_InternFromString("mm")) == NULL)
            return NULL;
        if ((JAVA = PyUnicode_InternFromString("JAVA")) == NULL
                || (ZERO = PyLong_FromLong(0)) == NULL)
            return NULL;
        MAGIC_CODE_V1 = PyLong_FromLong(MESSAGE_MAGIC_CODE);
        EMPTY_TUPLE = PyTuple_New(0);
        if (MAGIC_CODE_V1 == NULL || EMPTY_TUPLE == NULL || send_init() < 0
                || rmq_json_header_init() < 0)
            return NULL;
    }
    return PyModuleDef_Init(&module);
}
