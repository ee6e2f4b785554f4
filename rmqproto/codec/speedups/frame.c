/*
 * rmqproto.codec.frame: remoting frames (RemotingCommand#decode, #encode) split off a
 * connection's bytes, decoded with their usual JSON header (jsonheader.c), and responses
 * encoded from their written-out parts.
 */
#include "speedups.h"
#include "jsonheader.h"

static const char *COMMAND_ATTR_NAMES[] = {
    "code", "opaque", "flag", "ext_fields", "body", "remark", "language", "version",
    "serialize_type"};
#define COMMAND_ATTR_COUNT 9
static PyObject *COMMAND_ATTR[COMMAND_ATTR_COUNT];
static PyObject *JAVA;

PyDoc_STRVAR(decode_frame_doc,
"decode_frame(plan, frame)\n\n"
"rmqproto.codec.frame.python_decode_frame for a JSON frame whose header is the usual\n"
"one (an object; extFields an object of strings; code, opaque, flag and version ints;\n"
"remark a string; language a name), read in C (jsonheader.c). plan is (RemotingCommand,\n"
"python_decode_frame); every other frame goes to python_decode_frame, which decodes it or\n"
"raises what it raises.");

static PyObject *
decode_frame(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 2 && PyTuple_CheckExact(args[0]) && PyTuple_GET_SIZE(args[0]) == 2
                     && PyType_Check(PyTuple_GET_ITEM(args[0], 0)),
                     "decode_frame(plan, frame): plan is (command class, python)") < 0)
        return NULL;
    PyTypeObject *command_type = (PyTypeObject *)PyTuple_GET_ITEM(args[0], 0);
    PyObject *python = PyTuple_GET_ITEM(args[0], 1);
    PyObject *frame = args[1];
    if (!PyBytes_CheckExact(frame) || PyBytes_GET_SIZE(frame) < 4)
        return PyObject_CallOneArg(python, frame);
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(frame);
    Py_ssize_t size = PyBytes_GET_SIZE(frame);
    Py_ssize_t header_length = ((Py_ssize_t)p[1] << 16) | (p[2] << 8) | p[3];
    if (p[0] != 0 || header_length > size - 4)  /* not JSON, or a bad length: Python says */
        return PyObject_CallOneArg(python, frame);
    PyObject *parsed[JSON_KEY_COUNT] = {NULL};
    int usual = rmq_json_header(p + 4, header_length, parsed);
    if (usual <= 0)
        return usual < 0 ? NULL : PyObject_CallOneArg(python, frame);
    PyObject *body = PyBytes_FromStringAndSize((const char *)p + 4 + header_length,
                                               size - 4 - header_length);
    PyObject *command = body == NULL ? NULL : command_type->tp_new(command_type, EMPTY_TUPLE, NULL);
    if (command == NULL)
        goto failed;
    /* code, opaque, flag, ext_fields, body, remark, language, version, serialize_type; an
     * absent key's default (a null extFields or remark is None) */
#define PARSED(key, absent) (parsed[key] != NULL ? parsed[key] : (absent))
    PyObject *attrs[COMMAND_ATTR_COUNT] = {
        PARSED(JSON_CODE, ZERO), PARSED(JSON_OPAQUE, ZERO), PARSED(JSON_FLAG, ZERO),
        PARSED(JSON_EXT_FIELDS, Py_None), body, PARSED(JSON_REMARK, Py_None),
        PARSED(JSON_LANGUAGE, JAVA), PARSED(JSON_VERSION, ZERO), ZERO};
#undef PARSED
    for (int i = 0; i < COMMAND_ATTR_COUNT; i++) {
        if (set_attribute(command, COMMAND_ATTR[i], attrs[i]) < 0) {
            Py_CLEAR(command);
            goto failed;
        }
    }
failed:
    Py_XDECREF(body);
    for (int i = 0; i < JSON_KEY_COUNT; i++)
        Py_XDECREF(parsed[i]);
    return command;
}

PyDoc_STRVAR(split_frames_doc,
"split_frames(python, data, max_frame_length)\n\n"
"rmqproto.codec.frame.python_split_frames for bytes or a bytearray whose length\n"
"prefixes are all good; every other call goes to python (python_split_frames).");

static PyObject *
split_frames(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 3, "split_frames(python, data, max_frame_length)") < 0)
        return NULL;
    PyObject *python = args[0], *data = args[1];
    int is_bytes = PyBytes_CheckExact(data), overflow = 1;
    long long max_length = PyLong_CheckExact(args[2])
        ? PyLong_AsLongLongAndOverflow(args[2], &overflow) : -1;
    if (max_length == -1 && PyErr_Occurred())
        PyErr_Clear();
    if ((!is_bytes && !PyByteArray_CheckExact(data)) || overflow || max_length < 0)
        return PyObject_Vectorcall(python, args + 1, 2, NULL);
    PyObject *frames = PyList_New(0);
    if (frames == NULL)
        return NULL;
    Py_ssize_t pos = 0;
    for (;;) {
        /* read again after each allocation, which could run code that resizes a bytearray */
        const unsigned char *p = (const unsigned char *)(
            is_bytes ? PyBytes_AS_STRING(data) : PyByteArray_AS_STRING(data));
        Py_ssize_t size = is_bytes ? PyBytes_GET_SIZE(data) : PyByteArray_GET_SIZE(data);
        if (size - pos < 4)
            break;
        int32_t length = read_int(p + pos);
        if (length < 4 || (long long)length + 4 > max_length) {  /* Python says what is wrong */
            Py_DECREF(frames);
            return PyObject_Vectorcall(python, args + 1, 2, NULL);
        }
        if (pos + 4 + (Py_ssize_t)length > size)
            break;
        PyObject *frame = PyBytes_FromStringAndSize((const char *)p + pos + 4, length);
        if (frame == NULL || PyList_Append(frames, frame) < 0) {
            Py_XDECREF(frame);
            Py_DECREF(frames);
            return NULL;
        }
        Py_DECREF(frame);
        pos += 4 + (Py_ssize_t)length;
    }
    return Py_BuildValue("(NnO)", frames, pos, Py_None);
}

/* ---------------------------------------------------------------- response frames */

#define MAX_RESPONSE_VALUES 16
#define MAX_HEADER_LENGTH 0xFFFFFF

/* value in decimal into out (room for 20 digits and a sign); its length. */
static Py_ssize_t
write_decimal(char *out, long long value)
{
    char reversed[20];
    unsigned long long magnitude = value < 0 ? 0ULL - (unsigned long long)value
                                             : (unsigned long long)value;
    int n = 0;
    do {
        reversed[n++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    Py_ssize_t length = 0;
    if (value < 0)
        out[length++] = '-';
    while (n)
        out[length++] = reversed[--n];
    return length;
}

/* The text of a value: an int in decimal (into digits) or an ASCII str; 0 for anything
 * else (Python decides). */
static int
value_text(PyObject *value, char *digits, const char **text, Py_ssize_t *length)
{
    if (PyLong_Check(value)) {
        int overflow;
        long long n = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow || (n == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        *text = digits;
        *length = write_decimal(digits, n);
        return 1;
    }
    if (PyUnicode_CheckExact(value) && PyUnicode_IS_ASCII(value)) {
        *text = (const char *)PyUnicode_DATA(value);
        *length = PyUnicode_GET_LENGTH(value);
        return 1;
    }
    return 0;
}

PyDoc_STRVAR(response_frame_doc,
"response_frame(plan, *values)\n\n"
"rmqproto.codec.frame.python_response_frame for up to 16 values, each an int within\n"
"64 bits or an ASCII str. plan is (parts, order, python_response_frame); every other\n"
"call goes to python_response_frame.");

static PyObject *
response_frame(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs >= 1 && PyTuple_CheckExact(args[0]) && PyTuple_GET_SIZE(args[0]) == 3
                     && PyTuple_CheckExact(PyTuple_GET_ITEM(args[0], 0))
                     && PyTuple_CheckExact(PyTuple_GET_ITEM(args[0], 1)),
                     "response_frame(plan, *values): plan is (parts, order, python)") < 0)
        return NULL;
    PyObject *parts = PyTuple_GET_ITEM(args[0], 0), *order = PyTuple_GET_ITEM(args[0], 1);
    PyObject *python = PyTuple_GET_ITEM(args[0], 2);
    Py_ssize_t count = nargs - 1;
    if (count > MAX_RESPONSE_VALUES || PyTuple_GET_SIZE(order) != count
            || PyTuple_GET_SIZE(parts) != count + 1)
        return PyObject_Vectorcall(python, args, nargs, NULL);
    char digits[MAX_RESPONSE_VALUES][24];
    const char *text[MAX_RESPONSE_VALUES];
    Py_ssize_t length[MAX_RESPONSE_VALUES];
    Py_ssize_t size = 0;
    for (Py_ssize_t i = 0; i <= count; i++) {
        PyObject *part = PyTuple_GET_ITEM(parts, i);
        if (!PyBytes_CheckExact(part))
            return PyObject_Vectorcall(python, args, nargs, NULL);
        size += PyBytes_GET_SIZE(part);
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *index = PyTuple_GET_ITEM(order, i);
        Py_ssize_t at = PyLong_CheckExact(index) ? PyLong_AsSsize_t(index) : -1;
        if (at == -1 && PyErr_Occurred())
            PyErr_Clear();
        if (at < 0 || at >= count || !value_text(args[1 + at], digits[i], &text[i], &length[i]))
            return PyObject_Vectorcall(python, args, nargs, NULL);
        size += length[i];
    }
    if (size > MAX_HEADER_LENGTH)
        return PyObject_Vectorcall(python, args, nargs, NULL);
    PyObject *frame = PyBytes_FromStringAndSize(NULL, 8 + size);
    if (frame == NULL)
        return NULL;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(frame);
    write_int(p, (int32_t)(4 + size));
    write_int(p + 4, (int32_t)size);  /* serialize type JSON, header length */
    p += 8;
    for (Py_ssize_t i = 0; i <= count; i++) {
        PyObject *part = PyTuple_GET_ITEM(parts, i);
        memcpy(p, PyBytes_AS_STRING(part), PyBytes_GET_SIZE(part));
        p += PyBytes_GET_SIZE(part);
        if (i < count) {
            memcpy(p, text[i], length[i]);
            p += length[i];
        }
    }
    return frame;
}

int
frame_init(void)
{
    for (int i = 0; i < COMMAND_ATTR_COUNT; i++) {
        if ((COMMAND_ATTR[i] = PyUnicode_InternFromString(COMMAND_ATTR_NAMES[i])) == NULL)
            return -1;
    }
    return (JAVA = PyUnicode_InternFromString("JAVA")) == NULL ? -1 : 0;
}

PyMethodDef frame_methods[] = {
    FASTCALL_METHOD(decode_frame),
    FASTCALL_METHOD(split_frames),
    FASTCALL_METHOD(response_frame),
    END_OF_METHODS,
};
