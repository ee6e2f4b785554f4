"""Decode RocketMQ bytes into readable records: one JSON object per line.

    python -m rmqproto.tools.decode frames CAPTURE        # one direction of a remoting TCP stream
    python -m rmqproto.tools.decode commitlog SEGMENT...  # commit-log files (store/commitlog/…)
    python -m rmqproto.tools.decode consumequeue FILE...  # consume-queue files
    python -m rmqproto.tools.decode dledger FILE...       # DLedger data files

Bodies are shown as text when they are UTF-8, else as hex. A scan stops at the first
corrupt record and says where; the exit status is 1 then, 0 otherwise.
"""

import argparse
import json
import sys

from rmqproto.codec import dledger
from rmqproto.codec.codes import RequestCode, ResponseCode
from rmqproto.codec.consumequeue import CQ_STORE_UNIT_SIZE, valid_units
from rmqproto.codec.frame import FrameDecoder, decode_frame
from rmqproto.codec.message import MESSAGE_MAGIC_CODE, decode_record, iter_records
from rmqproto.codec.storefile import file_name_to_offset
from rmqproto.errors import CodecError

__all__ = ["main", "decode_frames", "decode_commitlog", "decode_consumequeue", "decode_dledger"]

_PREVIEW = 512


def _bytes(data):
    """Readable form of ``data``: its text if UTF-8, else its hex (both cut at 512 bytes)."""
    data = bytes(data)
    cut = data[:_PREVIEW]
    try:
        shown = {"text": cut.decode("utf-8")}
    except UnicodeDecodeError:
        shown = {"hex": cut.hex()}
    if len(data) > _PREVIEW:
        shown["truncated_from"] = len(data)
    return shown


def _code_name(command):
    codes = ResponseCode if command.is_response else RequestCode
    try:
        return codes(command.code).name
    except ValueError:
        return None


def decode_frames(data):
    """Yield each remoting command of a captured byte stream as a dict."""
    decoder = FrameDecoder()
    for frame in decoder.feed(data):
        command = decode_frame(frame)
        yield {"type": "response" if command.is_response else "request",
               "code": command.code, "name": _code_name(command), "opaque": command.opaque,
               "flag": command.flag, "language": command.language, "version": command.version,
               "serialize_type": command.serialize_type, "remark": command.remark,
               "ext_fields": command.ext_fields, "body": _bytes(command.body)}
    if decoder.buffered:
        yield {"type": "incomplete", "buffered_bytes": decoder.buffered}


def _record_dict(record, position):
    fields = record.fields()
    fields["body"] = _bytes(fields["body"])
    fields.update(position=position, msg_id=record.msg_id, tags_code=record.tags_code)
    return fields


def decode_commitlog(data, base_offset=0, check_crc=True):
    """Yield each record of one commit-log segment, then a dict saying why the scan stopped."""
    scan = iter_records(data, 0, check_crc=check_crc)
    position = 0
    for record in scan:
        yield _record_dict(record, base_offset + position)
        position = scan.position
    end = {"type": "end", "stop": scan.stop, "position": base_offset + scan.position}
    if scan.error is not None:
        end["error"] = str(scan.error)
    if scan.blank_size is not None:
        end["blank_size"] = scan.blank_size
    yield end


def decode_consumequeue(data, base_offset=0):
    """Yield each consume-queue unit with its logical offset up to the first one recovery
    stops at (``ConsumeQueue#recover``), then a dict saying why the scan stopped there."""
    units = valid_units(data)
    for i, unit in enumerate(units):
        yield {"queue_offset": base_offset // CQ_STORE_UNIT_SIZE + i,
               "commit_log_offset": unit.commit_log_offset, "size": unit.size,
               "tags_code": unit.tags_code}
    position = len(units) * CQ_STORE_UNIT_SIZE
    end = {"type": "end", "stop": "empty", "position": base_offset + position}
    if any(data[position:]):
        end.update(stop="corrupt", error="the bytes from %d on are no unit recovery accepts"
                   % (base_offset + position))
    yield end


def decode_dledger(data, base_offset=0):
    """Yield each DLedger entry (a body that is a commit-log record is decoded too), then a
    dict saying why the scan stopped: ``blank`` (an end-of-file blank) or ``empty``."""
    position = 0
    while position + 8 <= len(data):
        if dledger.is_blank(data, position):
            yield {"type": "end", "stop": "blank", "position": base_offset + position,
                   "blank_size": dledger.decode_blank(data, position)}
            return
        if not any(data[position:position + 8]):
            break
        entry = dledger.decode_entry(data, position)
        shown = {"type": "entry", "index": entry.index, "term": entry.term, "pos": entry.pos,
                 "size": entry.size, "magic": entry.magic}
        body = entry.body
        if len(body) >= 8 and int.from_bytes(body[4:8], "big", signed=True) == MESSAGE_MAGIC_CODE:
            shown["record"] = _record_dict(decode_record(body), entry.pos + dledger.BODY_OFFSET)
        else:
            shown["body"] = _bytes(body)
        yield shown
        position += entry.size
    yield {"type": "end", "stop": "empty", "position": base_offset + position}


def _file_offset(path):
    try:
        return file_name_to_offset(path.rsplit("/", 1)[-1])
    except CodecError:
        return 0


def _emit(item, out):
    out.write(json.dumps(item, ensure_ascii=False, default=str) + "\n")


def main(argv=None, out=sys.stdout):
    parser = argparse.ArgumentParser(prog="python -m rmqproto.tools.decode",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=("frames", "commitlog", "consumequeue", "dledger"))
    parser.add_argument("files", nargs="+", help="files to decode, in order")
    parser.add_argument("--no-crc", action="store_true", help="commitlog: skip body CRC checks")
    args = parser.parse_args(argv)
    status = 0
    for path in args.files:
        with open(path, "rb") as fh:
            data = fh.read()
        base = _file_offset(path)
        try:
            if args.kind == "frames":
                items = decode_frames(data)
            elif args.kind == "commitlog":
                items = decode_commitlog(data, base, check_crc=not args.no_crc)
            elif args.kind == "consumequeue":
                items = decode_consumequeue(data, base)
            else:
                items = decode_dledger(data, base)
            for item in items:
                if item.get("stop") == "corrupt":
                    status = 1
                _emit(dict(item, file=path), out)
        except CodecError as exc:
            _emit({"type": "error", "file": path, "error": str(exc)}, out)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
