/*
 * rmqproto.broker.processors.send: the MessageRecord of a SEND_MESSAGE(_V2) request
 * (SendMessageProcessor#sendMessage), its properties in java.util.HashMap order.
 */
#include "speedups.h"

/* What a record of SEND_MESSAGE(_V2) gets besides its arguments: MESSAGE_MAGIC_CODE_V2 and
 * the born host of a connection without one. */
static PyObject *MAGIC_CODE_V2, *DEFAULT_BORN_HOST;
#define MESSAGE_MAGIC_CODE_V2 (-626843477)
#define WAIT_NAME USUAL_NAME[NAME_WAIT]
#define CLUSTER_NAME USUAL_NAME[NAME_CLUSTER]
#define TRAN_MSG_NAME USUAL_NAME[NAME_TRAN_MSG]
/* The most properties send_record orders itself (more go to Python). */
#define MAX_ORDERED 64

int
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

PyMethodDef send_methods[] = {
    FASTCALL_METHOD(send_record),
    END_OF_METHODS,
};
