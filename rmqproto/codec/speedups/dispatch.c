/*
 * rmqproto.store.dispatch: the reput's dispatch requests (CommitLogDispatcher) and the
 * consume-queue units they make, and dispatch_usual_records, which makes both (and the
 * index entries of rmqproto.store.indexservice) straight from the commit log's bytes.
 */
#include "speedups.h"

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
            PyObject *tags = PyDict_GetItemWithError(properties, USUAL_NAME[NAME_TAGS]);
            if (tags == NULL && PyErr_Occurred())
                goto failed;
            if (tags != NULL && require_str(tags, "TAGS") < 0)
                goto failed;
            uint32_t h = tags == NULL ? 0 : hash_continued(0, tags, 0, PyUnicode_GET_LENGTH(tags));
            tags_code = PyLong_FromLong((int32_t)h);
        }
        if (tags_code == NULL)
            goto failed;
        PyObject *keys = PyDict_GetItemWithError(properties, USUAL_NAME[NAME_KEYS]);
        if (keys == NULL && PyErr_Occurred()) {
            Py_DECREF(tags_code);
            goto failed;
        }
        PyObject *uniq_key = PyDict_GetItemWithError(properties, USUAL_NAME[NAME_UNIQ_KEY]);
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
        Py_ssize_t eq, end = fragment_end(p, n, start, &eq);
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
    return all_ascii(tags->p, tags->length) && all_ascii(keys->p, keys->length)
        && all_ascii(uniq->p, uniq->length);
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
    Py_ssize_t scan[3];  /* position, stop_at, max_count */
    long rollback;
    if (ssize_args(args + 1, 3, scan) < 0
            || ((rollback = PyLong_AsLong(args[6])) == -1 && PyErr_Occurred()))
        return NULL;
    Py_ssize_t pos = scan[0], stop_at = scan[1];
    Py_ssize_t max_count = Py_MAX(0, Py_MIN(scan[2], MAX_DISPATCH_RECORDS));
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
        if (same_span(topic, schedule) || !all_ascii(topic.p, topic.length)
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
            write_unit(units + unit_count * CQ_UNIT_SIZE, offset, (int32_t)at.total,
                       (int32_t)(tags.length ? hash_bytes(0, tags.p, tags.length) : 0));
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

PyMethodDef dispatch_methods[] = {
    FASTCALL_METHOD(requests_of_fields),
    ONE_ARG_METHOD(consume_queue_runs),
    FASTCALL_METHOD(dispatch_usual_records),
    END_OF_METHODS,
};
