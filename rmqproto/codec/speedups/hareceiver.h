#ifndef RMQPROTO_HARECEIVER_H
#define RMQPROTO_HARECEIVER_H

#include <Python.h>

/* Add the HAReceiver type (hareceiver.c) to ``module``; -1 with an exception set. */
int hareceiver_add_type(PyObject *module);

#endif
