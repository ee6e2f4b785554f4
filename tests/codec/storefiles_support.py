"""The files of the real DefaultMessageStore run recorded in ``store_files.json`` (StoreFamily.java).

Files are stored with trailing zeros trimmed; :func:`store_files` pads them back.
Clock-derived values (store timestamps, index header times and ``time_diff``, the
index file name, the checkpoint) differ between runs; :func:`canonical` masks them.
"""

from rmqproto.codec import checkpoint, consumequeue, indexfile, message


class StoreFiles:
    def __init__(self, vectors):
        self.summary = vectors[0]["fields"]
        self.files = {}
        self.index_file_name = None
        for v in vectors[1:]:
            raw = bytes.fromhex(v["hex"])
            self.files[v["fields"]["path"]] = raw + bytes(v["fields"]["file_size"] - len(raw))
            if v["fields"]["path"] == "index":
                self.index_file_name = v["fields"]["file_name"]

    def paths(self, prefix):
        return sorted(p for p in self.files if p.startswith(prefix))

    def commitlog_records(self):
        """Every record of every segment (our scanner), with each segment's scan."""
        records, scans = [], []
        for path in self.paths("commitlog/"):
            scan = message.iter_records(self.files[path], check_crc=True)
            records += list(scan)
            scans.append((path, scan))
        return records, scans

    def queue_units(self):
        """``{"topic/queueId": [units]}`` from the consume-queue files, in file order."""
        queues = {}
        for path in self.paths("consumequeue/"):
            _, topic, queue_id, _ = path.split("/")
            queues.setdefault("%s/%s" % (topic, queue_id), []).extend(
                consumequeue.valid_units(self.files[path]))
        return queues

    def index(self):
        return indexfile.IndexFile(bytearray(self.files["index"]), self.summary["hash_slot_num"],
                                   self.summary["index_num"])


def store_files(vectors):
    return StoreFiles(vectors)


def canonical(files):
    """What must be identical between two runs: everything except clock-derived values."""
    records, scans = files.commitlog_records()
    for record in records:
        record.store_timestamp = 0
    index = files.index()
    entries = [index.entry(n)._replace(time_diff=0) for n in range(1, index.header.index_count)]
    header = index.header._replace(begin_timestamp=0, end_timestamp=0)
    puts = [dict(p, store_timestamp=0) for p in files.summary["puts"]]
    checkpoint_ok = checkpoint.decode_checkpoint(files.files["checkpoint"]) is not None
    return dict(
        records=[r.fields() for r in records], stops=[(p, s.stop, s.position) for p, s in scans],
        queues=files.queue_units(), index_header=header, index_entries=entries,
        slots=bytes(index.buffer[indexfile.INDEX_HEADER_SIZE:indexfile.entry_position(
            0, index.hash_slot_num)]),
        puts=puts, java_reads=files.summary["java_reads"], checkpoint=checkpoint_ok,
        paths=sorted(files.files))
