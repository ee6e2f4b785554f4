/*
 * The libFuzzer entry of the speedups' fuzz targets (docs/speedups.md).
 *
 * Built by tests/fuzz/build.py with the C files of rmqproto/codec/speedups/ and clang's
 * -fsanitize=fuzzer,address,undefined, so that libFuzzer follows the coverage of the C
 * code, this program embeds Python, makes rmqproto.codec._speedups the module linked in
 * (not a shared library found on the path), and calls the function of
 * tests/fuzz/targets.py named by RMQ_FUZZ_TARGET with each input as bytes. The target
 * raising anything, a sanitizer report or a crash is a finding: the input is saved and
 * the run stops.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

PyMODINIT_FUNC PyInit__speedups(void);

static PyObject *target;

/* Print the Python error set, then stop the run as a crash. */
static void
fail(const char *what)
{
    fprintf(stderr, "fuzz harness: %s\n", what);
    if (PyErr_Occurred())
        PyErr_Print();
    abort();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *name = getenv("RMQ_FUZZ_TARGET");
    if (name == NULL)
        fail("RMQ_FUZZ_TARGET names no target of tests/fuzz/targets.py");
    if (PyImport_AppendInittab("rmqproto.codec._speedups", PyInit__speedups) < 0)
        fail("cannot add the speedups to the built-in modules");
    Py_Initialize();
    PyObject *targets = PyImport_ImportModule("fuzz.targets");
    if (targets == NULL)
        fail("cannot import fuzz.targets (is PYTHONPATH the checkout and its tests/?)");
    target = PyObject_GetAttrString(targets, name);
    Py_DECREF(targets);
    if (target == NULL)
        fail("no such target");
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    PyObject *input = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)size);
    PyObject *result = input == NULL ? NULL : PyObject_CallOneArg(target, input);
    Py_XDECREF(input);
    if (result == NULL)
        fail("the target raised");
    Py_DECREF(result);
    return 0;
}
