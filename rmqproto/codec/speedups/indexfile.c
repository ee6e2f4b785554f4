/*
 * rmqproto.codec.indexfile: the hashes of an index file (IndexFile#putKey) written into
 * its mapped buffer.
 */
#include "speedups.h"

#define INDEX_HEADER_SIZE 40
#define HASH_SLOT_SIZE 4
#define INDEX_SIZE 20

PyDoc_STRVAR(put_index_hashes_doc,
"put_index_hashes(buffer, entries, start, index_num, slot_num, count, slot_count,\n"
"                 begin_timestamp, begin_phy_offset)\n"
"    -> (next, count, slot_count, begin_timestamp, begin_phy_offset)\n\n"
"The loop of rmqproto.codec.indexfile.IndexFile.put_hashes over the writable index file\n"
"buffer: put each (hash_code, phy_offset, store_timestamp) of entries (a list or tuple,\n"
"or a bytes-like object of entries packed as PackedEntries packs them) from start on\n"
"while count < index_num.  It stops before an entry it cannot put as the Python loop\n"
"would (not a tuple of three ints, a hash outside int32, an offset or timestamp outside\n"
"a Java long, a position outside the buffer), leaving that entry to the caller.  The\n"
"header is left to the caller.");

/* Entry i of a list or tuple of entries, or of packed entries when packed is not NULL:
 * 0 when it is not one C can put (not a tuple of three ints, a hash outside int32). */
static int
index_entry_at(PyObject *entries, const unsigned char *packed, Py_ssize_t i,
               int64_t *key_hash, int64_t *phy_offset, int64_t *timestamp)
{
    if (packed != NULL) {
        const unsigned char *p = packed + i * PACKED_ENTRY_SIZE;
        *key_hash = read_int(p);
        *phy_offset = read_long(p + 4);
        *timestamp = read_long(p + 12);
        return 1;
    }
    PyObject *entry = PySequence_Fast_GET_ITEM(entries, i);
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3)
        return 0;
    int ok = 1;
    *key_hash = as_long(PyTuple_GET_ITEM(entry, 0), &ok);
    *phy_offset = as_long(PyTuple_GET_ITEM(entry, 1), &ok);
    *timestamp = as_long(PyTuple_GET_ITEM(entry, 2), &ok);
    return ok && *key_hash >= INT32_MIN && *key_hash <= INT32_MAX;
}

static PyObject *
put_index_hashes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (arguments_ok(nargs == 9, "put_index_hashes takes buffer, entries, start, index_num, "
                     "slot_num, count, slot_count, begin_timestamp and begin_phy_offset") < 0)
        return NULL;
    PyObject *entries = args[1];
    long long numbers[7];  /* start, index_num, slot_num, count, slot_count, begin times */
    for (int k = 0; k < 7; k++) {
        if ((numbers[k] = PyLong_AsLongLong(args[k + 2])) == -1 && PyErr_Occurred())
            return NULL;
    }
    Py_ssize_t i = (Py_ssize_t)numbers[0];
    long long index_num = numbers[1], slot_num = numbers[2], count = numbers[3];
    long long slot_count = numbers[4], begin_timestamp = numbers[5];
    long long begin_phy_offset = numbers[6];
    if (i < 0) {
        PyErr_SetString(PyExc_ValueError, "start must not be negative");
        return NULL;
    }
    Py_buffer packed = {.buf = NULL};
    Py_ssize_t end;
    if (PyList_Check(entries) || PyTuple_Check(entries))
        end = PySequence_Fast_GET_SIZE(entries);
    else if (PyObject_GetBuffer(entries, &packed, PyBUF_SIMPLE) == 0)
        end = packed.len / PACKED_ENTRY_SIZE;
    else
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE) < 0) {
        if (packed.buf != NULL)
            PyBuffer_Release(&packed);
        return NULL;
    }
    unsigned char *buffer = view.buf;
    long long size = view.len;
    long long entries_at = INDEX_HEADER_SIZE + slot_num * HASH_SLOT_SIZE;
    for (; i < end && count < index_num && slot_num > 0; i++) {
        int64_t key_hash, phy_offset, timestamp;
        if (!index_entry_at(entries, packed.buf, i, &key_hash, &phy_offset, &timestamp))
            break;
        if (key_hash < 0)  /* Math.abs, and 0 for Integer.MIN_VALUE */
            key_hash = key_hash == INT32_MIN ? 0 : -key_hash;
        long long slot_pos = INDEX_HEADER_SIZE + (key_hash % slot_num) * HASH_SLOT_SIZE;
        long long entry_pos = entries_at + count * INDEX_SIZE;
        if (count < 0 || slot_pos + HASH_SLOT_SIZE > size || entry_pos + INDEX_SIZE > size)
            break;
        int32_t slot_value = read_int(buffer + slot_pos);
        if (slot_value <= 0 || slot_value > count) {
            slot_value = 0;
            slot_count++;
        }
        int32_t time_diff = 0;
        if (begin_timestamp > 0 && timestamp >= begin_timestamp) {
            uint64_t seconds = ((uint64_t)timestamp - (uint64_t)begin_timestamp) / 1000;
            time_diff = seconds > INT32_MAX ? INT32_MAX : (int32_t)seconds;
        }
        unsigned char *p = buffer + entry_pos;
        write_int(p, (int32_t)key_hash);
        write_long(p + 4, phy_offset);
        write_int(p + 12, time_diff);
        write_int(p + 16, slot_value);
        write_int(buffer + slot_pos, (int32_t)count);
        if (count <= 1) {
            begin_phy_offset = phy_offset;
            begin_timestamp = timestamp;
        }
        count++;
    }
    PyBuffer_Release(&view);
    if (packed.buf != NULL)
        PyBuffer_Release(&packed);
    return Py_BuildValue("(nLLLL)", i, count, slot_count, begin_timestamp, begin_phy_offset);
}

PyMethodDef indexfile_methods[] = {
    FASTCALL_METHOD(put_index_hashes),
    END_OF_METHODS,
};
