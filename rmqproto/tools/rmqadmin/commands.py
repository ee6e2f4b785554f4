"""The ``rmqadmin`` commands: each reads its arguments, asks the servers through an
:class:`~rmqproto.tools.rmqadmin.session.AdminSession` (or our producer / lite pull consumer)
and returns what to print (:mod:`rmqproto.tools.rmqadmin.output`). Names and flags are
``mqadmin``'s (4.9.8 ``*SubCommand`` classes) where it has the command."""

import datetime

from rmqproto.client import Message
from rmqproto.client.admin import DLQ_PREFIX, QUERY_MAX_NUM, RETRY_PREFIX, broker_addresses
from rmqproto.client.blocking import LitePullConsumer, Producer, now_ms
from rmqproto.client.errors import ClientError
from rmqproto.client.route import MessageQueue
from rmqproto.codec import message as wire
from rmqproto.codec.bodies.route import MASTER_ID
from rmqproto.codec.bodies.topic import perm_to_string
from rmqproto.tools.rmqadmin.output import Record, Sections, Table

#: ``MixAll.TOOLS_CONSUMER_GROUP``: the group ``consumeMessage`` pulls as.
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
#: ``MixAll.SELF_TEST_PRODUCER_GROUP``-like: the group ``sendMessage`` sends as (``SendMessageCommand``).
TOOLS_PRODUCER_GROUP = "PID_RMQ_ADMIN"

#: name -> (function, help, [(flags, argparse settings)])
COMMANDS = {}


def command(name, help_text, *arguments):
    """Register the decorated ``function(session, args)`` as command ``name``."""
    def register(function):
        COMMANDS[name] = (function, help_text, arguments)
        return function
    return register


def arg(*flags, **settings):
    return flags, settings


def parse_time(text):
    """A time argument: ms since the epoch, ``now``, or ``yyyy-MM-dd#HH:mm:ss:SSS`` in local
    time (``UtilAll.parseDate``, ``YYYY_MM_DD_HH_MM_SS_SSS``)."""
    if text == "now":
        return now_ms()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        moment = datetime.datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f")
    except ValueError:
        raise ClientError("timestamp %r is neither now, milliseconds nor yyyy-MM-dd#HH:mm:ss:SSS"
                          % text) from None
    return int(moment.timestamp() * 1000)


def _boolean(text):
    if text.lower() not in ("true", "false"):
        raise ValueError(text)
    return text.lower() == "true"


_BROKER = arg("-b", "--brokerAddr", help="a broker's address, host:port")
_CLUSTER = arg("-c", "--clusterName", help="every broker of this cluster")
_TOPIC = arg("-t", "--topic", required=True, help="topic name")


def _one_or_cluster(session, args, masters_only=False):
    """``[(label, address)]``: ``-b``'s broker, or every broker (master) of ``-c``'s cluster."""
    if args.brokerAddr:
        return [(args.brokerAddr, args.brokerAddr)]
    info = session.run(session.core.cluster_info())
    return [("%s %s[%d]" % (address, name, broker_id), address)
            for _, name, broker_id, address in broker_addresses(info, args.clusterName)
            if broker_id == MASTER_ID or not masters_only]


def _per_broker(session, args, fetch, masters_only=False):
    """``fetch(address)`` of ``-b``'s broker (that answer), or of ``-c``'s brokers (sections)."""
    targets = _one_or_cluster(session, args, masters_only)
    if args.brokerAddr:
        return fetch(targets[0][1])
    return Sections((name, fetch(address)) for name, address in targets)


# ---------------------------------------------------------------- cluster and brokers

@command("clusterList", "the brokers of each cluster, with their versions",
         arg("-c", "--clusterName", help="only this cluster"))
def cluster_list(session, args):
    info = session.run(session.core.cluster_info())
    table = Table(["clusterName", "brokerName", "brokerId", "address", "version", "putTps",
                   "commitLogMaxOffset"])
    for cluster, name, broker_id, address in broker_addresses(info, args.clusterName):
        try:
            runtime = session.run(session.core.runtime_info(address))
        except ClientError:
            runtime = {}
        tps = (runtime.get("putTps") or "").split()
        table.add(cluster, name, broker_id, address, runtime.get("brokerVersionDesc"),
                  float(tps[0]) if tps else None, _int(runtime.get("commitLogMaxOffset")))
    return table


def _int(text):
    return int(text) if text not in (None, "") else None


@command("brokerStatus", "a broker's runtime figures (GET_BROKER_RUNTIME_INFO)", _BROKER, _CLUSTER)
def broker_status(session, args):
    return _per_broker(session, args, lambda address: Record(
        sorted(session.run(session.core.runtime_info(address)).items())))


@command("getBrokerConfig", "a broker's settings", _BROKER, _CLUSTER)
def get_broker_config(session, args):
    return _per_broker(session, args, lambda address: Record(
        sorted(session.run(session.core.broker_config(address)).items())))


@command("updateBrokerConfig", "change one setting of a broker (or of every broker of a cluster)",
         _BROKER, _CLUSTER, arg("-k", "--key", required=True, help="the setting's name"),
         arg("-v", "--value", required=True, help="its new value"))
def update_broker_config(session, args):
    table = Table(["address", "key", "value", "result"])
    for _, address in _one_or_cluster(session, args):
        session.run(session.core.update_broker_config(address, {args.key: args.value}))
        table.add(address, args.key, args.value, "success")
    return table


@command("haStatus", "replication: each slave's ack offset and lag behind its master, or "
         "the Raft role, term and indices of each member of a DLedger group (-g and -p)",
         arg("-c", "--clusterName", help="only this cluster's masters"),
         arg("-g", "--dledgerGroup", help="a DLedger group's name"),
         arg("-p", "--dledgerPeers", help="its peers, as DLedger writes them: n0-host:port;n1-host:port"))
def ha_status(session, args):
    if bool(args.dledgerGroup) != bool(args.dledgerPeers):
        raise ClientError("-g (DLedger group) and -p (its peers) go together")
    if args.dledgerGroup:
        return Table(["memberId", "address", "role", "leaderId", "term", "ledgerEndIndex",
                      "committedIndex"],
                     session.run(session.core.raft_members(args.dledgerGroup, args.dledgerPeers)))
    table = Table(["brokerName", "master", "masterMaxOffset", "slave", "slaveAckOffset",
                   "lagBytes", "inSync", "source"])
    for master in session.run(session.core.ha_status(args.clusterName)):
        for slave in master.slaves or [None]:
            table.add(master.broker_name, master.address, master.max_offset,
                      *(slave or (None, None, None, None)), master.source)
    return table


# ---------------------------------------------------------------- topics

@command("topicList", "every topic the NameServer knows",
         arg("-c", "--clusterModel", action="store_true",
             help="also each topic's cluster and consumer groups"))
def topic_list(session, args):
    topics = session.run(session.core.topic_list())
    if not args.clusterModel:
        return Table(["topic"], [[topic] for topic in sorted(topics)])
    table = Table(["clusterName", "topic", "consumerGroup"])
    for topic in sorted(topics):
        if topic.startswith((RETRY_PREFIX, DLQ_PREFIX)):
            continue
        try:
            route = session.run(session.core.topic_route(topic))
            groups = session.run(session.core.consumer_groups(topic))
        except ClientError:
            continue
        clusters = sorted({b.cluster for b in route.broker_datas or ()})
        for group in groups or [None]:
            table.add(",".join(clusters), topic, group)
    return table


@command("topicRoute", "a topic's brokers and queues", _TOPIC)
def topic_route(session, args):
    route = session.run(session.core.topic_route(args.topic))
    brokers = Table(["brokerName", "cluster", "brokerId", "address"])
    for broker in sorted(route.broker_datas or (), key=lambda b: b.broker_name):
        for broker_id, address in sorted((broker.broker_addrs or {}).items()):
            brokers.add(broker.broker_name, broker.cluster, broker_id, address)
    queues = Table(["brokerName", "readQueueNums", "writeQueueNums", "perm", "topicSysFlag"])
    for q in sorted(route.queue_datas or (), key=lambda q: q.broker_name):
        queues.add(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag)
    parts = {"brokers": brokers, "queues": queues}
    if route.order_topic_conf:
        parts["order"] = Record(orderTopicConf=route.order_topic_conf)
    return Sections(parts)


@command("topicStatus", "each queue's min and max offset", _TOPIC)
def topic_status(session, args):
    table = Table(["brokerName", "queueId", "minOffset", "maxOffset", "lastUpdateTimestamp"])
    for queue, offsets in sorted(session.run(session.core.topic_stats(args.topic)).items()):
        table.add(queue.broker_name, queue.queue_id, offsets.min_offset, offsets.max_offset,
                  offsets.last_update_timestamp or None)
    return table


@command("updateTopic", "create a topic or change its queues on a broker or a cluster's masters",
         _BROKER, _CLUSTER, _TOPIC,
         arg("-r", "--readQueueNums", type=int, default=8, help="read queues (8)"),
         arg("-w", "--writeQueueNums", type=int, default=8, help="write queues (8)"),
         arg("-p", "--perm", type=int, default=6, choices=(2, 4, 6), help="2 W, 4 R, 6 RW (6)"),
         arg("-o", "--order", type=_boolean, default=False, help="ordered topic: true or false"))
def update_topic(session, args):
    targets = ([(None, args.brokerAddr)] if args.brokerAddr
               else session.run(session.core.masters(args.clusterName)))
    table = Table(["address", "topic", "readQueueNums", "writeQueueNums", "perm", "order"])
    for _, address in targets:
        session.run(session.core.create_topic(address, args.topic, args.readQueueNums,
                                              args.writeQueueNums, args.perm, args.order))
        table.add(address, args.topic, args.readQueueNums, args.writeQueueNums,
                  perm_to_string(args.perm), args.order)
    if args.order:
        names = [name for name, _ in targets] if not args.brokerAddr else [
            name for _, name, _, address in broker_addresses(session.run(session.core.cluster_info()))
            if address == args.brokerAddr]
        session.run(session.core.put_order_conf(
            args.topic, ";".join("%s:%d" % (name, args.writeQueueNums) for name in names)))
    return table


@command("deleteTopic", "delete a topic from a cluster's masters and the NameServers", _TOPIC,
         arg("-c", "--clusterName", required=True, help="the cluster to delete it from"))
def delete_topic(session, args):
    masters = session.run(session.core.delete_topic(args.topic, args.clusterName))
    return Record(topic=args.topic, clusterName=args.clusterName,
                  brokers=[address for _, address in masters],
                  nameServers=list(session.core.nameservers.addresses))


# ---------------------------------------------------------------- consumers

@command("consumerProgress", "a consumer group's offsets and lag per queue (all groups without -g)",
         arg("-g", "--groupName", help="the consumer group"))
def consumer_progress(session, args):
    if args.groupName:
        stats = session.run(session.core.consume_stats(args.groupName))
        table = Table(["topic", "brokerName", "queueId", "brokerOffset", "consumerOffset", "diff",
                       "lastTimestamp"])
        for queue, w in sorted(stats.offset_table.items(),
                               key=lambda item: (item[0].topic, item[0].broker_name, item[0].queue_id)):
            table.add(queue.topic, queue.broker_name, queue.queue_id, w.broker_offset,
                      w.consumer_offset, w.broker_offset - w.consumer_offset, w.last_timestamp or None)
        return Sections(queues=table, total=Record(consumeTps=stats.consume_tps,
                                                   diffTotal=stats.total_diff()))
    table = Table(["group", "count", "consumeType", "messageModel", "consumeTps", "diffTotal"])
    for topic in sorted(session.run(session.core.topic_list())):
        if not topic.startswith(RETRY_PREFIX):
            continue
        group = topic[len(RETRY_PREFIX):]
        try:
            stats = session.run(session.core.consume_stats(group))
            online = session.run(session.core.consumer_connection(group))
        except ClientError:
            continue
        table.add(group, len(online.connection_set) if online else 0,
                  online.consume_type.value if online and online.consume_type else None,
                  online.message_model.value if online and online.message_model else None,
                  stats.consume_tps, stats.total_diff())
    return table


@command("resetOffsetByTime", "move a consumer group's offsets of a topic to a time",
         arg("-g", "--group", required=True, help="the consumer group"), _TOPIC,
         arg("-s", "--timestamp", required=True,
             help="now, ms since the epoch, or yyyy-MM-dd#HH:mm:ss:SSS; -1: the queues' ends"),
         arg("-f", "--force", type=_boolean, default=True,
             help="also move offsets forward (true), or only back (false)"))
def reset_offset_by_time(session, args):
    timestamp = -1 if args.timestamp == "-1" else parse_time(args.timestamp)
    how, result = session.run(session.core.reset_offset(args.group, args.topic, timestamp, args.force))
    if how == "online":
        return Table(["brokerName", "queueId", "offset"],
                     [[q.broker_name, q.queue_id, offset] for q, offset in sorted(result.items())])
    return Table(["brokerName", "queueId", "brokerOffset", "consumerOffset", "timestampOffset",
                  "resetOffset"],
                 [[r.queue.broker_name, r.queue.queue_id, r.broker_offset, r.consumer_offset,
                   r.timestamp_offset, r.reset_offset] for r in result])


# ---------------------------------------------------------------- messages

def _body(data):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "hex:" + data.hex()


def message_record(record):
    """A stored message (``MessageRecord``) as ``queryMsgById`` shows it (``printMsg``)."""
    return Record([
        ("offsetMsgId", record.msg_id), ("msgId", record.uniq_key), ("topic", record.topic),
        ("tags", record.tags), ("keys", " ".join(record.keys)), ("queueId", record.queue_id),
        ("queueOffset", record.queue_offset), ("commitLogOffset", record.commit_log_offset),
        ("reconsumeTimes", record.reconsume_times), ("bornTimestamp", record.born_timestamp),
        ("storeTimestamp", record.store_timestamp), ("bornHost", "%s:%d" % record.born_host),
        ("storeHost", "%s:%d" % record.store_host), ("sysFlag", record.sys_flag),
        ("properties", dict(record.properties)), ("body", _body(wire.uncompressed_body(record)))])


def _view(session, msg_id, topic):
    """The record of an offset message id, or with ``topic`` of a ``UNIQ_KEY``."""
    try:
        return session.run(session.core.view_message(msg_id))
    except ClientError:
        if topic is None:
            raise
    found = session.run(session.core.query_messages(topic, msg_id, unique=True))
    if not found:
        raise ClientError("no message %s in topic %s" % (msg_id, topic))
    return found[-1]


@command("queryMsgById", "a message by its offset message id (with -t also by its UNIQ_KEY)",
         arg("-i", "--msgId", required=True, help="message ids, separated by commas"),
         arg("-t", "--topic", help="the topic, to find a message by the producer's UNIQ_KEY"))
def query_msg_by_id(session, args):
    ids = [part.strip() for part in args.msgId.split(",") if part.strip()]
    if not ids:
        raise ClientError("no message id given")
    records = [(msg_id, message_record(_view(session, msg_id, args.topic))) for msg_id in ids]
    return records[0][1] if len(records) == 1 else Sections(records)


@command("queryMsgByKey", "the messages of a topic with a key", _TOPIC,
         arg("-k", "--msgKey", required=True, help="the key"),
         arg("-b", "--beginTimestamp", type=int, default=0, help="ms since the epoch (0)"),
         arg("-e", "--endTimestamp", type=int, default=2**63 - 1, help="ms since the epoch (no limit)"),
         arg("-c", "--maxNum", type=int, default=QUERY_MAX_NUM, help="at most this many (64)"))
def query_msg_by_key(session, args):
    records = session.run(session.core.query_messages(
        args.topic, args.msgKey, args.maxNum, args.beginTimestamp, args.endTimestamp))
    table = Table(["msgId", "offsetMsgId", "brokerName", "queueId", "queueOffset", "storeTimestamp"])
    names = {address: name for name, address in session.run(session.core.route_masters(args.topic))}
    for r in records[:args.maxNum]:
        table.add(r.uniq_key or r.msg_id, r.msg_id, names.get("%s:%d" % r.store_host), r.queue_id,
                  r.queue_offset, r.store_timestamp)
    return table


def _consumer(session, group):
    return LitePullConsumer(namesrvAddr=session.core.config.namesrvAddr, consumerGroup=group,
                            autoCommit=False, pullBatchSize=32)


def _pull_range(consumer, queue, start, end, limit):
    """The messages of ``queue`` from offset ``start`` up to (not with) ``end``, at most ``limit``."""
    consumer.assign([queue])
    consumer.seek(queue, start)
    found = []
    while len(found) < limit:
        batch = [m for m in consumer.poll(0) if m.queue_offset < end]
        if not batch:
            break
        found += batch[:limit - len(found)]
    return found


@command("queryMsgByOffset", "the message at an offset of a queue", _TOPIC,
         arg("-b", "--brokerName", required=True, help="the queue's broker name"),
         arg("-i", "--queueId", type=int, required=True, help="the queue id"),
         arg("-o", "--offset", type=int, required=True, help="the queue offset"))
def query_msg_by_offset(session, args):
    queue = MessageQueue(args.topic, args.brokerName, args.queueId)
    with _consumer(session, TOOLS_CONSUMER_GROUP) as consumer:
        found = _pull_range(consumer, queue, args.offset, args.offset + 1, 1)
    if not found:
        raise ClientError("no message at offset %d of %s" % (args.offset, queue))
    return message_record(session.run(session.core.view_message(found[0].offset_msg_id)))


@command("sendMessage", "send one message", _TOPIC,
         arg("-p", "--body", required=True, help="the body (UTF-8)"),
         arg("-k", "--key", dest="keys", help="keys, separated by spaces"),
         arg("-c", "--tags", help="the tag"),
         arg("-b", "--broker", help="the broker name (with -i: send to that queue)"),
         arg("-i", "--qid", type=int, help="the queue id (with -b)"))
def send_message(session, args):
    if (args.broker is None) != (args.qid is None):
        raise ClientError("-b (broker name) and -i (queue id) go together")
    message = Message(args.topic, args.body, tags=args.tags,
                      keys=args.keys.split() if args.keys else None)
    queue = MessageQueue(args.topic, args.broker, args.qid)
    selector = None if args.broker is None else (lambda queues, message, arg: queue)
    with Producer(namesrvAddr=session.core.config.namesrvAddr,
                  producerGroup=TOOLS_PRODUCER_GROUP) as producer:
        result = producer.send(message, selector)
    return Table(["brokerName", "queueId", "sendStatus", "msgId", "offsetMsgId", "queueOffset"], [[
        result.queue.broker_name, result.queue.queue_id, result.status.value, result.msg_id,
        result.offset_msg_id, result.queue_offset]])


@command("consumeMessage", "read messages of a topic (of one broker, of one queue) without "
         "committing", _TOPIC,
         arg("-b", "--brokerName", help="only this broker's queues"),
         arg("-i", "--queueId", type=int, help="only this queue (with -b)"),
         arg("-o", "--offset", type=int, help="from this offset (with -i)"),
         arg("-g", "--consumerGroup", default=TOOLS_CONSUMER_GROUP, help="pull as this group"),
         arg("-s", "--beginTimestamp", help="from this time (ms or yyyy-MM-dd#HH:mm:ss:SSS)"),
         arg("-e", "--endTimestamp", help="up to this time"),
         arg("-c", "--messageNumber", type=int, default=128, help="at most this many (128)"))
def consume_message(session, args):
    if args.queueId is not None and args.brokerName is None:
        raise ClientError("Please set the brokerName before queueId!")
    if args.offset is not None and args.queueId is None:
        raise ClientError("please set queueId before offset!")
    if args.messageNumber <= 0:
        raise ClientError("please input a positive messageNumber!")
    stats = session.run(session.core.topic_stats(args.topic))
    queues = [q for q in sorted(stats) if args.brokerName in (None, q.broker_name)
              and args.queueId in (None, q.queue_id)]
    if not queues:
        raise ClientError("no such queue of topic %s" % args.topic)
    table = Table(["brokerName", "queueId", "queueOffset", "msgId", "tags", "keys", "body"])
    left = args.messageNumber
    with _consumer(session, args.consumerGroup) as consumer:
        for queue in queues:
            start, end = stats[queue].min_offset, stats[queue].max_offset
            if args.beginTimestamp:
                start = consumer.offset_for_timestamp(queue, parse_time(args.beginTimestamp))
            if args.endTimestamp:
                end = consumer.offset_for_timestamp(queue, parse_time(args.endTimestamp))
            start = max(start, args.offset or 0)
            if left <= 0 or start >= end:
                continue
            for m in _pull_range(consumer, queue, start, end, left):
                table.add(queue.broker_name, queue.queue_id, m.queue_offset, m.msg_id, m.tags,
                          " ".join(m.keys), _body(m.body))
                left -= 1
    return table
