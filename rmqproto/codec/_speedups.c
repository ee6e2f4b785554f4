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
            PyObject *name = PyUnicode_Substring(text, start, eq);
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

/* h continued over the UTF-16 code units of text[start:end]. */
static uint32_t
hash_continued(uint32_t h, PyObject *text, Py_ssize_t start, Py_ssize_t end)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *units = data;
        for (Py_ssize_t i = start; i < end; i++)
            h = 31 * h + units[i];
        return h;
    }
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

PyDoc_STRVAR(java_string_hash_continued_doc,
"java_string_hash_continued(prefix_hash, text)\n\n"
"rmqproto.codec.javalang.java_string_hash_continued.");

static PyObject *
java_string_hash_continued(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError,
                        "java_string_hash_continued takes prefix_hash and text");
        return NULL;
    }
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

/* Whether the body's masked CRC32, computed by crc(memoryview), is expected. */
static int
body_crc_matches(PyObject *crc, const unsigned char *body, Py_ssize_t n, int32_t expected)
{
    PyObject *view = PyMemoryView_FromMemory((char *)body, n, PyBUF_READ);
    if (view == NULL)
        return -1;
    PyObject *value = PyObject_CallOneArg(crc, view);
    /* the memory is the caller's buffer: nothing may read it through the view later */
    PyObject *type, *error, *traceback;
    PyErr_Fetch(&type, &error, &traceback);
    PyObject *released = PyObject_CallMethod(view, "release", NULL);
    Py_DECREF(view);
    if (released == NULL) {
        Py_XDECREF(value);
        Py_XDECREF(type);
        Py_XDECREF(error);
        Py_XDECREF(traceback);
        return -1;
    }
    Py_DECREF(released);
    PyErr_Restore(type, error, traceback);
    if (value == NULL)
        return -1;
    long actual = PyLong_AsLong(value);
    Py_DECREF(value);
    if (actual == -1 && PyErr_Occurred())
        return -1;
    return actual == expected;
}

/* The dispatch-fields tuple of the usual record at buffer[pos:pos + total]; NULL with no
 * error set when the record is not a usual one. */
static PyObject *
usual_record_fields(const unsigned char *buffer, Py_ssize_t size, Py_ssize_t pos,
                    PyObject *crc, TopicCache *topics, int *failed)
{
    const unsigned char *r = buffer + pos;
    int64_t total = read_int(r);
    int64_t sys_flag = read_int(r + 36);
    int64_t body_length = read_int(r + 84);
    int64_t end = pos + total;
    int64_t topic_pos = pos + FIXED_V1 + body_length + 1;  /* after the topic's length byte */
    if (read_int(r + 4) != MESSAGE_MAGIC_CODE || total < MIN_RECORD_LENGTH || end > size
            || (sys_flag & HOST_FLAGS) || body_length < 0 || topic_pos > end)
        return NULL;
    int64_t topic_length = buffer[topic_pos - 1];
    int64_t properties_pos = topic_pos + topic_length + 2;
    int64_t properties_length = end - properties_pos;
    if (topic_length > MAX_TOPIC_LENGTH_V1 || properties_length < 0
            || properties_length > MAX_PROPERTIES_LENGTH
            || buffer[properties_pos - 2] != (properties_length >> 8)
            || buffer[properties_pos - 1] != (properties_length & 0xFF))
        return NULL;
    int32_t body_crc = read_int(r + 8);
    if (crc != Py_None) {
        int matches = body_crc_matches(crc, r + FIXED_V1, body_length, body_crc);
        if (matches <= 0) {
            *failed = matches < 0;
            return NULL;
        }
    }
    PyObject *text = decode_text(buffer + properties_pos, properties_length);
    PyObject *properties = text == NULL ? NULL : properties_of_text(text);
    Py_XDECREF(text);
    if (properties == NULL) {
        *failed = 1;
        return NULL;
    }
    PyObject *topic = topic_text(topics, buffer + topic_pos, topic_length);
    if (topic == NULL) {
        Py_DECREF(properties);
        *failed = 1;
        return NULL;
    }
    PyObject *fields = Py_BuildValue("(NiLLLLLNL)", topic, read_int(r + 12),
                                     (long long)read_long(r + 20), (long long)read_long(r + 28),
                                     (long long)sys_flag, (long long)read_long(r + 56),
                                     (long long)read_long(r + 76), properties,
                                     (long long)total);
    if (fields == NULL)
        *failed = 1;
    return fields;
}

PyDoc_STRVAR(take_usual_records_doc,
"take_usual_records(buffer, position, stop_at, max_count, crc, out) -> position\n\n"
"Append to the list out the decode_dispatch_fields tuple of each record from position\n"
"on while the records are usual ones (version-1 magic code, IPv4 hosts, every check of\n"
"the record layout passing; with crc, a callable giving the masked CRC32 of a buffer,\n"
"the body's CRC too), position is below stop_at and out holds fewer than max_count\n"
"tuples; return the position after the last record appended.  The record found there\n"
"(or the end) is left for the caller to decide.");

static PyObject *
take_usual_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6 || !PyList_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "take_usual_records takes buffer, position, "
                        "stop_at, max_count, crc and a list");
        return NULL;
    }
    Py_ssize_t pos, stop_at, max_count;
    if ((pos = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred())
        return NULL;
    if ((stop_at = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred())
        return NULL;
    if ((max_count = PyLong_AsSsize_t(args[3])) == -1 && PyErr_Occurred())
        return NULL;
    PyObject *crc = args[4], *out = args[5];
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *buffer = view.buf;
    Py_ssize_t size = view.len;
    TopicCache topics = {.text = NULL};
    int failed = 0;
    while (pos >= 0 && pos < stop_at && size - pos >= FIXED_V1
           && PyList_GET_SIZE(out) < max_count) {
        PyObject *fields = usual_record_fields(buffer, size, pos, crc, &topics, &failed);
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
"buffer: put each (hash_code, phy_offset, store_timestamp) of entries from start on\n"
"while count < index_num.  It stops before an entry it cannot put as the Python loop\n"
"would (not a tuple of three ints, a hash outside int32, an offset or timestamp outside\n"
"a Java long, a position outside the buffer), leaving that entry to the caller.  The\n"
"header is left to the caller.");

static PyObject *
put_index_hashes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9 || (!PyList_Check(args[1]) && !PyTuple_Check(args[1]))) {
        PyErr_SetString(PyExc_TypeError, "put_index_hashes takes buffer, a list or tuple of "
                        "entries, start, index_num, slot_num, count, slot_count, "
                        "begin_timestamp and begin_phy_offset");
        return NULL;
    }
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
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE) < 0)
        return NULL;
    unsigned char *buffer = view.buf;
    long long size = view.len;
    long long entries_at = INDEX_HEADER_SIZE + slot_num * HASH_SLOT_SIZE;
    Py_ssize_t end = PySequence_Fast_GET_SIZE(entries);
    for (; i < end && count < index_num && slot_num > 0; i++) {
        PyObject *entry = PySequence_Fast_GET_ITEM(entries, i);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3)
            break;
        int ok = 1;
        int64_t key_hash = as_long(PyTuple_GET_ITEM(entry, 0), &ok);
        int64_t phy_offset = as_long(PyTuple_GET_ITEM(entry, 1), &ok);
        int64_t timestamp = as_long(PyTuple_GET_ITEM(entry, 2), &ok);
        if (!ok || key_hash < INT32_MIN || key_hash > INT32_MAX)
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
    return Py_BuildValue("(nLLLL)", i, count, slot_count, begin_timestamp, begin_phy_offset);
}

/* Property names the dispatch reads, made once. */
static PyObject *TAGS, *KEYS, *UNIQ_KEY, *EMPTY;

PyDoc_STRVAR(requests_of_fields_doc,
"requests_of_fields(fields, schedule_topic, schedule_tags_code)\n\n"
"rmqproto.store.dispatch.requests_of_fields: the request tuple of each fields tuple, the\n"
"tags code the TAGS hash; for records of schedule_topic it is\n"
"schedule_tags_code(topic, properties, store_timestamp).");

static PyObject *
requests_of_fields(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "requests_of_fields takes fields, schedule_topic "
                        "and schedule_tags_code");
        return NULL;
    }
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
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "index_entries takes requests, "
                        "newest_end_phy_offset and rollback_type");
        return NULL;
    }
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

static PyMethodDef methods[] = {
    {"string_to_properties", (PyCFunction)string_to_properties, METH_O,
     string_to_properties_doc},
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
    {"encode_units", (PyCFunction)encode_units, METH_O, encode_units_doc},
    {"consume_queue_runs", (PyCFunction)consume_queue_runs, METH_O, consume_queue_runs_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "rmqproto.codec._speedups",
    .m_doc = "C versions of codec hot paths (see each function's Python twin).",
    .m_size = 0,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    if (TAGS == NULL) {
        TAGS = PyUnicode_InternFromString("TAGS");
        KEYS = PyUnicode_InternFromString("KEYS");
        UNIQ_KEY = PyUnicode_InternFromString("UNIQ_KEY");
        EMPTY = PyUnicode_InternFromString("");
        if (TAGS == NULL || KEYS == NULL || UNIQ_KEY == NULL || EMPTY == NULL)
            return NULL;
    }
    return PyModuleDef_Init(&module);
}
