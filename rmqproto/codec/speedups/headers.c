/*
 * rmqproto.codec.headers: a request's custom header decoded from its extFields
 * (RemotingCommand#decodeCommandCustomHeader), as the written-out Python decoder does.
 */
#include "speedups.h"

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

PyMethodDef headers_methods[] = {
    FASTCALL_METHOD(decode_header),
    END_OF_METHODS,
};
