/*
 * rmqproto.codec.message, its batches: the records of a SEND_BATCH_MESSAGE body
 * (MessageDecoder.decodeMessages), and a stored batch encoded straight into the commit
 * log's mapped buffer (CommitLog.DefaultAppendMessageCallback#doAppend for a batch).
 */
#include "speedups.h"
#include <arpa/inet.h>

#define BATCH_HEAD 20

/* What a batch record takes from the prototype, and what it starts at 0. */
static const int PROTOTYPE_FIELDS[] = {F_TOPIC, F_QUEUE_ID, F_SYS_FLAG, F_BORN_TIMESTAMP,
                                       F_BORN_HOST, F_STORE_HOST, F_RECONSUME_TIMES,
                                       F_MAGIC_CODE};
static const int ZERO_FIELDS[] = {F_QUEUE_OFFSET, F_COMMIT_LOG_OFFSET, F_STORE_TIMESTAMP,
                                  F_PREPARED, F_BODY_CRC};

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
    PyObject *properties = properties_of_bytes(own, n);
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
    if (!all_ascii(own, n))
        return 0;
    for (Py_ssize_t start = 0; start < n;) {
        Py_ssize_t eq, end = fragment_end(own, n, start, &eq);
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

/* Measure e (its body, flag and stored properties set), a record of overhead bytes
 * besides them, and compute its body CRC, adding its size to *total: 1, or 0 when it is
 * too large (stored properties over 32767 bytes, a record over 2 GiB). */
static int
measure_entry(StoredEntry *e, int64_t overhead, int64_t *total)
{
    Py_ssize_t stored = stored_length(&e->stored);
    e->size = overhead + e->body_length + stored;
    if (stored > MAX_PROPERTIES_LENGTH || e->size > INT32_MAX || *total > INT64_MAX - e->size)
        return 0;
    *total += e->size;
    e->crc = masked_crc32(e->body, e->body_length);
    return 1;
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
        goto other;
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
            goto other;
        if ((bodies[i] = get_field(record, F_BODY)) == NULL)
            goto decided;
        e->flag = long_field(record, F_FLAG, &ok);
        if (ok < 0)
            goto decided;
        if (!ok || !PyBytes_Check(bodies[i]) || !PyBytes_Check(props)
                || e->flag < INT32_MIN || e->flag > INT32_MAX)
            goto other;
        e->body = (const unsigned char *)PyBytes_AS_STRING(bodies[i]);
        e->body_length = PyBytes_GET_SIZE(bodies[i]);
        e->stored = whole_properties(props);
        if (!measure_entry(e, overhead, &total))
            goto other;
    }
    if (!entries_fit(&target, n, total))
        goto other;
    result = store_entries(&target, &shared, entries, n, records, record_properties, records);
    goto decided;
other:  /* declined; or, with shares < 0, failed reading the shared fields */
    result = shares < 0 ? NULL : Py_NewRef(Py_None);
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
        goto other;
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
        if (!measure_entry(e, overhead, &total))
            goto other;
    }
    if (pos != body_view.len || !entries_fit(&target, n, total))
        goto other;
    properties.entries = entries;
    result = store_entries(&target, &shared, entries, n, NULL, packed_properties, &properties);
    goto decided;
other:  /* declined; or, with shares < 0, failed reading the shared fields */
    result = shares < 0 ? NULL : Py_NewRef(Py_None);
decided:
    PyMem_Free(entries);
    clear_pattern(&properties.pattern);
    clear_shared(&shared);
    PyBuffer_Release(&body_view);
    PyBuffer_Release(&target.view);
    return result;
}

PyMethodDef message_batch_methods[] = {
    FASTCALL_METHOD(batch_records),
    FASTCALL_METHOD(write_stored_batch),
    ONE_ARG_METHOD(usual_batch_prototype),
    FASTCALL_METHOD(measure_packed_batch),
    FASTCALL_METHOD(write_packed_batch),
    END_OF_METHODS,
};
