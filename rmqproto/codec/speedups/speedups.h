/*
 * What the C files of rmqproto.codec._speedups share: byte order, the version-1 record
 * layout, Java's String.hashCode, argument checks, the names interned at module init and
 * the MessageRecord fields read straight from their __slots__.
 *
 * Each other .c file here is named after the Python module whose functions it speeds up
 * (docs/speedups-layout.md); each function does exactly what its Python twin, named in
 * its docstring, does (tests/codec/test_speedups*.py compare them on random inputs). The
 * helpers here are static inline, so that the hot loops call none of them across files.
 */
#ifndef RMQPROTO_SPEEDUPS_H
#define RMQPROTO_SPEEDUPS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <structmember.h>

#include "crc32.h"

/* what the files share stays inside the module (and calls between them need no PLT) */
#pragma GCC visibility push(hidden)

#define PROPERTY_SEPARATOR 2
#define NAME_VALUE_SEPARATOR 1

/* A version-1 record with IPv4 hosts (CommitLog.DefaultAppendMessageCallback#doAppend),
 * the fixed part up to and including BODY LENGTH. */
#define FIXED_V1 88
#define MESSAGE_MAGIC_CODE (-626843481)
#define MIN_RECORD_LENGTH 91
#define HOST_FLAGS 48
#define BORNHOST_V6_FLAG 0x10
#define STOREHOSTADDRESS_V6_FLAG 0x20
#define MAX_TOPIC_LENGTH_V1 127
#define MAX_PROPERTIES_LENGTH 32767
/* MessageSysFlag's transaction bits */
#define TRANSACTION_BITS 0xC
#define TRANSACTION_PREPARED_TYPE 0x4
#define TRANSACTION_ROLLBACK_TYPE 0xC
/* a consume-queue unit (ConsumeQueue.CQ_STORE_UNIT_SIZE); an index entry packed as
 * rmqproto.codec.indexfile.PackedEntries packs it */
#define CQ_UNIT_SIZE 20
#define PACKED_ENTRY_SIZE 20

#define COUNT(array) ((int)(sizeof(array) / sizeof((array)[0])))

/* Method table entries: a function f taking its arguments as an array (METH_FASTCALL) or
 * one object (METH_O), documented by f_doc; and the table's end. */
#define FASTCALL_METHOD(f) {#f, (PyCFunction)(void (*)(void))f, METH_FASTCALL, f##_doc}
#define ONE_ARG_METHOD(f) {#f, (PyCFunction)f, METH_O, f##_doc}
#define END_OF_METHODS {NULL, NULL, 0, NULL}

/* ---- module state, made once by PyInit__speedups (module.c) ---- */

/* The property names clients and brokers set on most messages, interned: a name among
 * them is not made anew (nor hashed) for each message. */
enum {
    NAME_KEYS, NAME_TAGS, NAME_UNIQ_KEY, NAME_WAIT, NAME_CLUSTER, NAME_DELAY,
    NAME_TRAN_MSG = 13, USUAL_NAME_COUNT = 15
};
extern const char *const USUAL_NAMES[USUAL_NAME_COUNT];
extern PyObject *USUAL_NAME[USUAL_NAME_COUNT];
/* "", (), 0 and MESSAGE_MAGIC_CODE as objects */
extern PyObject *EMPTY, *EMPTY_TUPLE, *ZERO, *MAGIC_CODE_V1;

/* The MessageRecord attributes the record functions read and write, by index. */
enum {
    F_TOPIC, F_BODY, F_PROPERTIES, F_QUEUE_ID, F_FLAG, F_QUEUE_OFFSET, F_COMMIT_LOG_OFFSET,
    F_STORE_TIMESTAMP, F_SYS_FLAG, F_BORN_TIMESTAMP, F_BORN_HOST, F_STORE_HOST,
    F_RECONSUME_TIMES, F_PREPARED, F_BODY_CRC, F_MAGIC_CODE, F_STORE_SIZE,
    F_STORED_PROPERTIES, FIELD_COUNT
};
extern const char *const FIELD_NAMES[FIELD_COUNT];
extern PyObject *FIELD[FIELD_COUNT];
/* Every field, in order. */
extern const int ALL_FIELDS[FIELD_COUNT];

/* The per-file parts of module init: 0, or -1 with an error set. */
int frame_init(void);
int send_init(void);
int transfer_init(void);

/* The Python functions of each file, added to the module by module.c. */
extern PyMethodDef columns_methods[], commitlog_methods[], consumequeue_methods[],
    defaultstore_methods[], dispatch_methods[], frame_methods[], headers_methods[],
    indexfile_methods[], indexservice_methods[], javalang_methods[], message_methods[],
    message_batch_methods[], send_methods[], transfer_methods[];

/* ---- functions of one file another uses ---- */

/* message.c: the properties of a str, as rmqproto.codec.message.string_to_properties
 * reads them, and of UTF-8 bytes; the properties_utf8 of a dict (None when C does not
 * encode it) */
PyObject *properties_of_text(PyObject *text);
PyObject *properties_of_bytes(const unsigned char *p, Py_ssize_t n);
PyObject *properties_utf8(PyObject *module, PyObject *properties);

static inline int32_t
read_int(const unsigned char *p)
{
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16)
                     | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

static inline int64_t
read_long(const unsigned char *p)
{
    return (int64_t)(((uint64_t)(uint32_t)read_int(p) << 32) | (uint32_t)read_int(p + 4));
}

static inline PyObject *
decode_text(const unsigned char *p, Py_ssize_t n)
{
    return PyUnicode_DecodeUTF8((const char *)p, n, "surrogateescape");
}

static inline void
write_int(unsigned char *p, int32_t value)
{
    uint32_t v = (uint32_t)value;
    p[0] = v >> 24;
    p[1] = v >> 16;
    p[2] = v >> 8;
    p[3] = v;
}

static inline void
write_long(unsigned char *p, int64_t value)
{
    write_int(p, (int32_t)((uint64_t)value >> 32));
    write_int(p + 4, (int32_t)value);
}

/* Whether the n bytes at p are ASCII. */
static inline int
all_ascii(const unsigned char *p, Py_ssize_t n)
{
    unsigned char any = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        any |= p[i];
    return any < 0x80;
}

/* The end of the properties fragment of p[:n] from start (the next 0x02, or n), and in
 * *eq where its first 0x01 is (-1 when it has none). */
static inline Py_ssize_t
fragment_end(const unsigned char *p, Py_ssize_t n, Py_ssize_t start, Py_ssize_t *eq)
{
    Py_ssize_t end = start;
    *eq = -1;
    for (; end < n && p[end] != PROPERTY_SEPARATOR; end++) {
        if (p[end] == NAME_VALUE_SEPARATOR && *eq < 0)
            *eq = end;
    }
    return end;
}

/* A consume-queue unit at p: the record's commit-log offset, size and tags code. */
static inline void
write_unit(unsigned char *p, int64_t offset, int32_t size, int64_t tags_code)
{
    write_long(p, offset);
    write_int(p + 8, size);
    write_long(p + 12, tags_code);
}

/* The int64 value of an int object; 0 with *ok cleared for anything else. */
static inline int64_t
as_long(PyObject *value, int *ok)
{
    int overflow = 0;
    long long v = PyLong_Check(value) ? PyLong_AsLongLongAndOverflow(value, &overflow) : 0;
    if (!PyLong_Check(value) || overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        *ok = 0;
    }
    return v;
}

/* h continued over n one-byte code units (Latin-1 text, ASCII bytes): Java's
 * String.hashCode step. */
static inline uint32_t
hash_bytes(uint32_t h, const unsigned char *p, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        h = 31 * h + p[i];
    return h;
}

/* h continued over the UTF-16 code units of text[start:end]. */
static inline uint32_t
hash_continued(uint32_t h, PyObject *text, Py_ssize_t start, Py_ssize_t end)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (kind == PyUnicode_1BYTE_KIND)
        return hash_bytes(h, (const Py_UCS1 *)data + start, end - start);
    for (Py_ssize_t i = start; i < end; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c > 0xFFFF) {
            c -= 0x10000;
            h = 31 * h + (0xD800 + (c >> 10));
            h = 31 * h + (0xDC00 + (c & 0x3FF));
        }
        else {
            h = 31 * h + c;
        }
    }
    return h;
}

static inline int
require_str(PyObject *value, const char *what)
{
    if (PyUnicode_Check(value))
        return 0;
    PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", what, Py_TYPE(value)->tp_name);
    return -1;
}

/* The ints args[:count] as Py_ssize_t in values: 0, or -1 with an error set. */
static inline int
ssize_args(PyObject *const *args, int count, Py_ssize_t *values)
{
    for (int i = 0; i < count; i++) {
        if ((values[i] = PyLong_AsSsize_t(args[i])) == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

/* 0 when the arguments are right (ok), else -1 with TypeError saying what the function
 * takes (usage). */
static inline int
arguments_ok(int ok, const char *usage)
{
    if (ok)
        return 0;
    PyErr_SetString(PyExc_TypeError, usage);
    return -1;
}

static inline int64_t
masked_crc32(const unsigned char *p, Py_ssize_t n)
{
    return rmq_crc32(0, p, (size_t)n) & 0x7FFFFFFF;
}

/* Where the parts of a usual record are. */
typedef struct {
    Py_ssize_t total, topic_pos, topic_length, properties_pos, properties_length;
    int64_t sys_flag;
} RecordLayout;

/* Whether buffer[pos:] starts with a usual record (version-1 magic code, IPv4 hosts, every
 * check of the layout passing; with check_crc, the body's masked CRC32 too), and if so
 * where its parts are. */
static inline int
usual_record_layout(const unsigned char *buffer, Py_ssize_t size, Py_ssize_t pos,
                    int check_crc, RecordLayout *layout)
{
    const unsigned char *r = buffer + pos;
    int64_t total = read_int(r);
    int64_t sys_flag = read_int(r + 36);
    int64_t body_length = read_int(r + 84);
    int64_t end = pos + total;
    int64_t topic_pos = pos + FIXED_V1 + body_length + 1;  /* after the topic's length byte */
    if (read_int(r + 4) != MESSAGE_MAGIC_CODE || total < MIN_RECORD_LENGTH || end > size
            || (sys_flag & HOST_FLAGS) || body_length < 0 || topic_pos > end)
        return 0;
    int64_t topic_length = buffer[topic_pos - 1];
    int64_t properties_pos = topic_pos + topic_length + 2;
    int64_t properties_length = end - properties_pos;
    if (topic_length > MAX_TOPIC_LENGTH_V1 || properties_length < 0
            || properties_length > MAX_PROPERTIES_LENGTH
            || buffer[properties_pos - 2] != (properties_length >> 8)
            || buffer[properties_pos - 1] != (properties_length & 0xFF))
        return 0;
    if (check_crc && masked_crc32(r + FIXED_V1, body_length) != read_int(r + 8))
        return 0;
    *layout = (RecordLayout){total, topic_pos, topic_length, properties_pos, properties_length,
                             sys_flag};
    return 1;
}

/* Item i of the fast sequence of requests, checked to be a request tuple (twelve items in
 * DispatchRequest order); NULL with TypeError set otherwise. */
static inline PyObject *
request_at(PyObject *requests, Py_ssize_t i)
{
    PyObject *item = PySequence_Fast_GET_ITEM(requests, i);
    if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 12)
        return item;
    PyErr_SetString(PyExc_TypeError, "a request tuple has twelve items");
    return NULL;
}


/* ---- record fields straight from their __slots__ (fields.c) ----
 * The FIELD slots of a record type (its member descriptors' offsets) are found once and
 * used while the type's version tag says it has not changed since, as the interpreter's
 * own attribute caches do. A field that is not a writable object slot of the type, and
 * every type once the table is full, goes through getattr and setattr. */
typedef struct {
    PyTypeObject *type;              /* a strong reference; NULL: a free entry */
    unsigned int version;
    Py_ssize_t offset[FIELD_COUNT];  /* 0: not a slot (getattr and setattr) */
} RecordSlots;

/* The entry record_slots found last: a batch's records share their type. */
extern RecordSlots *LAST_SLOTS;

/* record_slots past the last entry found. */
const RecordSlots *find_record_slots(PyTypeObject *type);

/* Whether type has not changed since its version tag was version. */
static inline int
version_current(PyTypeObject *type, unsigned int version)
{
#ifdef Py_TPFLAGS_VALID_VERSION_TAG
    if (!PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG))
        return 0;
#endif
    return version != 0 && type->tp_version_tag == version;
}

/* The offset of the writable object slot that descriptor (type's attribute) is, or 0. */
static inline Py_ssize_t
slot_offset(PyTypeObject *type, PyObject *descriptor)
{
    if (descriptor == NULL || !Py_IS_TYPE(descriptor, &PyMemberDescr_Type)
            || !PyType_IsSubtype(type, PyDescr_TYPE(descriptor)))
        return 0;
    PyMemberDef *member = ((PyMemberDescrObject *)descriptor)->d_member;
    return member->type == T_OBJECT_EX && !(member->flags & READONLY) ? member->offset : 0;
}

/* The FIELD slots of type, found now unless known and current; NULL for a type whose
 * attributes are not looked up the generic way, or when the table is full. */
static inline const RecordSlots *
record_slots(PyTypeObject *type)
{
    if (LAST_SLOTS != NULL && LAST_SLOTS->type == type
            && version_current(type, LAST_SLOTS->version))
        return LAST_SLOTS;
    return find_record_slots(type);
}

/* The slot of record's field f, or NULL to go through getattr and setattr. */
static inline PyObject **
field_slot(PyObject *record, int f)
{
    const RecordSlots *slots = record_slots(Py_TYPE(record));
    if (slots == NULL || slots->offset[f] == 0)
        return NULL;
    return (PyObject **)((char *)record + slots->offset[f]);
}

/* record.<field f>: a new reference, or NULL with an error set. */
static inline PyObject *
get_field(PyObject *record, int f)
{
    PyObject **slot = field_slot(record, f);
    if (slot != NULL && *slot != NULL)
        return Py_NewRef(*slot);
    return PyObject_GetAttr(record, FIELD[f]);  /* AttributeError for an empty slot */
}

/* record.<field f> = value: 0, or -1 with an error set. */
static inline int
set_field(PyObject *record, int f, PyObject *value)
{
    PyObject **slot = field_slot(record, f);
    if (slot == NULL)
        return PyObject_SetAttr(record, FIELD[f], value);
    Py_XSETREF(*slot, Py_NewRef(value));
    return 0;
}

static inline int
set_fields(PyObject *record, const int *fields, int count, PyObject *const *values)
{
    for (int i = 0; i < count; i++) {
        if (set_field(record, fields[i], values[fields[i]]) < 0)
            return -1;
    }
    return 0;
}

/* Whether record.<field> == expected as a tuple compares its items (identity first):
 * 1, 0, or -1 with an error set. */
static inline int
field_equals(PyObject *record, int field, PyObject *expected)
{
    PyObject *value = get_field(record, field);
    if (value == NULL)
        return -1;
    int equal = PyObject_RichCompareBool(value, expected, Py_EQ);
    Py_DECREF(value);
    return equal;
}

/* Whether record.<field> != expected, as the operator says: 1, 0, or -1 with an error set. */
static inline int
field_differs(PyObject *record, int field, PyObject *expected)
{
    PyObject *value = get_field(record, field);
    if (value == NULL)
        return -1;
    PyObject *differs = PyObject_RichCompare(value, expected, Py_NE);
    Py_DECREF(value);
    if (differs == NULL)
        return -1;
    int truth = PyObject_IsTrue(differs);
    Py_DECREF(differs);
    return truth;
}

/* The int64 value of record.<field>; 0 with *ok cleared when it is not an int in range,
 * -1 (and *ok untouched) with an error set when the attribute is missing. */
static inline int64_t
long_field(PyObject *record, int field, int *ok)
{
    PyObject *value = get_field(record, field);
    if (value == NULL) {
        *ok = -1;
        return 0;
    }
    int64_t v = as_long(value, ok);
    Py_DECREF(value);
    return v;
}

/* The record length without body and properties (calMsgLength, version 1). */
static inline int64_t
record_overhead(int64_t sys_flag, Py_ssize_t topic_length)
{
    return MIN_RECORD_LENGTH + (sys_flag & BORNHOST_V6_FLAG ? 12 : 0)
        + (sys_flag & STOREHOSTADDRESS_V6_FLAG ? 12 : 0) + topic_length;
}

/* PyObject_SetAttr(object, name, value), straight into a __slots__ slot. */
static inline int
set_attribute(PyObject *object, PyObject *name, PyObject *value)
{
    /* what PyObject_GenericSetAttr does for a writable object slot: its member descriptor
     * (a data descriptor, so ahead of any instance dict) sets it (PyMember_SetOne) */
    PyTypeObject *type = Py_TYPE(object);
    Py_ssize_t offset = type->tp_setattro == PyObject_GenericSetAttr && PyUnicode_CheckExact(name)
        ? slot_offset(type, _PyType_Lookup(type, name)) : 0;
    if (offset == 0)
        return PyObject_SetAttr(object, name, value);
    Py_XSETREF(*(PyObject **)((char *)object + offset), Py_NewRef(value));
    return 0;
}

/* 0 (the error cleared) when the error set is a UnicodeEncodeError, else -1. */
static inline int
unless_unencodable(void)
{
    if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
        return -1;
    PyErr_Clear();
    return 0;
}

/* 1 with *value set to Boolean.parseBoolean of ASCII text; 0 for Python to decide. */
static inline int
java_boolean(PyObject *text, int *value)
{
    if (!PyUnicode_IS_ASCII(text))
        return 0;
    const char *s = (const char *)PyUnicode_DATA(text);
    static const char TRUE_TEXT[] = "true";
    *value = PyUnicode_GET_LENGTH(text) == 4;
    for (int i = 0; *value && i < 4; i++)
        *value = (s[i] | 0x20) == TRUE_TEXT[i];
    return 1;
}

#pragma GCC visibility pop

#endif
