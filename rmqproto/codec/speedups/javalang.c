/*
 * rmqproto.codec.javalang: Java's String.hashCode continued over a str, and zlib's
 * crc32 (UtilAll.crc32 masks it) folded with the CPU's carry-less multiply (crc32.c).
 */
#include "speedups.h"

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

PyMethodDef javalang_methods[] = {
    FASTCALL_METHOD(crc32),
    {"crc32_folds", crc32_folds, METH_NOARGS, crc32_folds_doc},
    FASTCALL_METHOD(java_string_hash_continued),
    END_OF_METHODS,
};
