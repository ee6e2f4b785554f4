"""Our brokers on a store that fails under them (a full disk, read-only directories), and
a sender that remembers what every send was answered, for the checks that matter: every
message answered SEND_OK is stored, none answered with an error is (docs/store.md,
"Disk full and read-only directories")."""

from rmqproto.codec import headers as h
from rmqproto.codec import message as msg
from rmqproto.codec.codes import RequestCode as RC, ResponseCode as R
from rmqproto.codec.message import properties_to_string
from support.daemons import Daemon, start_nameserver
from support.javapeers import broker_port
from support.storecheck import check_store
from support.syncclient import SyncClient

__all__ = ["start_broker", "Sender", "Processes", "check_answers", "CQ_FILE_SIZE",
           "STORED_CODES"]

CQ_FILE_SIZE = 6000
#: Small consume-queue and index files: the fault is the commit log's unless a test says so.
SMALL_FILES = dict(mappedFileSizeConsumeQueue=CQ_FILE_SIZE, maxHashSlotNum=1000,
                   maxIndexNum=4000, cleanFileForciblyEnable="false")


def start_broker(workdir, plugin, store_root, namesrv_addr, port=None, **settings):
    """``twistd -n <plugin>`` (``rmq-master`` or ``rmq-slave``) with its store at
    ``store_root`` and its log in ``workdir``; ``(daemon, "127.0.0.1:port")``."""
    port = port or broker_port()
    values = dict(listenPort=port, bindAddress="127.0.0.1", brokerIP1="127.0.0.1",
                  brokerIP2="127.0.0.1", brokerName="broker-a", namesrvAddr=namesrv_addr,
                  storePathRootDir=store_root, **SMALL_FILES)
    values.update(settings)
    options = [item for name, value in values.items() for item in ("--" + name, value)]
    return Daemon(workdir, plugin, *options, port=port), "127.0.0.1:%d" % port


#: Java's answers for a message stored but not (yet) flushed or replicated as asked.
STORED_CODES = (R.FLUSH_DISK_TIMEOUT, R.FLUSH_SLAVE_TIMEOUT, R.SLAVE_NOT_AVAILABLE)


class Sender:
    """Sync sends of numbered messages (``KEYS`` and ``UNIQ_KEY`` are the number) over one
    connection; ``acked`` maps a key to the commit-log offset of its SEND_OK,
    ``unreplicated`` to that of an answer in :data:`STORED_CODES`, ``refused`` a key to
    the ``(code, remark)`` of any other answer."""

    def __init__(self, address, topic):
        self.client = SyncClient(address)
        self.topic = topic
        self.acked = {}
        self.unreplicated = {}
        self.refused = {}

    def send(self, body_size=1024, queue_id=0):
        """One send; its response code."""
        key = "%s-%d" % (self.topic,
                         len(self.acked) + len(self.unreplicated) + len(self.refused))
        header = h.SendMessageRequestHeaderV2(
            producer_group="PG", topic=self.topic, default_topic="TBW102",
            default_topic_queue_nums=4, queue_id=queue_id, sys_flag=0, born_timestamp=0, flag=0,
            properties=properties_to_string({"WAIT": "true", "KEYS": key, "UNIQ_KEY": key}),
            reconsume_times=0, unit_mode=False)
        body = (key.encode() + b" ") * (body_size // (len(key) + 1) + 1)
        answer = self.client.call(RC.SEND_MESSAGE_V2, header.to_ext_fields(), body[:body_size])
        if answer.code == R.SUCCESS or answer.code in STORED_CODES:
            offset = msg.decode_message_id(answer.ext_fields["msgId"])[1]
            (self.acked if answer.code == R.SUCCESS else self.unreplicated)[key] = offset
        else:
            self.refused[key] = (answer.code, answer.remark)
        return answer.code

    def close(self):
        self.client.close()


def check_answers(store_root, segment, senders):
    """Check the store at ``store_root`` (no broker running on it) against the senders'
    answers: each message answered as stored (SEND_OK or :data:`STORED_CODES`) at its
    offset and in its queue, no refused one anywhere, the consume queues complete; the
    check."""
    check = check_store(store_root, segment, CQ_FILE_SIZE)
    assert check.problems == []
    stored = {}
    for offset, record in check.records.items():
        for key in record.keys:
            stored.setdefault(key, []).append(offset)
    for sender in senders:
        for key, offset in [*sender.acked.items(), *sender.unreplicated.items()]:
            assert stored.get(key) == [offset], key
        for key in sender.refused:
            assert key not in stored, key
    return check


class Processes:
    """A NameServer and the brokers and senders a test starts against it, all stopped at
    the end of its ``with`` block."""

    def __init__(self, workdir):
        self.workdir = workdir
        self._daemons = []
        self._senders = []
        namesrv, self.namesrv_addr = start_nameserver(workdir)
        self._daemons.append(namesrv)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        for sender in self._senders:
            sender.close()
        for daemon in reversed(self._daemons):
            daemon.stop()

    def daemon(self, plugin, *args, port=None):
        """A :class:`~support.daemons.Daemon` of ours."""
        self._daemons.append(Daemon(self.workdir, plugin, *args, port=port))
        return self._daemons[-1]

    def broker(self, plugin, store_root, **settings):
        """:func:`start_broker`; ``(daemon, address)``."""
        daemon, address = start_broker(self.workdir, plugin, store_root, self.namesrv_addr,
                                       **settings)
        self._daemons.append(daemon)
        return daemon, address

    def sender(self, address, topic):
        self._senders.append(Sender(address, topic))
        return self._senders[-1]
