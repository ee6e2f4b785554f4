/*
 * rmqproto.store.commitlog: the checks of a put (CommitLog#putMessage,
 * CommitLog#putMessages) for the usual message and batch, which then get their store size.
 */
#include "speedups.h"

PyDoc_STRVAR(check_batch_records_doc,
"check_batch_records(records, topic, queue_id, topic_length) -> (list, int) or None\n\n"
"The loop of rmqproto.store.commitlog.check_batch for records that pass it: the stored\n"
"properties bytes of each record, which gets the version-1 magic code and its store\n"
"size, and the records' total size.  None when a record is of another topic or queue,\n"
"is a transaction's, or has no stored properties bytes or more than 32767 of them (the\n"
"caller checks the records in Python to say why).");

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

PyDoc_STRVAR(check_message_record_doc,
"check_message_record(record, topic_length, max_message_size) -> (bytes, int) or None\n\n"
"rmqproto.store.commitlog.check_message after the topic check, for a record that passes\n"
"it: its properties_utf8 bytes and its store size, which the record gets, with the\n"
"version-1 magic code.  None when its properties are not a dict of str, its body is not\n"
"bytes, its sys flag not an int64, topic_length not within 0..127 or when a size check\n"
"fails (the caller checks the record in Python to say why).");

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
        int delayed = PyDict_Contains(values[3], USUAL_NAME[NAME_DELAY]);
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

PyMethodDef commitlog_methods[] = {
    FASTCALL_METHOD(check_batch_records),
    FASTCALL_METHOD(check_usual_message),
    FASTCALL_METHOD(check_message_record),
    END_OF_METHODS,
};
