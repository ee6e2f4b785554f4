/*
 * The usual JSON header of a remoting frame, read without a dict (see jsonheader.h).
 *
 * Every reader returns 1 when it read what it was asked for (the cursor past it), 0 when
 * the text is not what this reader takes (no error set: a general parser decides), -1
 * with an error set when memory ran out.
 */
#include "jsonheader.h"

#include <string.h>

typedef struct {
    const unsigned char *p, *end;
} Cursor;

static const char *const KEY_NAMES[JSON_KEY_COUNT] = {
    "code", "opaque", "flag", "extFields", "remark", "language", "version"};

/* One-character ASCII strings as shared strs: the keys of a V2 send header's extFields,
 * and values such as "0". */
static PyObject *ONE_CHAR[128];

/* Whether a byte stands for itself in a JSON string of ASCII: not a control character,
 * a quote, a backslash nor part of a multi-byte sequence. */
static unsigned char PLAIN[256];

/* The entries extFields usually has at most (a V2 send header has up to 13). */
#define USUAL_EXT_FIELDS 16

static void
skip_space(Cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

/* Whether the next character, after any space, is ch; the cursor then past it. */
static int
take(Cursor *c, unsigned char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* The four hex digits at p as a UTF-16 code unit, or -1. */
static long
hex4(const unsigned char *p)
{
    long unit = 0;
    for (int i = 0; i < 4; i++) {
        int ch = p[i], lower = ch | 0x20;
        int digit = ch >= '0' && ch <= '9' ? ch - '0'
            : lower >= 'a' && lower <= 'f' ? lower - 'a' + 10 : -1;
        if (digit < 0)
            return -1;
        unit = unit << 4 | digit;
    }
    return unit;
}

static unsigned char *
put_utf8(unsigned char *out, unsigned long cp)
{
    if (cp < 0x80) {
        *out++ = (unsigned char)cp;
    } else if (cp < 0x800) {
        *out++ = (unsigned char)(0xC0 | cp >> 6);
        *out++ = (unsigned char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *out++ = (unsigned char)(0xE0 | cp >> 12);
        *out++ = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        *out++ = (unsigned char)(0x80 | (cp & 0x3F));
    } else {
        *out++ = (unsigned char)(0xF0 | cp >> 18);
        *out++ = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
        *out++ = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        *out++ = (unsigned char)(0x80 | (cp & 0x3F));
    }
    return out;
}

/* The escaped string raw[0:n] (its text between the quotes) as UTF-8 at out (at most n
 * bytes: no escape is shorter than what it stands for); its length, or -1 for a bad
 * escape or a lone surrogate. */
static Py_ssize_t
unescape(const unsigned char *raw, Py_ssize_t n, unsigned char *out)
{
    const unsigned char *p = raw, *end = raw + n;
    unsigned char *start = out;
    while (p < end) {
        if (*p != '\\') {
            *out++ = *p++;
            continue;
        }
        unsigned char kind = p[1];  /* the scan made sure an escape has its character */
        static const char simple[] = "\"\\/bfnrt", stands_for[] = "\"\\/\b\f\n\r\t";
        const char *found = kind != '\0' ? strchr(simple, kind) : NULL;
        if (found != NULL) {
            *out++ = (unsigned char)stands_for[found - simple];
            p += 2;
            continue;
        }
        if (kind != 'u' || end - p < 6)
            return -1;
        long unit = hex4(p + 2);
        p += 6;
        if (unit < 0 || (unit >= 0xDC00 && unit <= 0xDFFF))
            return -1;
        if (unit >= 0xD800 && unit <= 0xDBFF) {  /* a high surrogate: its low one follows */
            long low = end - p >= 6 && p[0] == '\\' && p[1] == 'u' ? hex4(p + 2) : -1;
            if (low < 0xDC00 || low > 0xDFFF)
                return -1;
            unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
            p += 6;
        }
        out = put_utf8(out, (unsigned long)unit);
    }
    return out - start;
}

/* The str of UTF-8 bytes (strict), 0 when they are not valid. */
static int
utf8_str(const unsigned char *bytes, Py_ssize_t n, PyObject **value)
{
    *value = PyUnicode_DecodeUTF8((const char *)bytes, n, NULL);
    if (*value != NULL)
        return 1;
    if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
        return -1;
    PyErr_Clear();
    return 0;
}

/* The string whose opening quote is at the cursor. */
static int
read_string(Cursor *c, PyObject **value)
{
    const unsigned char *raw = c->p + 1, *p = raw;
    int escaped = 0, ascii = 1;
    for (;;) {
        while (p < c->end && PLAIN[*p])
            p++;
        if (p >= c->end)
            return 0;
        unsigned char ch = *p;
        if (ch == '"')
            break;
        if (ch < 0x20)
            return 0;
        if (ch == '\\') {
            if (c->end - p < 2)
                return 0;
            escaped = 1;
            p += 2;
            continue;
        }
        ascii = 0;  /* a byte of a multi-byte UTF-8 sequence */
        p++;
    }
    Py_ssize_t n = p - raw;
    c->p = p + 1;
    if (!escaped && ascii) {
        if (n == 1 && ONE_CHAR[raw[0]] != NULL) {
            *value = Py_NewRef(ONE_CHAR[raw[0]]);
            return 1;
        }
        *value = PyUnicode_New(n, 127);
        if (*value == NULL)
            return -1;
        memcpy(PyUnicode_1BYTE_DATA(*value), raw, n);
        return 1;
    }
    if (!escaped)
        return utf8_str(raw, n, value);
    unsigned char small[256];
    unsigned char *out = n <= (Py_ssize_t)sizeof(small) ? small : PyMem_Malloc(n);
    if (out == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t length = unescape(raw, n, out);
    int got = length < 0 ? 0 : utf8_str(out, length, value);
    if (out != small)
        PyMem_Free(out);
    return got;
}

/* An int of at most 18 digits, without fraction or exponent (other numbers: 0). */
static int
read_int(Cursor *c, PyObject **value)
{
    const unsigned char *p = c->p;
    int negative = p < c->end && *p == '-';
    p += negative;
    const unsigned char *digits = p;
    long long number = 0;
    for (; p < c->end && *p >= '0' && *p <= '9'; p++)
        if (p - digits < 18)  /* more digits are refused below: no overflow */
            number = number * 10 + (*p - '0');
    Py_ssize_t count = p - digits;
    if (count == 0 || count > 18 || (count > 1 && digits[0] == '0') || (negative && number == 0)
            || (p < c->end && (*p == '.' || *p == 'e' || *p == 'E')))
        return 0;
    c->p = p;
    *value = PyLong_FromLongLong(negative ? -number : number);
    return *value == NULL ? -1 : 1;
}

static int
read_literal(Cursor *c, const char *word, PyObject *object, PyObject **value)
{
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
        return 0;
    c->p += n;
    *value = Py_NewRef(object);
    return 1;
}

/* A string, an int, true, false or null. */
static int
read_scalar(Cursor *c, PyObject **value)
{
    skip_space(c);
    if (c->p >= c->end)
        return 0;
    switch (*c->p) {
    case '"':
        return read_string(c, value);
    case 'n':
        return read_literal(c, "null", Py_None, value);
    case 't':
        return read_literal(c, "true", Py_True, value);
    case 'f':
        return read_literal(c, "false", Py_False, value);
    default:
        return read_int(c, value);
    }
}

/* An object of strings into a new dict, or null. */
static int
read_ext_fields(Cursor *c, PyObject **value)
{
    skip_space(c);
    if (c->p < c->end && *c->p == 'n')
        return read_literal(c, "null", Py_None, value);
    if (!take(c, '{'))
        return 0;
#if PY_VERSION_HEX < 0x030D0000
    PyObject *fields = _PyDict_NewPresized(USUAL_EXT_FIELDS);
#else
    PyObject *fields = PyDict_New();
#endif
    if (fields == NULL)
        return -1;
    int got = 1;
    if (!take(c, '}')) {
        do {
            PyObject *key = NULL, *text = NULL;
            skip_space(c);
            got = c->p < c->end && *c->p == '"' ? read_string(c, &key) : 0;
            if (got > 0) {
                got = take(c, ':');
                skip_space(c);
            }
            if (got > 0)
                got = c->p < c->end && *c->p == '"' ? read_string(c, &text) : 0;
            if (got > 0 && PyDict_SetItem(fields, key, text) < 0)
                got = -1;
            Py_XDECREF(key);
            Py_XDECREF(text);
        } while (got > 0 && take(c, ','));
        if (got > 0)
            got = take(c, '}');
    }
    if (got <= 0) {
        Py_DECREF(fields);
        return got;
    }
    *value = fields;
    return 1;
}

/* The index of a header key (raw[0:n], unescaped ASCII), JSON_KEY_COUNT for another. */
static int
key_index(const unsigned char *raw, Py_ssize_t n)
{
    for (int i = 0; i < JSON_KEY_COUNT; i++) {
        if ((size_t)n == strlen(KEY_NAMES[i]) && memcmp(raw, KEY_NAMES[i], n) == 0)
            return i;
    }
    return JSON_KEY_COUNT;
}

/* Whether value is of the type the header key at index takes. */
static int
value_fits(int index, PyObject *value)
{
    switch (index) {
    case JSON_EXT_FIELDS:
        return 1;  /* read_ext_fields read a dict or None */
    case JSON_REMARK:
        return value == Py_None || PyUnicode_CheckExact(value);
    case JSON_LANGUAGE:
        return PyUnicode_CheckExact(value);
    case JSON_KEY_COUNT:
        return 1;
    default:
        return PyLong_CheckExact(value);
    }
}

/* One "key": value member of the header into values. */
static int
read_member(Cursor *c, PyObject **values)
{
    skip_space(c);
    if (c->p >= c->end || *c->p != '"')
        return 0;
    const unsigned char *raw = c->p + 1, *p = raw;
    while (p < c->end && *p != '"' && *p != '\\' && *p >= 0x20 && *p < 0x80)
        p++;
    if (p >= c->end || *p != '"')
        return 0;  /* an escaped or non-ASCII key: not a header key of ours */
    int index = key_index(raw, p - raw);
    c->p = p + 1;
    if (!take(c, ':'))
        return 0;
    PyObject *value = NULL;
    int got = index == JSON_EXT_FIELDS ? read_ext_fields(c, &value) : read_scalar(c, &value);
    if (got <= 0)
        return got;
    if (!value_fits(index, value)) {
        Py_DECREF(value);
        return 0;
    }
    if (index == JSON_KEY_COUNT)
        Py_DECREF(value);
    else
        Py_XSETREF(values[index], value);
    return 1;
}

static int
read_header(Cursor *c, PyObject **values)
{
    if (!take(c, '{'))
        return 0;
    if (!take(c, '}')) {
        int got;
        do {
            got = read_member(c, values);
            if (got <= 0)
                return got;
        } while (take(c, ','));
        if (!take(c, '}'))
            return 0;
    }
    skip_space(c);
    return c->p == c->end;
}

int
rmq_json_header_init(void)
{
    for (int ch = 0x20; ch < 0x80; ch++)
        PLAIN[ch] = ch != '"' && ch != '\\';
    for (int ch = 0x20; ch < 0x7F; ch++) {
        char name[1] = {(char)ch};
        if (ONE_CHAR[ch] == NULL
                && (ONE_CHAR[ch] = PyUnicode_FromStringAndSize(name, 1)) == NULL)
            return -1;
    }
    return 0;
}

int
rmq_json_header(const unsigned char *text, Py_ssize_t n, PyObject **values)
{
    Cursor c = {text, text + n};
    int got = read_header(&c, values);
    if (got <= 0) {
        for (int i = 0; i < JSON_KEY_COUNT; i++)
            Py_CLEAR(values[i]);
    }
    return got;
}
