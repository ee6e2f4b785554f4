"""Child process of the kill -9 test: puts messages under SYNC_FLUSH on the real reactor and
prints one line per acknowledged put: ``ACK <commit-log offset> <queue id> <queue offset> <uniq key>``.

Usage: python sync_writer.py STORE_DIR IN_FLIGHT
"""

import sys

from twisted.internet import reactor

from rmqproto.codec.message import MessageRecord
from rmqproto.store.defaultstore import DefaultMessageStore
from rmqproto.store.results import PutMessageStatus


def main(root, in_flight):
    store = DefaultMessageStore(dict(
        storePathRootDir=root, mappedFileSizeCommitLog=64 * 1024,
        mappedFileSizeConsumeQueue=10 * 20, maxHashSlotNum=64, maxIndexNum=400,
        flushDiskType="SYNC_FLUSH"), reactor)
    store.load()
    store.start()
    counter = iter(range(10 ** 9))

    def send():
        n = next(counter)
        uniq = "K%09d" % n
        record = MessageRecord("KillTopic", bytes([n % 256]) * (100 + n % 700),
                               {"UNIQ_KEY": uniq, "TAGS": "T%d" % (n % 3)}, queue_id=n % 3,
                               born_host=("127.0.0.1", 40000), store_host=("127.0.0.1", 10911))
        store.put_message(record).addCallback(acked, n % 3, uniq)

    def acked(result, queue_id, uniq):
        if result.status is PutMessageStatus.PUT_OK:
            a = result.append_result
            sys.stdout.write("ACK %d %d %d %s\n" % (a.wrote_offset, queue_id, a.logics_offset, uniq))
            sys.stdout.flush()
        send()

    for _ in range(in_flight):
        send()
    sys.stdout.write("READY\n")
    sys.stdout.flush()
    reactor.run()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
