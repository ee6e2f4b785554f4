"""The admin requests of ``mqadmin`` (``DefaultMQAdminExtImpl``, ``MQClientAPIImpl``, 4.9.8),
without I/O: as for the producer (:mod:`rmqproto.client.producer`), every operation is a
generator that yields :class:`~rmqproto.client.lookup.Call` and is sent back
:class:`~rmqproto.client.lookup.Reply`; a transport runs it (``rmqadmin`` runs it over
blocking sockets, :mod:`rmqproto.tools.rmqadmin`).

Answers are the decoded bodies (``ClusterInfo``, ``TopicStatsTable``, ``ConsumeStats`` …) or
plain dicts and lists of facts; printing them is the command line's business. A server that
cannot be reached raises :class:`~rmqproto.client.errors.ClientError`, an error code
:class:`~rmqproto.client.errors.BrokerError`.
"""

import random
from collections import namedtuple

from rmqproto.client.config import _CLIENT, _Settings
from rmqproto.client.errors import BrokerError, ClientError
from rmqproto.client.lookup import Call, NameServerLookup, request
from rmqproto.client.route import MessageQueue
from rmqproto.codec import message as wire
from rmqproto.codec.bodies.client import ConsumerConnection, GroupList
from rmqproto.codec.bodies.ha import HARuntimeInfo
from rmqproto.codec.bodies.offsets import ConsumeStats, ResetOffsetBody, TopicStatsTable
from rmqproto.codec.bodies.route import MASTER_ID, ClusterInfo, KVTable, TopicList
from rmqproto.codec.bodies.topic import PERM_READ, PERM_WRITE
from rmqproto.codec.codes import RequestCode, RequestCodeV5, ResponseCode
from rmqproto.codec.dledger_rpc import DLedgerRequestCode, MetadataRequest, MetadataResponse
from rmqproto.codec.headers import (
    CreateTopicRequestHeader, DeleteTopicFromNamesrvRequestHeader, DeleteTopicRequestHeader,
    GetConsumeStatsRequestHeader, GetConsumerConnectionListRequestHeader,
    GetMaxOffsetRequestHeader, GetTopicStatsInfoRequestHeader, PutKVConfigRequestHeader,
    QueryMessageRequestHeader, QueryTopicConsumeByWhoRequestHeader, ResetOffsetRequestHeader,
    SearchOffsetRequestHeader, UpdateConsumerOffsetRequestHeader, ViewMessageRequestHeader)
from rmqproto.config.javaprops import dump_properties, parse_properties
from rmqproto.errors import CodecError

#: ``MixAll.RETRY_GROUP_TOPIC_PREFIX``: a consumer group's retry topic is this and the group.
RETRY_PREFIX = "%RETRY%"
#: ``MixAll.DLQ_GROUP_TOPIC_PREFIX``.
DLQ_PREFIX = "%DLQ%"
#: ``NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG``: the KV namespace of ordered topics' ``orderConf``.
ORDER_TOPIC_NAMESPACE = "ORDER_TOPIC_CONFIG"
#: ``MixAll.UNIQUE_MSG_QUERY_FLAG``: a QUERY_MESSAGE by a message's ``UNIQ_KEY``.
UNIQUE_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
#: How many messages a QUERY_MESSAGE by key asks for (``QueryMsgByKeySubCommand``'s 64).
QUERY_MAX_NUM = 64
#: How long an admin request may take (``DefaultMQAdminExt``'s ``timeoutMillis``).
ADMIN_TIMEOUT_MS = 5000
#: QUERY_MESSAGE's time limit (``MQAdminImpl#queryMessage``: 15 s).
QUERY_TIMEOUT_MS = 15_000

_ADMIN = {"adminTimeoutMillis": ADMIN_TIMEOUT_MS}

#: One slave of a master: ``ack_offset`` is the commit-log offset it has (the master's view
#: from GET_BROKER_HA_STATUS; the slave's own ``commitLogMaxOffset`` on a 4.9 broker).
SlaveProgress = namedtuple("SlaveProgress", "address ack_offset lag_bytes in_sync")
#: A master's replication: its commit-log max offset and one :class:`SlaveProgress` a slave;
#: ``source`` is ``"GET_BROKER_HA_STATUS"`` or ``"GET_BROKER_RUNTIME_INFO"``.
MasterProgress = namedtuple("MasterProgress", "broker_name address max_offset slaves source")
#: One DLedger member as its METADATA answer shows it (``term`` and the indices: ``None``
#: from a Java DLedger member, whose answer has none).
RaftMember = namedtuple("RaftMember",
                        "member_id address role leader_id term ledger_end_index committed_index")
#: One queue's rollback (``RollbackStats``, ``resetOffsetByTimestampOld``).
Rollback = namedtuple("Rollback", "queue broker_offset consumer_offset timestamp_offset reset_offset")


class AdminConfig(_Settings):
    """The settings of an admin client: the NameServers and ``adminTimeoutMillis``."""

    _DEFAULTS = {**_CLIENT, **_ADMIN}
    _KIND = "admin"
    __slots__ = tuple(_DEFAULTS)


def broker_addresses(cluster_info, cluster=None):
    """``[(cluster, broker name, broker id, address)]`` of ``cluster_info``, sorted; only
    ``cluster``'s brokers when given (:class:`ClientError` if it has none)."""
    names = {}
    for name_of_cluster, broker_names in (cluster_info.cluster_addr_table or {}).items():
        for name in broker_names:
            names[name] = name_of_cluster
    found = []
    for name, data in sorted((cluster_info.broker_addr_table or {}).items()):
        owner = names.get(name, data.cluster)
        if cluster is not None and owner != cluster:
            continue
        for broker_id, address in sorted((data.broker_addrs or {}).items()):
            found.append((owner, name, broker_id, address))
    if cluster is not None and not found:
        raise ClientError("no broker in cluster %s" % cluster)
    return found


def _ok(answer, address, expected=(ResponseCode.SUCCESS,)):
    if answer.code not in expected:
        raise BrokerError(answer.code, answer.remark, address)
    return answer


class AdminCore(NameServerLookup):
    """One admin client: the NameServers of ``config`` and the requests ``mqadmin`` makes."""

    def __init__(self, config, rng=None):
        super().__init__(config, rng or random.Random())

    # ------------------------------------------------------------ plumbing

    def call(self, address, code, header=None, body=None, timeout=None):
        """Generator: the response of one request to ``address``; :class:`ClientError` when
        the server cannot be reached or does not answer in time."""
        reply = yield Call(address, request(code, header, body),
                           timeout or self.config.adminTimeoutMillis, False)
        if reply.error is not None:
            raise ClientError("%s: %s" % (address, reply.error)) from reply.error
        return reply.response

    def ask(self, code, header=None, body=None):
        """Generator: a NameServer's SUCCESS response to a request (:class:`BrokerError` else)."""
        answer, _ = yield from self.ask_nameserver(request(code, header, body), 0)
        return _ok(answer, None)

    # ------------------------------------------------------------ NameServer

    def cluster_info(self):
        """Generator: GET_BROKER_CLUSTER_INFO's :class:`ClusterInfo`."""
        answer = yield from self.ask(RequestCode.GET_BROKER_CLUSTER_INFO)
        return ClusterInfo.from_json(answer.body)

    def topic_list(self):
        """Generator: every topic the NameServer knows (GET_ALL_TOPIC_LIST_FROM_NAMESERVER)."""
        answer = yield from self.ask(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return list(TopicList.from_json(answer.body).topic_list)

    def topic_route(self, topic):
        """Generator: ``topic``'s ``TopicRouteData`` (``examineTopicRouteInfo``)."""
        data, _ = yield from self.fetch_route(topic, 0)
        if data is None:
            raise BrokerError(ResponseCode.TOPIC_NOT_EXIST,
                              "No topic route info in name server for the topic: %s" % topic)
        return data

    def masters(self, cluster):
        """Generator: ``[(broker name, master address)]`` of ``cluster`` (``fetchMasterAddrByClusterName``)."""
        info = yield from self.cluster_info()
        return [(name, address) for _, name, broker_id, address in broker_addresses(info, cluster)
                if broker_id == MASTER_ID]

    def route_masters(self, topic):
        """Generator: ``[(broker name, address)]`` of ``topic``'s brokers, each its master,
        else its first slave (``BrokerData#selectBrokerAddr`` without the randomness)."""
        data = yield from self.topic_route(topic)
        found = []
        for broker in sorted(data.broker_datas or (), key=lambda b: b.broker_name):
            addrs = broker.broker_addrs or {}
            if addrs:
                found.append((broker.broker_name, addrs.get(MASTER_ID) or addrs[min(addrs)]))
        return found

    # ------------------------------------------------------------ topics

    def topic_stats(self, topic):
        """Generator: ``{MessageQueue: TopicOffset}`` over ``topic``'s brokers (``examineTopicStats``)."""
        table = {}
        for _, address in (yield from self.route_masters(topic)):
            answer = yield from self.call(address, RequestCode.GET_TOPIC_STATS_INFO,
                                          GetTopicStatsInfoRequestHeader(topic=topic))
            for queue, offsets in TopicStatsTable.from_json(_ok(answer, address).body).offset_table.items():
                table[MessageQueue(queue.topic, queue.broker_name, queue.queue_id)] = offsets
        return table

    def consumer_groups(self, topic):
        """Generator: the groups consuming ``topic`` on any of its brokers (QUERY_TOPIC_CONSUME_BY_WHO)."""
        groups = set()
        for _, address in (yield from self.route_masters(topic)):
            answer = yield from self.call(address, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
                                          QueryTopicConsumeByWhoRequestHeader(topic=topic))
            groups.update(GroupList.from_json(_ok(answer, address).body).group_list)
        return sorted(groups)

    def create_topic(self, address, topic, read_queues=8, write_queues=8, perm=PERM_READ | PERM_WRITE,
                     order=False, sys_flag=0):
        """Generator: UPDATE_AND_CREATE_TOPIC on the broker at ``address`` (``createAndUpdateTopicConfig``)."""
        header = CreateTopicRequestHeader(
            topic=topic, default_topic="TBW102", read_queue_nums=read_queues,
            write_queue_nums=write_queues, perm=perm, topic_filter_type="SINGLE_TAG",
            topic_sys_flag=sys_flag, order=order)
        _ok((yield from self.call(address, RequestCode.UPDATE_AND_CREATE_TOPIC, header)), address)

    def put_order_conf(self, topic, order_conf):
        """Generator: the ``orderConf`` of an ordered topic in every NameServer's KV table
        (``createOrUpdateOrderConf``)."""
        header = PutKVConfigRequestHeader(namespace=ORDER_TOPIC_NAMESPACE, key=topic, value=order_conf)
        for address in self.nameservers.addresses:
            _ok((yield from self.call(address, RequestCode.PUT_KV_CONFIG, header)), address)

    def delete_topic(self, topic, cluster):
        """Generator: DELETE_TOPIC_IN_BROKER on ``cluster``'s masters, then
        DELETE_TOPIC_IN_NAMESRV on every NameServer (``DeleteTopicSubCommand``); the masters."""
        masters = yield from self.masters(cluster)
        for _, address in masters:
            answer = yield from self.call(address, RequestCode.DELETE_TOPIC_IN_BROKER,
                                          DeleteTopicRequestHeader(topic=topic))
            _ok(answer, address)
        for address in self.nameservers.addresses:
            answer = yield from self.call(address, RequestCode.DELETE_TOPIC_IN_NAMESRV,
                                          DeleteTopicFromNamesrvRequestHeader(topic=topic))
            _ok(answer, address)
        return masters

    # ------------------------------------------------------------ brokers

    def runtime_info(self, address):
        """Generator: GET_BROKER_RUNTIME_INFO's table (``fetchBrokerRuntimeStats``)."""
        answer = yield from self.call(address, RequestCode.GET_BROKER_RUNTIME_INFO)
        return dict(KVTable.from_json(_ok(answer, address).body).table)

    def broker_config(self, address):
        """Generator: GET_BROKER_CONFIG's settings (``getBrokerConfig``)."""
        answer = yield from self.call(address, RequestCode.GET_BROKER_CONFIG)
        return parse_properties((_ok(answer, address).body or b"").decode("utf-8"))

    def update_broker_config(self, address, settings):
        """Generator: UPDATE_BROKER_CONFIG with ``settings`` (a dict of Java property names)."""
        answer = yield from self.call(address, RequestCode.UPDATE_BROKER_CONFIG,
                                      body=dump_properties(settings).encode("utf-8"))
        _ok(answer, address)

    # ------------------------------------------------------------ consumers and offsets

    def consume_stats(self, group, topic=None):
        """Generator: :class:`ConsumeStats` of ``group`` over its retry topic's brokers
        (``examineConsumeStats``): offset tables merged, TPS summed."""
        total = ConsumeStats()
        for _, address in (yield from self.route_masters(RETRY_PREFIX + group)):
            answer = yield from self.call(address, RequestCode.GET_CONSUME_STATS,
                                          GetConsumeStatsRequestHeader(consumer_group=group, topic=topic))
            stats = ConsumeStats.from_json(_ok(answer, address).body)
            total.offset_table.update(stats.offset_table)
            total.consume_tps += stats.consume_tps
        return total

    def consumer_connection(self, group):
        """Generator: the group's :class:`ConsumerConnection` from the first of its retry
        topic's brokers that knows it online; ``None`` if none does."""
        for _, address in (yield from self.route_masters(RETRY_PREFIX + group)):
            answer = yield from self.call(address, RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                          GetConsumerConnectionListRequestHeader(consumer_group=group))
            if answer.code == ResponseCode.SUCCESS:
                return ConsumerConnection.from_json(answer.body)
        return None

    def queue_offset(self, address, queue, timestamp=None):
        """Generator: SEARCH_OFFSET_BY_TIMESTAMP of ``queue`` (GET_MAX_OFFSET if ``timestamp`` is None)."""
        if timestamp is None:
            code, header = RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(
                topic=queue.topic, queue_id=queue.queue_id)
        else:
            code, header = RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, SearchOffsetRequestHeader(
                topic=queue.topic, queue_id=queue.queue_id, timestamp=timestamp)
        answer = yield from self.call(address, code, header)
        return int(_ok(answer, address).ext_fields["offset"])

    def reset_offset(self, group, topic, timestamp, force=True):
        """Generator: ``resetOffsetByTimestamp``: INVOKE_BROKER_TO_RESET_OFFSET on each of
        ``topic``'s brokers, which moves the online consumers; ``("online", {queue: offset})``.
        When the group has no consumer online (CONSUMER_NOT_ONLINE) the offsets are
        rewritten directly, as ``resetOffsetByTimestampOld``: ``("offline", [Rollback])``."""
        moved = {}
        for _, address in (yield from self.route_masters(topic)):
            header = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp,
                                              is_force=force)
            answer = yield from self.call(address, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header)
            if answer.code == ResponseCode.CONSUMER_NOT_ONLINE:
                return "offline", (yield from self._reset_offline(group, topic, timestamp, force))
            _ok(answer, address)
            if answer.body:
                for queue, offset in ResetOffsetBody.from_json(answer.body).offset_table.items():
                    moved[MessageQueue(queue.topic, queue.broker_name, queue.queue_id)] = offset
        return "online", moved

    def _reset_offline(self, group, topic, timestamp, force):
        data = yield from self.topic_route(topic)
        read_queues = {q.broker_name: q.read_queue_nums for q in data.queue_datas or ()}
        done = []
        for name, address in (yield from self.route_masters(topic)):
            answer = yield from self.call(address, RequestCode.GET_CONSUME_STATS,
                                          GetConsumeStatsRequestHeader(consumer_group=group))
            table = {MessageQueue(q.topic, q.broker_name, q.queue_id): (w.broker_offset, w.consumer_offset)
                     for q, w in ConsumeStats.from_json(_ok(answer, address).body).offset_table.items()
                     if q.topic == topic}
            if not table:  # never consumed here: from the queues' min offsets
                answer = yield from self.call(address, RequestCode.GET_TOPIC_STATS_INFO,
                                              GetTopicStatsInfoRequestHeader(topic=topic))
                stats = TopicStatsTable.from_json(_ok(answer, address).body).offset_table
                for q, offsets in stats.items():
                    if q.queue_id < read_queues.get(name, 0):
                        table[MessageQueue(q.topic, q.broker_name, q.queue_id)] = (
                            offsets.max_offset, offsets.min_offset)
            for queue, (broker_offset, consumer_offset) in sorted(table.items()):
                target = yield from self.queue_offset(
                    address, queue, None if timestamp == -1 else timestamp)
                reset = consumer_offset
                if force or target <= consumer_offset:
                    reset = target
                    header = UpdateConsumerOffsetRequestHeader(
                        consumer_group=group, topic=topic, queue_id=queue.queue_id, commit_offset=target)
                    answer = yield from self.call(address, RequestCode.UPDATE_CONSUMER_OFFSET, header)
                    _ok(answer, address)
                done.append(Rollback(queue, broker_offset, consumer_offset, target, reset))
        return done

    # ------------------------------------------------------------ messages

    def view_message(self, offset_msg_id):
        """Generator: the :class:`~rmqproto.codec.message.MessageRecord` of an offset message id
        (store host and commit-log offset), by VIEW_MESSAGE_BY_ID to that host (``viewMessage``)."""
        try:
            (host, port), offset = wire.decode_message_id(offset_msg_id)
        except CodecError as exc:
            raise ClientError("not an offset message id: %s" % exc) from None
        address = "%s:%d" % (host, port)
        answer = yield from self.call(address, RequestCode.VIEW_MESSAGE_BY_ID,
                                      ViewMessageRequestHeader(offset=offset))
        return wire.decode_record(_ok(answer, address).body or b"")

    def query_messages(self, topic, key, max_num=QUERY_MAX_NUM, begin=0, end=2**63 - 1, unique=False):
        """Generator: the records whose key (or, with ``unique``, ``UNIQ_KEY``) is ``key`` on
        every broker of ``topic`` (QUERY_MESSAGE, ``MQAdminImpl#queryMessage``), by store time."""
        header = QueryMessageRequestHeader(topic=topic, key=key, max_num=max_num,
                                           begin_timestamp=begin, end_timestamp=end)
        found = {}
        for _, address in (yield from self.route_masters(topic)):
            req = request(RequestCode.QUERY_MESSAGE, header)
            if unique:
                req.ext_fields[UNIQUE_QUERY_FLAG] = "true"
            reply = yield Call(address, req, QUERY_TIMEOUT_MS, False)
            if reply.error is not None:
                raise ClientError("%s: %s" % (address, reply.error)) from reply.error
            answer = _ok(reply.response, address, (ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND))
            for record in wire.iter_records(answer.body or b""):
                if record.topic != topic:
                    continue
                wanted = [record.uniq_key] if unique else record.keys
                if key in wanted:
                    found[record.msg_id] = record
        return sorted(found.values(), key=lambda r: (r.store_timestamp, r.msg_id))

    # ------------------------------------------------------------ replication

    def ha_status(self, cluster=None):
        """Generator: a :class:`MasterProgress` per master (of ``cluster``): GET_BROKER_HA_STATUS
        where the broker serves it (RocketMQ 5, rmqproto), else each slave's own
        ``commitLogMaxOffset`` from GET_BROKER_RUNTIME_INFO against the master's (4.9)."""
        info = yield from self.cluster_info()
        by_name = {}
        for _, name, broker_id, address in broker_addresses(info, cluster):
            by_name.setdefault(name, {})[broker_id] = address
        found = []
        for name, addrs in sorted(by_name.items()):
            master = addrs.get(MASTER_ID)
            if master is None:
                continue
            answer = yield from self.call(master, RequestCodeV5.GET_BROKER_HA_STATUS)
            if answer.code == ResponseCode.SUCCESS:
                ha = HARuntimeInfo.from_json(answer.body)
                slaves = [SlaveProgress(c.addr, c.slave_ack_offset, c.diff, c.in_sync)
                          for c in ha.ha_connection_info]
                found.append(MasterProgress(name, master, ha.master_commit_log_max_offset,
                                            sorted(slaves), "GET_BROKER_HA_STATUS"))
                continue
            _ok(answer, master, (ResponseCode.REQUEST_CODE_NOT_SUPPORTED,))
            top = int((yield from self.runtime_info(master))["commitLogMaxOffset"])
            slaves = []
            for broker_id, address in sorted(addrs.items()):
                if broker_id != MASTER_ID:
                    have = int((yield from self.runtime_info(address))["commitLogMaxOffset"])
                    slaves.append(SlaveProgress(address, have, top - have, None))
            found.append(MasterProgress(name, master, top, slaves, "GET_BROKER_RUNTIME_INFO"))
        return found

    def raft_members(self, group, peers):
        """Generator: a :class:`RaftMember` per member of the DLedger ``group`` from its METADATA
        answer (``DLedgerServer#handleMetadata``); ``peers`` is DLedger's
        ``n0-host:port;n1-host:port`` (``DLedgerConfig.peers``).
        The role follows from the leader each member names: itself (LEADER), another (FOLLOWER)
        or none (CANDIDATE); a member that does not answer has role ``UNREACHABLE``."""
        members = []
        for part in (p.strip() for p in peers.split(";")):
            member_id, sep, address = part.partition("-")
            if not sep or not member_id or not address:
                raise ClientError("peers must be id-host:port;..., got %r" % peers)
            members.append((member_id, address))
        found = []
        for member_id, address in members:
            ask = MetadataRequest(group=group, remote_id=member_id)
            try:
                answer = yield from self.call(address, DLedgerRequestCode.METADATA, body=ask.to_json())
            except ClientError:
                found.append(RaftMember(member_id, address, "UNREACHABLE", None, None, None, None))
                continue
            meta = MetadataResponse.from_json(answer.body)
            if meta.code != 200:
                raise ClientError("%s (%s) answered METADATA with code %d" % (member_id, address, meta.code))
            role = ("CANDIDATE" if meta.leader_id is None
                    else "LEADER" if meta.leader_id == member_id else "FOLLOWER")
            found.append(RaftMember(member_id, address, role, meta.leader_id,
                                    meta.term if meta.term >= 0 else None, meta.ledger_end_index,
                                    meta.committed_index))
        return found
