"""The NameServer's request processor: every request of Java's ``DefaultRequestProcessor``, answered as it does.

Handlers decode the typed custom header (a missing required field raises
``MissingFieldError``, which the dispatcher answers with SYSTEM_ERROR, as Java's
``decodeCommandCustomHeader`` exception is), act on the pure
:class:`~rmqproto.namesrv.routeinfo.RouteInfoManager` and :class:`~rmqproto.namesrv.kvconfig.KVConfig`,
and build the response. Time comes from ``clock.seconds()`` (a reactor or ``task.Clock``).
"""

from twisted.logger import Logger

from rmqproto.codec import headers as h
from rmqproto.codec.bodies.route import KVTable
from rmqproto.codec.bodies.topic import (
    DataVersion, RegisterBrokerBody, TOPIC_SYS_FLAG_UNIT, TOPIC_SYS_FLAG_UNIT_SUB,
    TopicConfigSerializeWrapper,
)
from rmqproto.codec.codes import MQVersion, RequestCode as RC, ResponseCode as R
from rmqproto.codec.javalang import masked_crc32
from rmqproto.config import ConfigError, dump_properties, parse_properties
from rmqproto.errors import CodecError
from rmqproto.namesrv.kvconfig import NAMESPACE_ORDER_TOPIC_CONFIG

__all__ = ["NameServerProcessor", "TOPIC_NOT_EXIST_REMARK"]

log = Logger()

#: Java appends ``FAQUrl.suggestTodo(APPLY_TOPIC_URL)`` to the TOPIC_NOT_EXIST remark.
TOPIC_NOT_EXIST_REMARK = (
    "No topic route info in name server for the topic: %s\n"
    "See http://rocketmq.apache.org/docs/faq/ for further details.")

#: Encoded route answers kept at most (the cache is emptied when full or when routes change).
_MAX_CACHED_ROUTES = 10_000

#: Settings UPDATE_NAMESRV_CONFIG may not change (Java answers NO_PERMISSION).
_PROTECTED_SETTINGS = ("kvConfigPath", "configStorePath")


def _has(flag):
    return lambda queue_data: bool(queue_data.topic_sys_flag & flag)


def _unit_sub_not_unit(queue_data):
    return (not queue_data.topic_sys_flag & TOPIC_SYS_FLAG_UNIT
            and bool(queue_data.topic_sys_flag & TOPIC_SYS_FLAG_UNIT_SUB))


class NameServerProcessor:
    """Answers NameServer requests from the route table and the KV config.

    ``config`` is the live settings dict (Java property names); ``settings`` its
    declaration (to parse UPDATE_NAMESRV_CONFIG); ``persist_kv`` and ``persist_config``
    are called after the KV table or the config changed.
    """

    def __init__(self, route_info, kv_config, config, settings, clock,
                 persist_kv=lambda: None, persist_config=lambda: None):
        self.route_info = route_info
        self.kv_config = kv_config
        self.config = config
        self.settings = settings
        self.clock = clock
        self.persist_kv = persist_kv
        self.persist_config = persist_config
        self._route_answers = {}  # (topic, standard, orderTopicConf) -> body, for one table version
        self._route_answers_version = None
        self._register_bodies = {}  # broker address -> (raw body, compressed, decoded)

    def now(self):
        return int(self.clock.seconds() * 1000)

    def register_with(self, dispatcher):
        """Route every NameServer request code of this processor through ``dispatcher``."""
        handlers = {
            RC.PUT_KV_CONFIG: self.put_kv_config,
            RC.GET_KV_CONFIG: self.get_kv_config,
            RC.DELETE_KV_CONFIG: self.delete_kv_config,
            RC.QUERY_DATA_VERSION: self.query_data_version,
            RC.REGISTER_BROKER: self.register_broker,
            RC.UNREGISTER_BROKER: self.unregister_broker,
            RC.GET_ROUTEINFO_BY_TOPIC: self.get_route_info_by_topic,
            RC.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RC.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm_of_broker,
            RC.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm_of_broker,
            RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.topic_list(
                self.route_info.get_all_topic_list),
            RC.DELETE_TOPIC_IN_NAMESRV: self.delete_topic_in_namesrv,
            RC.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RC.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RC.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.topic_list(
                self.route_info.get_system_topic_list),
            RC.GET_UNIT_TOPIC_LIST: self.topic_list(
                lambda: self.route_info.topics_where(_has(TOPIC_SYS_FLAG_UNIT))),
            RC.GET_HAS_UNIT_SUB_TOPIC_LIST: self.topic_list(
                lambda: self.route_info.topics_where(_has(TOPIC_SYS_FLAG_UNIT_SUB))),
            RC.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self.topic_list(
                lambda: self.route_info.topics_where(_unit_sub_not_unit)),
            RC.UPDATE_NAMESRV_CONFIG: self.update_namesrv_config,
            RC.GET_NAMESRV_CONFIG: self.get_namesrv_config,
        }
        for code, handler in handlers.items():
            dispatcher.register(int(code), handler)

    # ------------------------------------------------------------ KV config

    def put_kv_config(self, request, context):
        header = h.PutKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        self.kv_config.put(header.namespace, header.key, header.value)
        self.persist_kv()
        return request.response(R.SUCCESS)

    def get_kv_config(self, request, context):
        header = h.GetKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        value = self.kv_config.get(header.namespace, header.key)
        if value is None:
            return request.response(R.QUERY_NOT_FOUND, remark="No config item, Namespace: %s Key: %s"
                                    % (header.namespace, header.key), ext_fields={})
        return request.response(R.SUCCESS, ext_fields=h.GetKVConfigResponseHeader(
            value=value).to_ext_fields())

    def delete_kv_config(self, request, context):
        header = h.DeleteKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        self.kv_config.delete(header.namespace, header.key)
        self.persist_kv()
        return request.response(R.SUCCESS)

    def _kv_table_json(self, namespace):
        table = self.kv_config.namespace(namespace)
        return None if table is None else KVTable(table=dict(table)).to_json()

    def get_kv_list_by_namespace(self, request, context):
        header = h.GetKVListByNamespaceRequestHeader.from_ext_fields(request.ext_fields)
        body = self._kv_table_json(header.namespace)
        if body is None:
            return request.response(R.QUERY_NOT_FOUND,
                                    remark="No config item, Namespace: %s" % header.namespace)
        return request.response(R.SUCCESS, body=body)

    # ------------------------------------------------------------ brokers

    def register_broker(self, request, context):
        header = h.RegisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        if header.body_crc32 and masked_crc32(request.body) != header.body_crc32:
            log.warn("receive registerBroker request, crc32 not match, from {peer}",
                     peer=context.peer)
            return request.response(R.SYSTEM_ERROR, remark="crc32 not match")
        if request.version >= MQVersion.V3_0_11:
            body = self._register_body(header.broker_addr, request.body, bool(header.compressed))
            wrapper, filter_servers = body.topic_config_serialize_wrapper, body.filter_server_list
        else:
            wrapper = (TopicConfigSerializeWrapper.from_json(request.body) if request.body
                       else TopicConfigSerializeWrapper())
            filter_servers = None
        result = self.route_info.register_broker(
            header.cluster_name, header.broker_addr, header.broker_name, header.broker_id,
            header.ha_server_addr, wrapper, filter_servers, context.connection, self.now())
        if result.first:
            log.info("new broker registered, {addr} HAServer: {ha} ({cluster}/{name}/{id})",
                     addr=header.broker_addr, ha=header.ha_server_addr,
                     cluster=header.cluster_name, name=header.broker_name, id=header.broker_id)
        response_header = h.RegisterBrokerResponseHeader(
            ha_server_addr=result.ha_server_addr, master_addr=result.master_addr)
        return request.response(R.SUCCESS, ext_fields=response_header.to_ext_fields(),
                                body=self._kv_table_json(NAMESPACE_ORDER_TOPIC_CONFIG) or b"")

    def _register_body(self, broker_addr, raw, compressed):
        """The decoded register body; a heartbeat repeating its broker's last body is not decoded
        again. Only addresses the route table holds live keep a cached body: those of brokers
        gone (unregistered, connection closed, expired) are dropped at the next body decoded."""
        raw = bytes(raw or b"")
        cached = self._register_bodies.get(broker_addr)
        if cached is not None and cached[0] == raw and cached[1] == compressed:
            return cached[2]
        live = self.route_info.broker_live_table
        for addr in [addr for addr in self._register_bodies if addr not in live]:
            del self._register_bodies[addr]
        body = RegisterBrokerBody.decode(raw, compressed) if raw else RegisterBrokerBody()
        self._register_bodies[broker_addr] = (raw, compressed, body)
        return body

    def unregister_broker(self, request, context):
        header = h.UnRegisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        self.route_info.unregister_broker(header.cluster_name, header.broker_addr,
                                          header.broker_name, header.broker_id)
        log.info("broker unregistered, {addr} ({cluster}/{name}/{id})", addr=header.broker_addr,
                 cluster=header.cluster_name, name=header.broker_name, id=header.broker_id)
        return request.response(R.SUCCESS)

    def query_data_version(self, request, context):
        header = h.QueryDataVersionRequestHeader.from_ext_fields(request.ext_fields)
        data_version = DataVersion.from_json(request.body) if request.body else None
        changed = self.route_info.is_broker_topic_config_changed(header.broker_addr, data_version)
        if not changed:
            self.route_info.update_broker_info_update_timestamp(header.broker_addr, self.now())
        stored = self.route_info.query_broker_topic_config(header.broker_addr)
        return request.response(
            R.SUCCESS, ext_fields=h.QueryDataVersionResponseHeader(changed=changed).to_ext_fields(),
            body=stored.to_json() if stored is not None else b"")

    def wipe_write_perm_of_broker(self, request, context):
        return self._change_write_perm(request, context, "wipe",
                                       h.WipeWritePermOfBrokerRequestHeader,
                                       self.route_info.wipe_write_perm_of_broker,
                                       lambda count: h.WipeWritePermOfBrokerResponseHeader(
                                           wipe_topic_count=count))

    def add_write_perm_of_broker(self, request, context):
        return self._change_write_perm(request, context, "add",
                                       h.AddWritePermOfBrokerRequestHeader,
                                       self.route_info.add_write_perm_of_broker,
                                       lambda count: h.AddWritePermOfBrokerResponseHeader(
                                           add_topic_count=count))

    def _change_write_perm(self, request, context, verb, request_header, change, response_header):
        header = request_header.from_ext_fields(request.ext_fields)
        count = change(header.broker_name)
        log.info("{verb} write perm of broker[{name}], client: {peer}, {count}", verb=verb,
                 name=header.broker_name, peer=context.peer, count=count)
        return request.response(R.SUCCESS, ext_fields=response_header(count).to_ext_fields())

    # ------------------------------------------------------------ routes and topics

    def get_route_info_by_topic(self, request, context):
        header = h.GetRouteInfoRequestHeader.from_ext_fields(request.ext_fields)
        order_topic_conf = (self.kv_config.get(NAMESPACE_ORDER_TOPIC_CONFIG, header.topic)
                            if self.config["orderMessageEnable"] else None)
        standard = request.version >= MQVersion.V4_9_4 or bool(header.accept_standard_json_only)
        body = self._route_answer(header.topic, standard, order_topic_conf)
        if body is None:
            return request.response(R.TOPIC_NOT_EXIST, remark=TOPIC_NOT_EXIST_REMARK % header.topic)
        return request.response(R.SUCCESS, body=body)

    def _route_answer(self, topic, standard, order_topic_conf):
        """The encoded route of ``topic`` (``None``: no route), reused until the table changes."""
        if (self._route_answers_version != self.route_info.version
                or len(self._route_answers) >= _MAX_CACHED_ROUTES):
            self._route_answers = {}
            self._route_answers_version = self.route_info.version
        key = (topic, standard, order_topic_conf)
        try:
            return self._route_answers[key]
        except KeyError:
            pass
        route = self.route_info.pickup_topic_route_data(topic)
        body = None
        if route is not None:
            route.order_topic_conf = order_topic_conf
            body = route.to_json(standard=standard)
        self._route_answers[key] = body
        return body

    def get_broker_cluster_info(self, request, context):
        return request.response(R.SUCCESS, body=self.route_info.get_all_cluster_info().to_json())

    def topic_list(self, query):
        """A handler answering with the TopicList ``query()`` returns."""
        def handler(request, context):
            return request.response(R.SUCCESS, body=query().to_json())
        return handler

    def get_topics_by_cluster(self, request, context):
        header = h.GetTopicsByClusterRequestHeader.from_ext_fields(request.ext_fields)
        return request.response(R.SUCCESS,
                                body=self.route_info.get_topics_by_cluster(header.cluster).to_json())

    def delete_topic_in_namesrv(self, request, context):
        header = h.DeleteTopicFromNamesrvRequestHeader.from_ext_fields(request.ext_fields)
        self.route_info.delete_topic(header.topic, header.cluster_name)
        return request.response(R.SUCCESS)

    # ------------------------------------------------------------ configuration

    def update_namesrv_config(self, request, context):
        if request.body:
            try:
                updates = parse_properties(request.body.decode("utf-8"))
            except (UnicodeDecodeError, CodecError) as exc:
                return request.response(R.SYSTEM_ERROR, remark="string2Properties error: %s" % exc)
            if any(name in updates for name in _PROTECTED_SETTINGS):
                return request.response(R.NO_PERMISSION, remark="Can not update config path")
            try:
                values, unknown = self.settings.resolve(self.config, updates)
            except ConfigError as exc:
                return request.response(R.SYSTEM_ERROR, remark=str(exc))
            self.config.update(values)
            log.info("update namesrv config: {updates}, ignored: {unknown}",
                     updates=updates, unknown=unknown)
            self.persist_config()
        return request.response(R.SUCCESS)

    def get_namesrv_config(self, request, context):
        return request.response(R.SUCCESS, body=dump_properties(self.config).encode("utf-8"))
