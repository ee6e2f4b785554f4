/*
 * rmqproto.store.defaultstore: the host flags of a batch's records
 * (DefaultMessageStore._fix_batch_host_flags).
 */
#include "speedups.h"

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

PyMethodDef defaultstore_methods[] = {
    FASTCALL_METHOD(fix_batch_host_flags),
    END_OF_METHODS,
};
