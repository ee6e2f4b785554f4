/*
 * The MessageRecord fields' __slots__ found once a record type (speedups.h reads and
 * writes them); used by the record functions of message_batch.c, commitlog.c,
 * defaultstore.c and send.c.
 */
#include "speedups.h"

#define RECORD_TYPES 4
static RecordSlots RECORD_SLOTS[RECORD_TYPES];
RecordSlots *LAST_SLOTS;

const RecordSlots *
find_record_slots(PyTypeObject *type)
{
    RecordSlots *entry = NULL;
    for (int i = 0; i < RECORD_TYPES; i++) {
        if (RECORD_SLOTS[i].type == type) {
            if (version_current(type, RECORD_SLOTS[i].version))
                return LAST_SLOTS = &RECORD_SLOTS[i];
            entry = &RECORD_SLOTS[i];
            break;
        }
        if (RECORD_SLOTS[i].type == NULL && entry == NULL)
            entry = &RECORD_SLOTS[i];
    }
    if (entry == NULL || type->tp_getattro != PyObject_GenericGetAttr
            || type->tp_setattro != PyObject_GenericSetAttr)
        return NULL;
    for (int f = 0; f < FIELD_COUNT; f++)  /* a lookup also gives the type its tag */
        entry->offset[f] = slot_offset(type, _PyType_Lookup(type, FIELD[f]));
    unsigned int version = type->tp_version_tag;
    if (!version_current(type, version))
        return NULL;
    if (entry->type == NULL)
        entry->type = (PyTypeObject *)Py_NewRef(type);
    entry->version = version;
    return LAST_SLOTS = entry;
}
