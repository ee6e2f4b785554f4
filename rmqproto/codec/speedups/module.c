/*
 * rmqproto.codec._speedups: C versions of codec, store and broker hot paths, and an HA
 * slave's receive loop. This file makes the names the others share and puts each file's
 * functions into the one module; the functions are in the file named after the Python
 * module they speed up (docs/speedups.md).
 */
#include "speedups.h"
#include "hareceiver.h"
#include "jsonheader.h"

const char *const USUAL_NAMES[USUAL_NAME_COUNT] = {
    "KEYS", "TAGS", "UNIQ_KEY", "WAIT", "CLUSTER", "DELAY", "MSG_REGION", "TRACE_ON",
    "MIN_OFFSET", "MAX_OFFSET", "REAL_TOPIC", "REAL_QID", "RETRY_TOPIC", "TRAN_MSG", "PGROUP",
};
PyObject *USUAL_NAME[USUAL_NAME_COUNT];
PyObject *EMPTY, *EMPTY_TUPLE, *ZERO, *MAGIC_CODE_V1;

const char *const FIELD_NAMES[FIELD_COUNT] = {
    "topic", "body", "properties", "queue_id", "flag", "queue_offset", "commit_log_offset",
    "store_timestamp", "sys_flag", "born_timestamp", "born_host", "store_host",
    "reconsume_times", "prepared_transaction_offset", "body_crc", "magic_code", "_store_size",
    "stored_properties",
};
PyObject *FIELD[FIELD_COUNT];
const int ALL_FIELDS[FIELD_COUNT] = {
    F_TOPIC, F_BODY, F_PROPERTIES, F_QUEUE_ID, F_FLAG, F_QUEUE_OFFSET, F_COMMIT_LOG_OFFSET,
    F_STORE_TIMESTAMP, F_SYS_FLAG, F_BORN_TIMESTAMP, F_BORN_HOST, F_STORE_HOST,
    F_RECONSUME_TIMES, F_PREPARED, F_BODY_CRC, F_MAGIC_CODE, F_STORE_SIZE,
    F_STORED_PROPERTIES};

/* Intern count names into objects: 0, or -1 with an error set. */
static int
intern_all(const char *const *names, PyObject **objects, int count)
{
    for (int i = 0; i < count; i++) {
        if ((objects[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return -1;
    }
    return 0;
}

/* The names and objects every file shares, then each file's own; once a process. */
static int
init_shared(void)
{
    if ((EMPTY = PyUnicode_InternFromString("")) == NULL
            || intern_all(USUAL_NAMES, USUAL_NAME, USUAL_NAME_COUNT) < 0
            || intern_all(FIELD_NAMES, FIELD, FIELD_COUNT) < 0
            || (ZERO = PyLong_FromLong(0)) == NULL
            || (MAGIC_CODE_V1 = PyLong_FromLong(MESSAGE_MAGIC_CODE)) == NULL
            || (EMPTY_TUPLE = PyTuple_New(0)) == NULL)
        return -1;
    rmq_crc32_init();
    return frame_init() < 0 || transfer_init() < 0 || send_init() < 0
        || rmq_json_header_init() < 0 ? -1 : 0;
}

/* The functions of every file, then the HAReceiver type. */
static int
exec_module(PyObject *module)
{
    PyMethodDef *const tables[] = {
        javalang_methods, message_methods, indexfile_methods, dispatch_methods,
        indexservice_methods, consumequeue_methods, transfer_methods, message_batch_methods,
        defaultstore_methods, commitlog_methods, headers_methods, frame_methods, send_methods,
        columns_methods,
    };
    for (int i = 0; i < COUNT(tables); i++) {
        if (PyModule_AddFunctions(module, tables[i]) < 0)
            return -1;
    }
    return hareceiver_add_type(module);
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "rmqproto.codec._speedups",
    .m_doc = "C versions of codec hot paths (see each function's Python twin), and an HA "
             "slave's receive loop (HAReceiver).",
    .m_size = 0,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    static int ready;
    if (!ready) {
        if (init_shared() < 0)
            return NULL;
        ready = 1;
    }
    return PyModuleDef_Init(&module);
}
