"""The message store as the broker sees it: :class:`IMessageStore` (Java's ``MessageStore``).

Everything the client protocol, the HA service and the admin requests need goes through
this interface; :class:`~rmqproto.store.defaultstore.DefaultMessageStore` implements it
in RocketMQ's on-disk format, and a plugin may provide another implementation.

Offsets: *physical* offsets are byte positions in the commit log; *logical* (queue)
offsets count messages in one consume queue. Time is passed in (``now``, ms) wherever
a decision depends on it.
"""

from zope.interface import Attribute, Interface

__all__ = ["IMessageStore"]


class IMessageStore(Interface):
    """A RocketMQ message store."""

    config = Attribute("The store settings (a dict keyed by MessageStoreConfig property names).")

    def load():
        """Open the files on disk and recover (normal or, with an ``abort`` file, abnormal)."""

    def start():
        """Begin flushing, dispatching and cleaning; create the ``abort`` file."""

    def shutdown():
        """Flush everything, stop background work, remove the ``abort`` file (a clean stop)."""

    def put_message(record, wait_store_msg_ok=True):
        """Append one message, a :class:`~rmqproto.codec.message.MessageRecord` whose topic,
        queue, body, properties, flags, born/store hosts and born timestamp the send path set.

        The store assigns the store timestamp, commit-log and queue offsets (and moves a
        message with a ``DELAY`` level to ``SCHEDULE_TOPIC_XXXX``, ``CommitLog#asyncPutMessage``). Returns
        a ``Deferred`` firing with a :class:`~rmqproto.store.results.PutMessageResult` once
        the configured flush (and, for SYNC_MASTER, replication) wait is over.

        ``wait_store_msg_ok`` is the message's ``WAIT`` (Java's ``isWaitStoreMsgOK``); it is
        an argument because the stored properties need not hold it (the send path drops it,
        as ``SendMessageProcessor`` does). When false, the ``Deferred`` fires with PUT_OK as soon as the
        record is appended, without the SYNC_FLUSH or SYNC_MASTER wait.
        """

    def put_messages(records, wait_store_msg_ok=True):
        """Append a batch: ``records`` of one topic and queue, stored contiguously; a
        ``Deferred`` of one :class:`PutMessageResult` for all of them (``CommitLog#asyncPutMessages``).
        ``wait_store_msg_ok`` as for :meth:`put_message` (the batch's ``WAIT``). The broker
        hands a :class:`~rmqproto.codec.message.PackedBatch` where it can: a sequence of
        the records that makes them only when read, so a store may write it whole."""

    def get_message(group, topic, queue_id, offset, max_msg_nums, message_filter=None):
        """Read up to ``max_msg_nums`` messages of one queue from logical ``offset``.

        ``message_filter(tags_code)`` (or ``None``) decides which consume-queue units match.
        Returns a :class:`~rmqproto.store.results.GetMessageResult`.
        """

    def get_max_offset_in_queue(topic, queue_id):
        """The logical offset after the last message (0 for an unknown queue)."""

    def get_min_offset_in_queue(topic, queue_id):
        """The first logical offset still readable."""

    def get_commit_log_offset_in_queue(topic, queue_id, consume_queue_offset):
        """The physical offset of the message at a logical offset (0 if none)."""

    def get_offset_in_queue_by_time(topic, queue_id, timestamp):
        """The logical offset of the first message stored at or after ``timestamp`` (ms)."""

    def get_earliest_message_time(topic, queue_id):
        """Store timestamp of the queue's first readable message, or -1."""

    def get_message_store_timestamp(topic, queue_id, consume_queue_offset):
        """Store timestamp of the message at a logical offset, or -1."""

    def look_message_by_offset(commit_log_offset):
        """The :class:`~rmqproto.codec.message.MessageRecord` at a physical offset, or ``None``."""

    def select_one_message_by_offset(commit_log_offset):
        """The raw stored bytes of the record at a physical offset, or ``None``."""

    def query_message(topic, key, max_num, begin_timestamp, end_timestamp):
        """Records whose ``KEYS`` or ``UNIQ_KEY`` equal ``key``: a :class:`QueryMessageResult`."""

    def get_max_phy_offset():
        """The commit-log offset after the last byte written."""

    def get_min_phy_offset():
        """The first commit-log offset still on disk."""

    def get_commit_log_data(offset, max_size):
        """Up to ``max_size`` raw commit-log bytes from ``offset`` (the HA master's transfer),
        never across a segment end; ``b""`` when there is nothing."""

    def append_to_commit_log(start_offset, data):
        """Append replicated commit-log bytes at exactly ``start_offset`` (an HA slave);
        returns whether they were accepted."""

    def dispatch_behind_bytes():
        """Commit-log bytes not yet dispatched to consume queues and the index."""

    def get_topics():
        """The topics that have consume queues."""

    def clean_unused_topic(topics):
        """Delete the consume queues of the topics not in ``topics`` (DELETE_TOPIC_IN_BROKER);
        the number of topics cleaned."""

    def clean_expired_consumer_queue():
        """Destroy the consume queues (but the schedule topic's) whose messages are all below
        the commit log's min offset (CLEAN_EXPIRED_CONSUMEQUEUE); the number destroyed."""

    def query_consume_queue(topic, queue_id, index, count):
        """QUERY_CONSUME_QUEUE's look into one queue: None when there is no such queue, else
        ``(min offset, max offset, units)``, ``units`` up to ``count`` ``(commit-log offset,
        size, tags code)`` from logical offset ``index`` (None when it is not there)."""

    def runtime_info():
        """Java's ``getRuntimeInfo`` key/value table (strings), for GET_BROKER_RUNTIME_INFO."""

    def delete_files_manually():
        """Let the next retention passes delete expired files at any hour
        (``executeDeleteFilesManually``, admin DELETE_EXPIRED_COMMITLOG)."""
