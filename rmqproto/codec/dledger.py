"""DLedger 0.3.1.2 on-disk formats (``DLedgerEntryCoder``, ``DLedgerMmapFileStore``, ``MmapFileList``).

* data files: entries of a 48-byte header plus body (:data:`ENTRY_HEADER`,
  :func:`encode_entry`, :func:`decode_entry`), a segment ending in a blank
  ``[int32 -1][int32 remaining]`` padded with zeros (:func:`encode_blank`);
* index files: one 32-byte unit per entry at ``index * 32`` (:data:`INDEX_UNIT`);
* segment files named by their 20-digit start offset, as the commit log's
  (``DLedgerUtils.offset2FileName`` is ``UtilAll.offset2FileName``:
  :func:`rmqproto.codec.storefile.offset_to_file_name`);
* ``checkpoint`` and ``currterm``: ``key=value`` lines written by DLedger's
  ``IOUtils.properties2String`` and read back with ``java.util.Properties.load``
  (:func:`encode_checkpoint`, :func:`decode_checkpoint`, :func:`encode_currterm`,
  :func:`decode_currterm`).
"""

import os
import re
from dataclasses import dataclass
from typing import Optional

import construct as cs

from rmqproto.codec.construct_util import build_or_raise, parse_or_raise
from rmqproto.codec.fixed_layout import INT32, INT64, FixedLayout
from rmqproto.config.javaprops import parse_properties
from rmqproto.errors import BadMagicError, CodecError, TruncatedError

__all__ = [
    "MAGIC_1", "CURRENT_MAGIC", "BLANK_MAGIC_CODE", "MIN_BLANK_LEN", "POS_OFFSET", "HEADER_SIZE",
    "BODY_OFFSET", "INDEX_UNIT_SIZE", "DATA_FILE_SIZE", "INDEX_FILE_SIZE",
    "ENTRY_HEADER", "ENTRY", "INDEX_UNIT", "BLANK", "DLedgerEntry",
    "encode_entry", "decode_entry", "build_entry_declared", "parse_entry_declared", "encode_index", "decode_index", "encode_blank",
    "decode_blank", "is_blank", "store_paths",
    "encode_properties", "decode_properties",
    "CHECKPOINT_KEYS", "CHECKPOINT_KEYS_JAVA8", "CURRTERM_KEYS",
    "encode_checkpoint", "decode_checkpoint", "encode_currterm", "decode_currterm",
]

MAGIC_1 = 1
CURRENT_MAGIC = MAGIC_1
BLANK_MAGIC_CODE = -1
MIN_BLANK_LEN = 8
POS_OFFSET = 24      #: where ``pos`` sits in an entry
HEADER_SIZE = 44     #: the header before the body-length word
BODY_OFFSET = 48     #: where the body starts
INDEX_UNIT_SIZE = 32
DATA_FILE_SIZE = 1024 * 1024 * 1024          #: ``mappedFileSizeForEntryData``
INDEX_FILE_SIZE = INDEX_UNIT_SIZE * 5 * 1024 * 1024  #: ``mappedFileSizeForEntryIndex``

# ---------------------------------------------------------------- declarations

#: The 48 bytes before an entry's body.
ENTRY_HEADER = FixedLayout(
    "EntryHeader", ("magic", INT32), ("size", INT32), ("index", INT64), ("term", INT64),
    ("pos", INT64), ("channel", INT32), ("chain_crc", INT32), ("body_crc", INT32),
    ("body_length", INT32))

#: A whole data-file entry (specification of :func:`encode_entry` / :func:`decode_entry`).
ENTRY = cs.Struct(
    *ENTRY_HEADER.declaration.subcons,
    cs.Check(cs.this.body_length >= 0),
    cs.Check(cs.this.size == BODY_OFFSET + cs.this.body_length),
    "body" / cs.Bytes(cs.this.body_length),
)

#: One index unit; the unit of entry ``i`` is at byte ``i * 32`` of the index files.
INDEX_UNIT = FixedLayout("IndexUnit", ("magic", INT32), ("pos", INT64), ("size", INT32),
                         ("index", INT64), ("term", INT64))

#: The start of a data-file blank (the rest of the segment is zeros).
BLANK = FixedLayout("Blank", ("magic", INT32), ("length", INT32))


@dataclass
class DLedgerEntry:
    """One DLedger log entry (``DLedgerEntry``); ``body`` may be None only in RPC JSON."""

    index: int = 0
    term: int = 0
    body: Optional[bytes] = b""
    pos: int = 0
    magic: int = CURRENT_MAGIC
    size: int = 0
    channel: int = 0
    chain_crc: int = 0
    body_crc: int = 0

    def compute_size(self):
        """``computeSizeInBytes``: 48 plus the body length (stored into ``size``)."""
        self.size = BODY_OFFSET + len(self.body)
        return self.size


# ---------------------------------------------------------------- entries

def encode_entry(entry):
    """The bytes ``DLedgerEntryCoder.encode`` writes; like Java it recomputes ``entry.size``."""
    if entry.body is None:
        raise CodecError("a stored entry needs a body")
    body = bytes(entry.body)
    size = entry.compute_size()
    return ENTRY_HEADER.pack(entry.magic, size, entry.index, entry.term, entry.pos, entry.channel,
                             entry.chain_crc, entry.body_crc, len(body)) + body


def decode_entry(data, offset=0):
    """The entry at ``data[offset:]``; checks magic and that size = 48 + body length.

    A blank raises :class:`BadMagicError` (test with :func:`is_blank` first when
    scanning a data file).
    """
    header = ENTRY_HEADER.unpack(data, offset)
    if header.magic != MAGIC_1:
        raise BadMagicError("DLedger entry magic %d at %d" % (header.magic, offset))
    if header.body_length < 0 or header.size != BODY_OFFSET + header.body_length:
        raise CodecError("entry size %d does not match body length %d" % (
            header.size, header.body_length))
    start = offset + BODY_OFFSET
    if len(data) < start + header.body_length:
        raise TruncatedError("entry body needs %d bytes, %d available" % (
            header.body_length, len(data) - start))
    return DLedgerEntry(index=header.index, term=header.term,
                        body=bytes(data[start:start + header.body_length]), pos=header.pos,
                        magic=header.magic, size=header.size, channel=header.channel,
                        chain_crc=header.chain_crc, body_crc=header.body_crc)


def build_entry_declared(entry):
    """:func:`encode_entry` through the construct declaration only."""
    body = bytes(entry.body)
    return build_or_raise(ENTRY, dict(
        magic=entry.magic, size=BODY_OFFSET + len(body), index=entry.index, term=entry.term,
        pos=entry.pos, channel=entry.channel, chain_crc=entry.chain_crc,
        body_crc=entry.body_crc, body_length=len(body), body=body))


def parse_entry_declared(data):
    """:func:`decode_entry` through the construct declaration only."""
    parsed = parse_or_raise(ENTRY, data)
    if parsed.magic != MAGIC_1:
        raise BadMagicError("DLedger entry magic %d" % parsed.magic)
    return DLedgerEntry(index=parsed.index, term=parsed.term, body=parsed.body, pos=parsed.pos,
                        magic=parsed.magic, size=parsed.size, channel=parsed.channel,
                        chain_crc=parsed.chain_crc, body_crc=parsed.body_crc)


# ---------------------------------------------------------------- index and blank

def encode_index(pos, size, magic, index, term):
    """``DLedgerEntryCoder.encodeIndex``: the 32-byte unit of one entry."""
    return INDEX_UNIT.pack(magic, pos, size, index, term)


def decode_index(data, offset=0):
    """The :data:`INDEX_UNIT` record at ``data[offset:]``."""
    return INDEX_UNIT.unpack(data, offset)


def encode_blank(length):
    """The ``length`` bytes that fill the end of a data segment (at least 8)."""
    if not MIN_BLANK_LEN <= length <= 0x7FFFFFFF:
        raise CodecError("a blank needs %d to 2^31-1 bytes, not %d" % (MIN_BLANK_LEN, length))
    return BLANK.pack(BLANK_MAGIC_CODE, length) + bytes(length - BLANK.size)


def is_blank(data, offset=0):
    """Whether the record at ``data[offset:]`` starts with the blank magic."""
    return len(data) - offset >= 4 and data[offset:offset + 4] == b"\xff\xff\xff\xff"


def decode_blank(data, offset=0):
    """The length a blank at ``data[offset:]`` announces (the rest of its segment)."""
    blank = BLANK.unpack(data, offset)
    if blank.magic != BLANK_MAGIC_CODE:
        raise BadMagicError("blank magic %d" % blank.magic)
    if blank.length < MIN_BLANK_LEN:
        raise CodecError("blank length %d below %d" % (blank.length, MIN_BLANK_LEN))
    return blank.length


# ---------------------------------------------------------------- files

def store_paths(store_base_dir, self_id, data_store_path=None):
    """``DLedgerConfig`` paths: ``{"default", "data", "index", "checkpoint", "currterm"}``."""
    default = os.path.join(store_base_dir, "dledger-" + self_id)
    return {"default": default,
            "data": data_store_path or os.path.join(default, "data"),
            "index": os.path.join(default, "index"),
            "checkpoint": os.path.join(default, "checkpoint"),
            "currterm": os.path.join(default, "currterm")}


# ---------------------------------------------------------------- property files

def encode_properties(items):
    """``IOUtils.properties2String``: one ``key=value\\n`` line per pair, nothing escaped.

    ``items`` is an iterable of pairs in the order the Java ``Properties`` iterates
    (see :func:`encode_checkpoint` for the orders that arise).
    """
    return "".join("%s=%s\n" % (key, value) for key, value in items).encode("utf-8")


def decode_properties(data):
    """Parse text as ``java.util.Properties.load`` does (a dict; see :mod:`rmqproto.config.javaprops`)."""
    return parse_properties(bytes(data))


_JAVA_LONG = re.compile(r"[+-]?[0-9]+")


def _parse_long(text, what):
    """``Long.valueOf``: optional sign and decimal digits, within 64 bits."""
    if not _JAVA_LONG.fullmatch(text) or not -2 ** 63 <= int(text) < 2 ** 63:
        raise CodecError("%s is not a Java long: %r" % (what, text))
    return int(text)


#: Key order of the ``checkpoint`` file on Java 9+ (``Properties`` iterates its
#: ``ConcurrentHashMap``); :data:`CHECKPOINT_KEYS_JAVA8` is the ``Hashtable`` order of Java 8.
CHECKPOINT_KEYS = ("committedIndex", "endIndex")
CHECKPOINT_KEYS_JAVA8 = ("endIndex", "committedIndex")
#: Key order of the ``currterm`` file (the same on Java 8 and 9+).
CURRTERM_KEYS = ("voteLeader", "currTerm")


def encode_checkpoint(end_index, committed_index, keys=CHECKPOINT_KEYS):
    """The ``checkpoint`` file text as DLedger writes it (key order of Java 9+ by default)."""
    values = {"endIndex": end_index, "committedIndex": committed_index}
    return encode_properties((key, values[key]) for key in keys)


def decode_checkpoint(data):
    """``(end_index, committed_index)``; either is None when its key is absent.

    ``committedIndex`` is trimmed before parsing as ``loadCheckPoint`` does; a blank
    value counts as absent.
    """
    properties = decode_properties(data)
    end = properties.get("endIndex")
    committed = properties.get("committedIndex", "").strip()
    return (None if end is None else _parse_long(end, "endIndex"),
            _parse_long(committed, "committedIndex") if committed else None)


def encode_currterm(curr_term, vote_leader=None):
    """The ``currterm`` file text; ``vote_leader`` None is written as an empty value."""
    values = {"currTerm": curr_term, "voteLeader": vote_leader or ""}
    return encode_properties((key, values[key]) for key in CURRTERM_KEYS)


def decode_currterm(data):
    """``(curr_term, vote_leader)`` as ``MemberState.loadTerm`` reads them.

    An absent ``currTerm`` gives 0 (the initial term); an empty or absent
    ``voteLeader`` gives None.
    """
    properties = decode_properties(data)
    term = properties.get("currTerm")
    return (0 if term is None else _parse_long(term, "currTerm"),
            properties.get("voteLeader") or None)
