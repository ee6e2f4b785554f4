package rmqproto.interop;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import com.alibaba.fastjson.parser.Feature;
import com.alibaba.fastjson.serializer.SerializerFeature;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.common.DataVersion;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.TopicFilterType;
import org.apache.rocketmq.common.admin.ConsumeStats;
import org.apache.rocketmq.common.admin.OffsetWrapper;
import org.apache.rocketmq.common.admin.TopicOffset;
import org.apache.rocketmq.common.admin.TopicStatsTable;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.filter.FilterAPI;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.common.protocol.body.ConsumerOffsetSerializeWrapper;
import org.apache.rocketmq.common.protocol.body.KVTable;
import org.apache.rocketmq.common.protocol.body.LockBatchRequestBody;
import org.apache.rocketmq.common.protocol.body.LockBatchResponseBody;
import org.apache.rocketmq.common.protocol.body.RegisterBrokerBody;
import org.apache.rocketmq.common.protocol.body.SubscriptionGroupWrapper;
import org.apache.rocketmq.common.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.common.protocol.body.TopicList;
import org.apache.rocketmq.common.protocol.body.UnlockBatchRequestBody;
import org.apache.rocketmq.common.protocol.header.GetConsumerListByGroupResponseBody;
import org.apache.rocketmq.common.protocol.heartbeat.ConsumeType;
import org.apache.rocketmq.common.protocol.heartbeat.ConsumerData;
import org.apache.rocketmq.common.protocol.heartbeat.HeartbeatData;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;
import org.apache.rocketmq.common.protocol.heartbeat.ProducerData;
import org.apache.rocketmq.common.protocol.heartbeat.SubscriptionData;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.common.protocol.route.QueueData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.common.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.store.schedule.DelayOffsetSerializeWrapper;

/**
 * Vectors and decoders of the JSON bodies (docs/codecs/bodies.md) and of fastjson's dialect.
 *
 * <p>Every vector's "fields" is the decoded object as a JSON tree whose non-string map keys
 * became strings (numbers as digits, objects as their sorted JSON).
 */
final class BodiesFamily implements Main.Family {
    /** The NameServer's features for a standard-JSON route answer. */
    static final SerializerFeature[] STANDARD = {
        SerializerFeature.BrowserCompatible, SerializerFeature.QuoteFieldNames,
        SerializerFeature.SkipTransientField, SerializerFeature.MapSortField,
    };

    private static final Map<String, Class<?>> CLASSES = new LinkedHashMap<>();

    static {
        CLASSES.put("body_data_version", DataVersion.class);
        CLASSES.put("body_topic_config", TopicConfig.class);
        CLASSES.put("body_topic_config_serialize_wrapper", TopicConfigSerializeWrapper.class);
        CLASSES.put("body_register_broker", RegisterBrokerBody.class);
        CLASSES.put("body_kv_table", KVTable.class);
        CLASSES.put("body_queue_data", QueueData.class);
        CLASSES.put("body_broker_data", BrokerData.class);
        CLASSES.put("body_topic_route", TopicRouteData.class);
        CLASSES.put("body_topic_route_standard", TopicRouteData.class);
        CLASSES.put("body_cluster_info", ClusterInfo.class);
        CLASSES.put("body_topic_list", TopicList.class);
        CLASSES.put("body_heartbeat", HeartbeatData.class);
        CLASSES.put("body_consumer_offset", ConsumerOffsetSerializeWrapper.class);
        CLASSES.put("body_delay_offset", DelayOffsetSerializeWrapper.class);
        CLASSES.put("body_subscription_group_config", SubscriptionGroupConfig.class);
        CLASSES.put("body_subscription_group_wrapper", SubscriptionGroupWrapper.class);
        CLASSES.put("body_lock_batch_request", LockBatchRequestBody.class);
        CLASSES.put("body_lock_batch_response", LockBatchResponseBody.class);
        CLASSES.put("body_unlock_batch_request", UnlockBatchRequestBody.class);
        CLASSES.put("body_consumer_list_by_group", GetConsumerListByGroupResponseBody.class);
        CLASSES.put("body_topic_stats_table", TopicStatsTable.class);
        CLASSES.put("body_consume_stats", ConsumeStats.class);
    }

    @Override
    public void register(Map<String, Main.Decoder> decoders) {
        for (Map.Entry<String, Class<?>> e : CLASSES.entrySet()) {
            Class<?> type = e.getValue();
            decoders.put(e.getKey(), (bytes, request) -> tree(JSON.parseObject(utf8(bytes), type)));
        }
        decoders.put("body_register_broker_compressed", (bytes, request) -> tree(RegisterBrokerBody.decode(bytes, true)));
        decoders.put("fastjson_default", (bytes, request) -> JSON.parse(utf8(bytes), Feature.OrderedField));
    }

    static String utf8(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /** The decoded object as fastjson sees it, with every map key turned into a string. */
    static Object tree(Object obj) {
        return keysToStrings(JSON.parse(JSON.toJSONString(obj), Feature.OrderedField));
    }

    static Object keysToStrings(Object value) {
        if (value instanceof Map) {
            JSONObject out = new JSONObject(true);
            for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) {
                Object key = e.getKey();
                out.put(key instanceof String ? (String) key : JSON.toJSONString(key), keysToStrings(e.getValue()));
            }
            return out;
        }
        if (value instanceof List) {
            JSONArray out = new JSONArray();
            for (Object item : (List<?>) value) {
                out.add(keysToStrings(item));
            }
            return out;
        }
        return value;
    }

    @Override
    public void generate(Vectors.Sink sink) throws Exception {
        generateTopicBodies(sink);
        generateRouteBodies(sink);
        generateClientBodies(sink);
        generateOffsetBodies(sink);
        generateFastjson(sink);
    }

    /** One vector per object, encoded with RemotingSerializable's default fastjson features. */
    private static void plain(Vectors.Sink sink, String kind, String source, Map<String, Object> objects) throws Exception {
        try (Vectors.Kind k = sink.kind(kind, source)) {
            for (Map.Entry<String, Object> e : objects.entrySet()) {
                byte[] bytes = JSON.toJSONString(e.getValue()).getBytes(StandardCharsets.UTF_8);
                k.add(e.getKey(), fields(e.getValue()), bytes);
            }
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> fields(Object obj) {
        return (Map<String, Object>) tree(obj);
    }

    private static DataVersion dataVersion(long timestamp, long counter) {
        DataVersion v = new DataVersion();
        v.setTimestamp(timestamp);
        v.setCounter(new AtomicLong(counter));
        return v;
    }

    private static TopicConfig topic(String name, int read, int write, int perm) {
        return new TopicConfig(name, read, write, perm);
    }

    private static TopicConfigSerializeWrapper wrapper(int topics) {
        ConcurrentMap<String, TopicConfig> table = new ConcurrentHashMap<>();
        for (String name : Arrays.asList("TopicA", "TBW102", "SCHEDULE_TOPIC_XXXX", "%RETRY%group-1", "broker-a")) {
            table.put(name, topic(name, 8, 8, 6));
        }
        table.get("SCHEDULE_TOPIC_XXXX").setReadQueueNums(18);
        table.get("TBW102").setPerm(7);
        table.get("TopicA").setTopicFilterType(TopicFilterType.MULTI_TAG);
        table.get("TopicA").setOrder(true);
        table.get("%RETRY%group-1").setTopicSysFlag(1);
        for (int i = 0; i < topics; i++) {
            String name = "bench-topic-" + i;
            table.put(name, topic(name, 1 + i % 16, 1 + i % 16, i % 2 == 0 ? 6 : 4));
        }
        TopicConfigSerializeWrapper w = new TopicConfigSerializeWrapper();
        w.setTopicConfigTable(table);
        w.setDataVersion(dataVersion(1700000000000L, 12));
        return w;
    }

    private static RegisterBrokerBody registerBody(int topics, List<String> filterServers) {
        RegisterBrokerBody body = new RegisterBrokerBody();
        body.setTopicConfigSerializeWrapper(wrapper(topics));
        body.setFilterServerList(filterServers);
        return body;
    }

    private static void generateTopicBodies(Vectors.Sink sink) throws Exception {
        Map<String, Object> versions = new LinkedHashMap<>();
        versions.put("typical", dataVersion(1700000000000L, 12));
        versions.put("zero", dataVersion(0, 0));
        versions.put("extremes", dataVersion(Long.MAX_VALUE, Long.MIN_VALUE));
        plain(sink, "body_data_version", "org.apache.rocketmq.common.DataVersion", versions);

        Map<String, Object> topics = new LinkedHashMap<>();
        topics.put("defaults", new TopicConfig("TopicA"));
        TopicConfig full = topic("TopicB", 4, 2, 7);
        full.setTopicFilterType(TopicFilterType.MULTI_TAG);
        full.setTopicSysFlag(3);
        full.setOrder(true);
        topics.put("all_members", full);
        topics.put("escapes", topic("t\"\\/\u00e9\u4e3b\u2028\u007f\u0001\t", 1, 1, 2));
        plain(sink, "body_topic_config", "org.apache.rocketmq.common.TopicConfig", topics);

        Map<String, Object> wrappers = new LinkedHashMap<>();
        wrappers.put("five_topics", wrapper(0));
        TopicConfigSerializeWrapper empty = new TopicConfigSerializeWrapper();
        empty.setDataVersion(dataVersion(1, 1));
        wrappers.put("empty", empty);
        plain(sink, "body_topic_config_serialize_wrapper",
            "org.apache.rocketmq.common.protocol.body.TopicConfigSerializeWrapper", wrappers);

        Map<String, RegisterBrokerBody> bodies = new LinkedHashMap<>();
        bodies.put("five_topics", registerBody(0, new ArrayList<>()));
        bodies.put("filter_servers", registerBody(0, Arrays.asList("10.0.0.5:30000", "10.0.0.6:30000")));
        bodies.put("many_topics", registerBody(300, new ArrayList<>()));
        try (Vectors.Kind plainKind = sink.kind("body_register_broker", "RegisterBrokerBody.encode(false)");
             Vectors.Kind compressed = sink.kind("body_register_broker_compressed", "RegisterBrokerBody.encode(true)")) {
            for (Map.Entry<String, RegisterBrokerBody> e : bodies.entrySet()) {
                RegisterBrokerBody body = e.getValue();
                plainKind.add(e.getKey(), fields(body), body.encode(false));
                byte[] zipped = body.encode(true);
                compressed.add(e.getKey(), fields(RegisterBrokerBody.decode(zipped, true)), zipped);
            }
        }
    }

    private static BrokerData brokerData(String cluster, String name, long... ids) {
        HashMap<Long, String> addrs = new HashMap<>();
        for (long id : ids) {
            addrs.put(id, "10.0." + (id & 0xff) + ".1:10911");
        }
        return new BrokerData(cluster, name, addrs);
    }

    private static QueueData queueData(String brokerName, int queues, int perm, int sysFlag) {
        QueueData q = new QueueData();
        q.setBrokerName(brokerName);
        q.setReadQueueNums(queues);
        q.setWriteQueueNums(queues);
        q.setPerm(perm);
        q.setTopicSysFlag(sysFlag);
        return q;
    }

    private static TopicRouteData route(boolean withOrderConf) {
        TopicRouteData route = new TopicRouteData();
        route.setQueueDatas(new ArrayList<>(Arrays.asList(queueData("broker-a", 8, 6, 0), queueData("broker-b", 4, 4, 1))));
        route.setBrokerDatas(new ArrayList<>(Arrays.asList(
            brokerData("DefaultCluster", "broker-a", 0, 1, 2), brokerData("DefaultCluster", "broker-b", 3, 0, 17, 16))));
        HashMap<String, List<String>> filters = new HashMap<>();
        if (withOrderConf) {
            filters.put("10.0.0.1:10911", Arrays.asList("10.0.0.9:30000"));
            filters.put("10.0.1.1:10911", new ArrayList<>());
            route.setOrderTopicConf("broker-a:8;broker-b:4/\u00e9\u4e3b");
        }
        route.setFilterServerTable(filters);
        return route;
    }

    private static void generateRouteBodies(Vectors.Sink sink) throws Exception {
        Map<String, Object> queues = new LinkedHashMap<>();
        queues.put("typical", queueData("broker-a", 8, 6, 0));
        queues.put("unit", queueData("broker-\u00e9", 1, 2, 3));
        plain(sink, "body_queue_data", "org.apache.rocketmq.common.protocol.route.QueueData", queues);

        Map<String, Object> brokers = new LinkedHashMap<>();
        brokers.put("master_and_slaves", brokerData("DefaultCluster", "broker-a", 0, 1, 2));
        brokers.put("hash_order", brokerData("c", "broker-b", 31, 15, 16, 0, 1L << 33, 47));
        brokers.put("no_addrs", new BrokerData("c", "broker-c", null));
        plain(sink, "body_broker_data", "org.apache.rocketmq.common.protocol.route.BrokerData", brokers);

        Map<String, Object> routes = new LinkedHashMap<>();
        routes.put("typical", route(false));
        routes.put("order_conf_and_filters", route(true));
        plain(sink, "body_topic_route", "TopicRouteData.encode()", routes);
        try (Vectors.Kind k = sink.kind("body_topic_route_standard",
            "TopicRouteData.encode(BrowserCompatible, QuoteFieldNames, SkipTransientField, MapSortField)")) {
            for (Map.Entry<String, Object> e : routes.entrySet()) {
                k.add(e.getKey(), fields(e.getValue()), ((TopicRouteData) e.getValue()).encode(STANDARD));
            }
        }

        ClusterInfo info = new ClusterInfo();
        HashMap<String, BrokerData> brokerTable = new HashMap<>();
        brokerTable.put("broker-a", brokerData("DefaultCluster", "broker-a", 0, 1));
        brokerTable.put("broker-b", brokerData("DefaultCluster", "broker-b", 0));
        brokerTable.put("broker-c", brokerData("OtherCluster", "broker-c", 0));
        HashMap<String, java.util.Set<String>> clusterTable = new HashMap<>();
        clusterTable.put("DefaultCluster", new HashSet<>(Arrays.asList("broker-a", "broker-b")));
        clusterTable.put("OtherCluster", new HashSet<>(Arrays.asList("broker-c")));
        info.setBrokerAddrTable(brokerTable);
        info.setClusterAddrTable(clusterTable);
        Map<String, Object> infos = new LinkedHashMap<>();
        infos.put("two_clusters", info);
        infos.put("empty", new ClusterInfo());
        plain(sink, "body_cluster_info", "org.apache.rocketmq.common.protocol.body.ClusterInfo", infos);

        TopicList list = new TopicList();
        list.setTopicList(new HashSet<>(Arrays.asList("TopicA", "TopicB", "TBW102", "%RETRY%g")));
        TopicList withAddr = new TopicList();
        withAddr.setTopicList(new HashSet<>(Arrays.asList("TopicA")));
        withAddr.setBrokerAddr("10.0.0.1:10911");
        Map<String, Object> lists = new LinkedHashMap<>();
        lists.put("topics", list);
        lists.put("with_broker_addr", withAddr);
        lists.put("empty", new TopicList());
        plain(sink, "body_topic_list", "org.apache.rocketmq.common.protocol.body.TopicList", lists);

        Map<String, Object> tables = new LinkedHashMap<>();
        tables.put("empty", new KVTable());
        KVTable orderConf = new KVTable();
        orderConf.getTable().put("TopicOrder", "broker-a:8;broker-b:8");
        tables.put("register_broker_answer", orderConf);
        KVTable runtime = new KVTable();
        for (String[] kv : new String[][] {
            {"brokerVersion", "413"}, {"brokerVersionDesc", "V4_9_8"}, {"commitLogMinOffset", "0"},
            {"commitLogMaxOffset", "1048576"}, {"dispatchBehindBytes", "0"}, {"putTps", "12.5 10.0 9.8"},
            {"getTotalTps", "0.0 0.0 0.0"}, {"bootTimestamp", "1700000000000"}, {"runtime", "[ 0 days, 1 hours ]"},
            {"remainHowManyDataToFlush", "0 B"}, {"msgPutTotalTodayNow", "42"}}) {
            runtime.getTable().put(kv[0], kv[1]);
        }
        tables.put("broker_runtime_info", runtime);
        plain(sink, "body_kv_table", "org.apache.rocketmq.common.protocol.body.KVTable", tables);
    }

    private static MessageQueue mq(String topic, String broker, int queueId) {
        return new MessageQueue(topic, broker, queueId);
    }

    private static void generateClientBodies(Vectors.Sink sink) throws Exception {
        HeartbeatData producerOnly = new HeartbeatData();
        producerOnly.setClientID("10.0.0.7@12345");
        ProducerData producer = new ProducerData();
        producer.setGroupName("producer-group");
        producerOnly.getProducerDataSet().add(producer);

        HeartbeatData consumer = new HeartbeatData();
        consumer.setClientID("10.0.0.8@67890#1700000000000");
        ConsumerData push = new ConsumerData();
        push.setGroupName("consumer-group");
        push.setConsumeType(ConsumeType.CONSUME_PASSIVELY);
        push.setMessageModel(MessageModel.CLUSTERING);
        push.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
        LinkedHashSet<SubscriptionData> subs = new LinkedHashSet<>();
        for (String[] ts : new String[][] {{"TopicA", "TagA || TagB||tagC|| \u00e9 "}, {"TopicB", "*"}, {"%RETRY%consumer-group", null}}) {
            SubscriptionData sub = FilterAPI.buildSubscriptionData(ts[0], ts[1]);
            sub.setSubVersion(1700000000123L);
            subs.add(sub);
        }
        SubscriptionData sql = FilterAPI.build("TopicC", "a > 5", "SQL92");
        sql.setSubVersion(1700000000456L);
        subs.add(sql);
        push.setSubscriptionDataSet(subs);
        ConsumerData pull = new ConsumerData();
        pull.setGroupName("pull-group");
        pull.setConsumeType(ConsumeType.CONSUME_ACTIVELY);
        pull.setMessageModel(MessageModel.BROADCASTING);
        pull.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_TIMESTAMP);
        pull.setUnitMode(true);
        consumer.setConsumerDataSet(new LinkedHashSet<>(Arrays.asList(push, pull)));
        consumer.setProducerDataSet(new LinkedHashSet<>(Arrays.asList(producer)));
        Map<String, Object> beats = new LinkedHashMap<>();
        beats.put("producer_only", producerOnly);
        beats.put("consumers", consumer);
        plain(sink, "body_heartbeat", "org.apache.rocketmq.common.protocol.heartbeat.HeartbeatData", beats);

        LockBatchRequestBody lock = new LockBatchRequestBody();
        lock.setClientId("10.0.0.8@67890");
        lock.setConsumerGroup("consumer-group");
        lock.setMqSet(new HashSet<>(Arrays.asList(mq("TopicA", "broker-a", 0), mq("TopicA", "broker-a", 1), mq("TopicA", "broker-b", 3))));
        Map<String, Object> locks = new LinkedHashMap<>();
        locks.put("three_queues", lock);
        locks.put("empty", new LockBatchRequestBody());
        plain(sink, "body_lock_batch_request", "org.apache.rocketmq.common.protocol.body.LockBatchRequestBody", locks);

        UnlockBatchRequestBody unlock = new UnlockBatchRequestBody();
        unlock.setClientId("10.0.0.8@67890");
        unlock.setConsumerGroup("consumer-group");
        unlock.setMqSet(new HashSet<>(Arrays.asList(mq("TopicA", "broker-a", 0))));
        Map<String, Object> unlocks = new LinkedHashMap<>();
        unlocks.put("one_queue", unlock);
        plain(sink, "body_unlock_batch_request", "org.apache.rocketmq.common.protocol.body.UnlockBatchRequestBody", unlocks);

        LockBatchResponseBody locked = new LockBatchResponseBody();
        locked.setLockOKMQSet(new HashSet<>(Arrays.asList(mq("TopicA", "broker-a", 0), mq("TopicA", "broker-a", 7))));
        Map<String, Object> lockedMap = new LinkedHashMap<>();
        lockedMap.put("two_queues", locked);
        lockedMap.put("none", new LockBatchResponseBody());
        plain(sink, "body_lock_batch_response", "org.apache.rocketmq.common.protocol.body.LockBatchResponseBody", lockedMap);

        GetConsumerListByGroupResponseBody ids = new GetConsumerListByGroupResponseBody();
        ids.setConsumerIdList(Arrays.asList("10.0.0.8@67890", "10.0.0.9@1"));
        Map<String, Object> idMap = new LinkedHashMap<>();
        idMap.put("two_consumers", ids);
        idMap.put("unset", new GetConsumerListByGroupResponseBody());
        plain(sink, "body_consumer_list_by_group",
            "org.apache.rocketmq.common.protocol.header.GetConsumerListByGroupResponseBody", idMap);
    }

    private static void generateOffsetBodies(Vectors.Sink sink) throws Exception {
        ConsumerOffsetSerializeWrapper offsets = new ConsumerOffsetSerializeWrapper();
        for (String key : Arrays.asList("TopicA@consumer-group", "%RETRY%consumer-group@consumer-group", "TopicB@g2")) {
            ConcurrentMap<Integer, Long> queues = new ConcurrentHashMap<>();
            for (int q = 0; q < 4; q++) {
                queues.put(q * 5, 1000L * q + key.length());
            }
            offsets.getOffsetTable().put(key, queues);
        }
        Map<String, Object> offsetMap = new LinkedHashMap<>();
        offsetMap.put("three_groups", offsets);
        offsetMap.put("empty", new ConsumerOffsetSerializeWrapper());
        plain(sink, "body_consumer_offset", "org.apache.rocketmq.common.protocol.body.ConsumerOffsetSerializeWrapper", offsetMap);

        DelayOffsetSerializeWrapper delay = new DelayOffsetSerializeWrapper();
        ConcurrentMap<Integer, Long> levels = new ConcurrentHashMap<>(32);
        for (int level = 1; level <= 18; level++) {
            levels.put(level, (long) level * 37);
        }
        delay.setOffsetTable(levels);
        Map<String, Object> delays = new LinkedHashMap<>();
        delays.put("eighteen_levels", delay);
        delays.put("empty", new DelayOffsetSerializeWrapper());
        plain(sink, "body_delay_offset", "org.apache.rocketmq.store.schedule.DelayOffsetSerializeWrapper", delays);

        SubscriptionGroupConfig defaults = new SubscriptionGroupConfig();
        defaults.setGroupName("consumer-group");
        SubscriptionGroupConfig changed = new SubscriptionGroupConfig();
        changed.setGroupName("slow-group");
        changed.setConsumeEnable(false);
        changed.setConsumeBroadcastEnable(false);
        changed.setRetryQueueNums(3);
        changed.setRetryMaxTimes(-1);
        changed.setBrokerId(1);
        changed.setWhichBrokerWhenConsumeSlowly(2);
        changed.setNotifyConsumerIdsChangedEnable(false);
        Map<String, Object> groups = new LinkedHashMap<>();
        groups.put("defaults", defaults);
        groups.put("changed", changed);
        plain(sink, "body_subscription_group_config", "org.apache.rocketmq.common.subscription.SubscriptionGroupConfig", groups);

        SubscriptionGroupWrapper wrapper = new SubscriptionGroupWrapper();
        wrapper.getSubscriptionGroupTable().put("consumer-group", defaults);
        wrapper.getSubscriptionGroupTable().put("slow-group", changed);
        wrapper.setDataVersion(dataVersion(1700000000000L, 3));
        Map<String, Object> wrappers = new LinkedHashMap<>();
        wrappers.put("two_groups", wrapper);
        plain(sink, "body_subscription_group_wrapper", "org.apache.rocketmq.common.protocol.body.SubscriptionGroupWrapper", wrappers);

        TopicStatsTable stats = new TopicStatsTable();
        for (int q = 0; q < 3; q++) {
            TopicOffset offset = new TopicOffset();
            offset.setMinOffset(q);
            offset.setMaxOffset(100 + q);
            offset.setLastUpdateTimestamp(q == 0 ? 0 : 1700000000000L + q);
            stats.getOffsetTable().put(mq("TopicA", q == 2 ? "broker-b" : "broker-a", q), offset);
        }
        Map<String, Object> statsMap = new LinkedHashMap<>();
        statsMap.put("three_queues", stats);
        statsMap.put("empty", new TopicStatsTable());
        plain(sink, "body_topic_stats_table", "org.apache.rocketmq.common.admin.TopicStatsTable", statsMap);

        Map<String, Object> consumeMap = new LinkedHashMap<>();
        double[] tps = {0.0, 12.5, 1.0E-4, 12345678.9};
        for (double t : tps) {
            ConsumeStats consume = new ConsumeStats();
            consume.setConsumeTps(t);
            for (int q = 0; q < 2; q++) {
                OffsetWrapper w = new OffsetWrapper();
                w.setBrokerOffset(100 + q);
                w.setConsumerOffset(90 + q);
                w.setLastTimestamp(1700000000000L + q);
                consume.getOffsetTable().put(mq("TopicA", "broker-a", q), w);
            }
            consumeMap.put("tps_" + Double.toString(t).replace('.', '_').replace('-', 'm'), consume);
        }
        plain(sink, "body_consume_stats", "org.apache.rocketmq.common.admin.ConsumeStats", consumeMap);
    }

    /** fastjson's writing of strings, numbers and maps, in the default and the standard-JSON modes. */
    private static void generateFastjson(Vectors.Sink sink) throws Exception {
        Map<String, JSONObject> values = new LinkedHashMap<>();
        StringBuilder controls = new StringBuilder();
        for (char c = 0; c < 0x20; c++) {
            controls.append(c);
        }
        values.put("controls", one("s", controls.toString()));
        values.put("specials", one("s", "\"\\/\u007f\u0080\u00e9\u2028\u2029\u4e3b\ud83d\ude00 end"));
        values.put("doubles", one("d", new JSONArray(Arrays.asList(0.0, -0.0, 1.0, 0.001, 1.0E-4, 9999999.0, 1.0E7,
            123.456, 1.5E300, 4.9E-324, -4.9E-324, 1.0E-323, -2.5, 12345678.9, 0.1 + 0.2))));
        values.put("longs", one("l", new JSONArray(Arrays.asList(0L, -1L, 9007199254740991L, 9007199254740992L,
            -9007199254740992L, Long.MAX_VALUE, Long.MIN_VALUE))));
        JSONObject unsorted = new JSONObject(false);
        for (String key : Arrays.asList("zeta", "Alpha", "beta", "\u00e9", "k\u0085\u0001/", "a", "B", "10", "9")) {
            unsorted.put(key, key.length());
        }
        values.put("map_order", one("m", unsorted));
        values.put("literals", one("t", new JSONArray(Arrays.asList(true, false, "", 0))));
        try (Vectors.Kind plainKind = sink.kind("fastjson_default", "JSON.toJSONString(value)");
             Vectors.Kind standard = sink.kind("fastjson_standard", "JSON.toJSONString(value, STANDARD)")) {
            for (Map.Entry<String, JSONObject> e : values.entrySet()) {
                plainKind.add(e.getKey(), e.getValue(), JSON.toJSONString(e.getValue()).getBytes(StandardCharsets.UTF_8));
                standard.add(e.getKey(), e.getValue(), JSON.toJSONString(e.getValue(), STANDARD).getBytes(StandardCharsets.UTF_8));
            }
        }
    }

    private static JSONObject one(String key, Object value) {
        JSONObject o = new JSONObject(true);
        o.put(key, value);
        return o;
    }
}
