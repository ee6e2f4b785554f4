/*
 * rmqproto.store.indexservice: the index entries of dispatch requests (IndexService#buildIndex:
 * the UNIQ_KEY and each KEYS word, hashed as "topic#key").
 */
#include "speedups.h"

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

PyMethodDef indexservice_methods[] = {
    FASTCALL_METHOD(index_entries),
    END_OF_METHODS,
};
