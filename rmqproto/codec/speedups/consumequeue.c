/*
 * rmqproto.codec.consumequeue and rmqproto.store.consumequeue: 20-byte consume-queue
 * units (ConsumeQueue#putMessagePositionInfo) encoded, and a run of them written into
 * the queue's mapped file.
 */
#include "speedups.h"

PyDoc_STRVAR(encode_units_doc,
"encode_units(units) -> bytes or None\n\n"
"rmqproto.codec.consumequeue.encode_units: the 20-byte consume-queue unit of the first\n"
"three items (offset, size, tags_code) of each tuple, back to back; None when one is not\n"
"such a tuple of ints in range (the caller then encodes them to say which).");

static PyObject *
encode_units(PyObject *module, PyObject *units_arg)
{
    PyObject *units = PySequence_Fast(units_arg, "units must be iterable");
    if (units == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(units);
    PyObject *data = PyBytes_FromStringAndSize(NULL, n * 20);
    if (data == NULL) {
        Py_DECREF(units);
        return NULL;
    }
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(data);
    for (Py_ssize_t i = 0; i < n; i++, p += 20) {
        PyObject *unit = PySequence_Fast_GET_ITEM(units, i);
        int ok = PyTuple_Check(unit) && PyTuple_GET_SIZE(unit) >= 3;
        int64_t offset = ok ? as_long(PyTuple_GET_ITEM(unit, 0), &ok) : 0;
        int64_t size = ok ? as_long(PyTuple_GET_ITEM(unit, 1), &ok) : 0;
        int64_t tags_code = ok ? as_long(PyTuple_GET_ITEM(unit, 2), &ok) : 0;
        if (!ok || size < INT32_MIN || size > INT32_MAX) {
            Py_DECREF(units);
            Py_DECREF(data);
            Py_RETURN_NONE;
        }
        write_unit(p, offset, (int32_t)size, tags_code);
    }
    Py_DECREF(units);
    return data;
}

PyDoc_STRVAR(put_unit_run_doc,
"put_unit_run(buffer, position, file_from_offset, units, start, max_physic_offset)\n"
"    -> (end, end_physic_offset)\n\n"
"The usual step of rmqproto.store.consumequeue.ConsumeQueue.put_positions: the run of\n"
"units (offset, size, tags_code, cq_offset) from start on that continues the queue's last\n"
"file exactly (position, its write position, neither 0 nor the buffer's end; logical\n"
"offsets one after another from the file's end; commit-log ends growing past\n"
"max_physic_offset; as many as there is room for), written into the writable buffer of\n"
"that file.  Returns the index after the run and the commit-log end of its last unit.\n"
"When the run is empty or holds a unit that is not a tuple of four ints in range, or\n"
"max_physic_offset is beyond a Java long, nothing is written and end is start (the\n"
"caller then takes the step in Python).");

/* One unit of a run: its values, or 0 when it is not a tuple of four ints in range. */
static int
read_unit(PyObject *unit, int64_t values[4])
{
    if (!PyTuple_Check(unit) || PyTuple_GET_SIZE(unit) != 4)
        return 0;
    int ok = 1;
    for (int k = 0; k < 4; k++)
        values[k] = as_long(PyTuple_GET_ITEM(unit, k), &ok);
    return ok && values[1] >= INT32_MIN && values[1] <= INT32_MAX;
}

static PyObject *
put_unit_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 6 && (PyList_Check(args[3]) || PyTuple_Check(args[3])),
                     "put_unit_run takes buffer, position, file_from_offset, a list or tuple "
                     "of units, start and max_physic_offset") < 0)
        return NULL;
    int ok = 1;
    int64_t position = as_long(args[1], &ok);
    int64_t file_from_offset = as_long(args[2], &ok);
    int64_t start = as_long(args[4], &ok);
    if (!ok) {
        PyErr_SetString(PyExc_TypeError, "put_unit_run takes ints for its numbers");
        return NULL;
    }
    int64_t max_physic = as_long(args[5], &ok);
    if (!ok)  /* beyond a Java long: Python decides */
        return Py_BuildValue("(LO)", (long long)start, args[5]);
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE) < 0)
        return NULL;
    PyObject *units = args[3];
    Py_ssize_t count = PySequence_Fast_GET_SIZE(units);
    int64_t expect, end_physic = max_physic, values[4];
    Py_ssize_t end = start < 0 || start > count ? count : (Py_ssize_t)start;
    if (position <= 0 || position >= view.len
            || __builtin_add_overflow(file_from_offset, position, &expect))
        end = count;
    /* first pass: the run's extent, every unit of it checked before anything is written */
    Py_ssize_t first = end;
    for (int64_t room = position; end < count && room + 20 <= view.len; end++, room += 20) {
        int64_t unit_end, cq_position;
        if (!read_unit(PySequence_Fast_GET_ITEM(units, end), values)
                || __builtin_add_overflow(values[0], values[1], &unit_end)
                || __builtin_mul_overflow(values[3], 20, &cq_position)) {
            end = first;  /* Python decides about this run */
            break;
        }
        if (unit_end <= end_physic || cq_position != expect + (room - position))
            break;
        end_physic = unit_end;
    }
    if (end == first) {
        end = (Py_ssize_t)start;
        end_physic = max_physic;
    }
    unsigned char *p = (unsigned char *)view.buf + position;
    for (Py_ssize_t i = first; i < end; i++, p += 20) {
        read_unit(PySequence_Fast_GET_ITEM(units, i), values);
        write_unit(p, values[0], (int32_t)values[1], values[2]);
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(nL)", end, (long long)end_physic);
}

PyMethodDef consumequeue_methods[] = {
    ONE_ARG_METHOD(encode_units),
    FASTCALL_METHOD(put_unit_run),
    END_OF_METHODS,
};
