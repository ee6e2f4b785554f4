/*
 * The usual JSON header of a remoting frame (RemotingCommand#headerEncode, fastjson's
 * RemotingSerializable; docs/codecs/remoting.md), read straight into its values without
 * building the dict a general JSON parser would.
 */
#ifndef RMQPROTO_JSONHEADER_H
#define RMQPROTO_JSONHEADER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The header keys rmq_json_header reads, in the order of its values. */
enum {
    JSON_CODE, JSON_OPAQUE, JSON_FLAG, JSON_EXT_FIELDS, JSON_REMARK, JSON_LANGUAGE,
    JSON_VERSION, JSON_KEY_COUNT
};

/* Make the strs rmq_json_header shares; 0, or -1 with an error set. Call once first. */
int rmq_json_header_init(void);

/* Read the JSON object text[0:n] into values (JSON_KEY_COUNT entries, NULL on entry):
 * a new reference for each key present, NULL for each absent. code, opaque, flag and
 * version are ints, extFields an object of strings (a dict) or null (None), remark a
 * string or null (None), language a string; any other key's value a string, an int,
 * true, false or null. Returns 1 for such a header; 0, with no error set and values
 * cleared, for any other text (which a general parser must then decide on: floats, big
 * ints, nesting, lone surrogates, bad UTF-8, malformed JSON); -1 with an error set and
 * values cleared when memory runs out. A key given twice keeps its last value. */
int rmq_json_header(const unsigned char *text, Py_ssize_t n, PyObject **values);

#endif
