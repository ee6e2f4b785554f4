package rmqproto.interop;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.io.File;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageId;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.DispatchRequest;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.MessageExtBrokerInner;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.QueryMessageResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

/**
 * Vectors and decoders of the store formats (docs/codecs/store.md): commit-log records,
 * properties, client batches, offset message ids, Java hashing/CRC/file names, and the
 * files a real DefaultMessageStore writes.
 */
final class StoreFamily implements Main.Family {
    private static final String SOURCE = "rocketmq-common/rocketmq-store 4.9.8";
    /** Store geometry of the real-store run: small files so that segments roll over. */
    static final int COMMITLOG_FILE_SIZE = 64 * 1024;
    static final int CQ_FILE_SIZE = 8 * 20;
    static final int HASH_SLOT_NUM = 16;
    static final int INDEX_NUM = 400;

    @Override
    public void register(Map<String, Main.Decoder> decoders) {
        decoders.put("store_message_record", (bytes, request) -> {
            MessageExt ext = MessageDecoder.decode(ByteBuffer.wrap(bytes), true, false);
            if (ext == null) {
                throw new IllegalArgumentException("MessageDecoder.decode returned null");
            }
            return recordFields(ext);
        });
        decoders.put("store_record_check", (bytes, request) -> checkRecord(bytes));
        decoders.put("store_properties", (bytes, request) ->
            MessageDecoder.string2messageProperties(new String(bytes, StandardCharsets.UTF_8)));
        decoders.put("store_batch", (bytes, request) -> {
            JSONArray out = new JSONArray();
            for (Message m : MessageDecoder.decodeMessages(ByteBuffer.wrap(bytes))) {
                out.add(batchFields(m));
            }
            return out;
        });
        decoders.put("store_message_id", (bytes, request) -> {
            MessageId id = MessageDecoder.decodeMessageId(new String(bytes, StandardCharsets.US_ASCII));
            InetSocketAddress address = (InetSocketAddress) id.getAddress();
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("host", address.getAddress().getHostAddress());
            f.put("port", address.getPort());
            f.put("offset", id.getOffset());
            return f;
        });
        decoders.put("store_directory", (bytes, request) -> readStore(request));
    }

    @Override
    public void generate(Vectors.Sink sink) throws Exception {
        records(sink);
        properties(sink);
        batches(sink);
        messageIds(sink);
        javaLang(sink);
        storeFiles(sink);
    }

    // ------------------------------------------------------------ records

    private static Map<String, String> props(String... kv) {
        Map<String, String> map = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            map.put(kv[i], kv[i + 1]);
        }
        return map;
    }

    private static byte[] pattern(int length, int seed) {
        byte[] body = new byte[length];
        for (int i = 0; i < length; i++) {
            body[i] = (byte) (i * 31 + seed * 7 + (i >> 5));
        }
        return body;
    }

    private static MessageExt ext(String topic, byte[] body, Map<String, String> properties, int sysFlag,
        String bornIp, String storeIp) throws Exception {
        MessageExt m = new MessageExt();
        m.setTopic(topic);
        m.setBody(body);
        MessageAccessor.setProperties(m, properties);
        m.setQueueId(3);
        m.setFlag(0x55);
        m.setQueueOffset(1234567L);
        m.setCommitLogOffset(987654321L);
        m.setBornTimestamp(1700000000123L);
        m.setStoreTimestamp(1700000000456L);
        m.setBornHost(new InetSocketAddress(InetAddress.getByName(bornIp), 52311));
        m.setStoreHost(new InetSocketAddress(InetAddress.getByName(storeIp), 10911));
        m.setReconsumeTimes(2);
        m.setPreparedTransactionOffset(0L);
        m.setBodyCRC(UtilAll.crc32(body));
        int flag = sysFlag;
        if (bornIp.contains(":")) {
            flag |= MessageSysFlag.BORNHOST_V6_FLAG;
        }
        if (storeIp.contains(":")) {
            flag |= MessageSysFlag.STOREHOSTADDRESS_V6_FLAG;
        }
        m.setSysFlag(flag);
        return m;
    }

    static Map<String, Object> recordFields(MessageExt m) {
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("store_size", m.getStoreSize());
        f.put("body_crc", m.getBodyCRC());
        f.put("queue_id", m.getQueueId());
        f.put("flag", m.getFlag());
        f.put("queue_offset", m.getQueueOffset());
        f.put("commit_log_offset", m.getCommitLogOffset());
        f.put("sys_flag", m.getSysFlag());
        f.put("born_timestamp", m.getBornTimestamp());
        f.put("born_host", hostFields((InetSocketAddress) m.getBornHost()));
        f.put("store_timestamp", m.getStoreTimestamp());
        f.put("store_host", hostFields((InetSocketAddress) m.getStoreHost()));
        f.put("reconsume_times", m.getReconsumeTimes());
        f.put("prepared_transaction_offset", m.getPreparedTransactionOffset());
        f.put("body", m.getBody() == null ? "" : Vectors.hex(m.getBody()));
        f.put("topic", m.getTopic());
        f.put("properties", m.getProperties());
        f.put("msg_id", m.getMsgId());
        return f;
    }

    private static JSONArray hostFields(InetSocketAddress address) {
        JSONArray host = new JSONArray();
        host.add(address.getAddress().getHostAddress());
        host.add(address.getPort());
        return host;
    }

    private static void records(Vectors.Sink sink) throws Exception {
        try (Vectors.Kind kind = sink.kind("store_message_record", SOURCE + " MessageDecoder.encode/decode")) {
            Map<String, String> common = props("UNIQ_KEY", "0A0102030000000000000000000000A1", "TAGS", "TagA",
                "KEYS", "order-1 order-2", "WAIT", "true", "CLUSTER", "DefaultCluster");
            addRecord(kind, "ipv4-hosts", ext("TopicTest", pattern(1024, 1), common, 0, "10.1.2.3", "10.9.8.7"), false);
            addRecord(kind, "ipv6-born-host", ext("TopicTest", pattern(100, 2), common, 0, "fd00::1", "10.9.8.7"), false);
            addRecord(kind, "ipv6-store-host", ext("TopicTest", pattern(100, 3), common, 0, "10.1.2.3", "fd00::abcd"), false);
            addRecord(kind, "ipv6-both-hosts", ext("TopicTest", pattern(100, 4), common, 0, "2001:db8::7", "fd00::abcd"), false);
            addRecord(kind, "empty-body-no-properties", ext("T", new byte[0], new HashMap<>(), 0, "127.0.0.1", "127.0.0.1"), false);
            addRecord(kind, "unicode-topic-and-properties", ext("主题-Topic_1", "体".getBytes(StandardCharsets.UTF_8),
                props("TAGS", "标签😀", "KEYS", "ключ key2", "PGROUP", "g"), 0, "192.168.0.1", "192.168.0.2"), false);
            addRecord(kind, "transaction-prepared", ext("TopicTx", pattern(10, 5),
                props("TRAN_MSG", "true", "PGROUP", "tx-group"), MessageSysFlag.TRANSACTION_PREPARED_TYPE,
                "10.1.2.3", "10.9.8.7"), false);
            addRecord(kind, "max-topic-length-127", ext(repeat('t', 127), pattern(3, 6), props("a", "b"), 0,
                "10.1.2.3", "10.9.8.7"), false);
            MessageExt compressed = ext("TopicZ", pattern(6000, 7), props("TAGS", "z"),
                MessageSysFlag.COMPRESSED_FLAG | MessageSysFlag.COMPRESSION_ZLIB_TYPE, "10.1.2.3", "10.9.8.7");
            addRecord(kind, "zlib-compressed-body", compressed, true);
        }
    }

    private static String repeat(char c, int n) {
        char[] chars = new char[n];
        Arrays.fill(chars, c);
        return new String(chars);
    }

    private static void addRecord(Vectors.Kind kind, String name, MessageExt m, boolean compress) throws Exception {
        byte[] bytes = MessageDecoder.encode(m, compress);
        MessageExt back = MessageDecoder.decode(ByteBuffer.wrap(bytes), true, true);
        Map<String, Object> fields = recordFields(back);
        fields.put("uncompressed_body", Vectors.hex(m.getBody()));
        kind.add(name, fields, bytes);
    }

    /** What the broker's recovery makes of a record: CommitLog.checkMessageAndReturnSize. */
    private static Map<String, Object> checkRecord(byte[] bytes) throws Exception {
        DispatchRequest r = checker().getCommitLog().checkMessageAndReturnSize(ByteBuffer.wrap(bytes), true, true);
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("success", r.isSuccess());
        f.put("msg_size", r.getMsgSize());
        if (r.isSuccess() && r.getMsgSize() > 0) {
            f.put("topic", r.getTopic());
            f.put("queue_id", r.getQueueId());
            f.put("commit_log_offset", r.getCommitLogOffset());
            f.put("tags_code", r.getTagsCode());
            f.put("keys", r.getKeys());
            f.put("uniq_key", r.getUniqKey());
            f.put("sys_flag", r.getSysFlag());
        }
        return f;
    }

    private static DefaultMessageStore checkStore;

    /** A store started and stopped again: its CommitLog still checks buffers. */
    private static DefaultMessageStore checker() throws Exception {
        if (checkStore == null) {
            Path dir = Files.createTempDirectory("rmq-check");
            try (RunningStore running = new RunningStore(dir)) {
                checkStore = running.store;
            }
            deleteTree(dir);
        }
        return checkStore;
    }

    // ------------------------------------------------------------ properties, batches, ids

    private static void properties(Vectors.Sink sink) throws Exception {
        try (Vectors.Kind kind = sink.kind("store_properties", SOURCE + " messageProperties2String/string2messageProperties")) {
            List<Map<String, String>> maps = Arrays.asList(
                props(), props("TAGS", "TagA"),
                props("UNIQ_KEY", "0A0102030000000000000000000000A1", "TAGS", "TagA", "KEYS", "k1 k2", "WAIT", "true",
                    "CLUSTER", "DefaultCluster", "PGROUP", "producer-group", "MAX_OFFSET", "100", "MIN_OFFSET", "0"),
                props("标签", "值😀", "e", "=:;,"));
            int i = 0;
            for (Map<String, String> map : maps) {
                String text = MessageDecoder.messageProperties2String(map);
                Map<String, Object> fields = new LinkedHashMap<>();
                fields.put("properties", MessageDecoder.string2messageProperties(text));
                fields.put("written_by_java", true);
                kind.add("encoded-" + i++, fields, text.getBytes(StandardCharsets.UTF_8));
            }
            String[] parsed = {
                "TAGS\u0001a\u0002KEYS\u0001b\u0002", "\u0002\u0002a\u0001b\u0002\u0001x\u0002y\u0001\u0002zz",
                "a\u0001\u0001b\u0002c\u0001d\u0001e", "k\u0001v\u0002k\u0001w", "ab", "\u0001\u0002",
            };
            i = 0;
            for (String text : parsed) {
                Map<String, Object> fields = new LinkedHashMap<>();
                fields.put("properties", MessageDecoder.string2messageProperties(text));
                fields.put("written_by_java", false);
                kind.add("parsed-" + i++, fields, text.getBytes(StandardCharsets.UTF_8));
            }
        }
    }

    static Map<String, Object> batchFields(Message m) {
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("flag", m.getFlag());
        f.put("body", Vectors.hex(m.getBody()));
        f.put("properties", m.getProperties());
        return f;
    }

    private static void batches(Vectors.Sink sink) throws Exception {
        try (Vectors.Kind kind = sink.kind("store_batch", SOURCE + " MessageDecoder.encodeMessages/decodeMessages")) {
            List<List<Message>> batches = new ArrayList<>();
            batches.add(Arrays.asList(batchMessage(0, pattern(5, 1), props("UNIQ_KEY", "A1", "TAGS", "t"))));
            batches.add(Arrays.asList(
                batchMessage(1, pattern(300, 2), props("UNIQ_KEY", "B1", "KEYS", "k1", "WAIT", "true")),
                batchMessage(0, new byte[0], props()),
                batchMessage(7, "ünïcödé".getBytes(StandardCharsets.UTF_8), props("TAGS", "标签"))));
            int i = 0;
            for (List<Message> batch : batches) {
                byte[] bytes = MessageDecoder.encodeMessages(batch);
                JSONArray messages = new JSONArray();
                for (Message m : MessageDecoder.decodeMessages(ByteBuffer.wrap(bytes))) {
                    messages.add(batchFields(m));
                }
                Map<String, Object> fields = new LinkedHashMap<>();
                fields.put("messages", messages);
                kind.add("batch-" + i++, fields, bytes);
            }
        }
    }

    private static Message batchMessage(int flag, byte[] body, Map<String, String> properties) {
        Message m = new Message();
        m.setFlag(flag);
        m.setBody(body);
        MessageAccessor.setProperties(m, properties);
        return m;
    }

    private static void messageIds(Vectors.Sink sink) throws Exception {
        try (Vectors.Kind kind = sink.kind("store_message_id", SOURCE + " MessageDecoder.createMessageId/decodeMessageId")) {
            Object[][] cases = {
                {"10.9.8.7", 10911, 0L}, {"192.168.1.200", 65535, 0x7FFFFFFFFFFFFFFFL},
                {"127.0.0.1", 0, 1073741824L}, {"fd00::abcd", 10911, 123456789L},
                {"2001:db8:85a3::8a2e:370:7334", 30911, 42L},
            };
            for (Object[] c : cases) {
                InetSocketAddress address = new InetSocketAddress(InetAddress.getByName((String) c[0]), (Integer) c[1]);
                String id = MessageDecoder.createMessageId(address, (Long) c[2]);
                MessageId back = MessageDecoder.decodeMessageId(id);
                Map<String, Object> f = new LinkedHashMap<>();
                f.put("host", ((InetSocketAddress) back.getAddress()).getAddress().getHostAddress());
                f.put("port", ((InetSocketAddress) back.getAddress()).getPort());
                f.put("offset", back.getOffset());
                f.put("msg_id", id);
                kind.add(c[0] + ":" + c[1] + "@" + c[2], f, id.getBytes(StandardCharsets.US_ASCII));
            }
        }
    }

    private static void javaLang(Vectors.Sink sink) throws Exception {
        try (Vectors.Kind kind = sink.kind("store_javalang", SOURCE + " String.hashCode, Math.abs, UtilAll.crc32/offset2FileName")) {
            String[] strings = {
                "", "a", "TagA", "TopicTest#order-1", "polygenelubricants", "标签", "😀", "a😀b\u0000c",
                "\ud800", "\udfff\ud800", "TopicTest#0A0102030000000000000000000000A1", repeat('x', 5000),
            };
            int i = 0;
            for (String s : strings) {
                int hash = s.hashCode();
                Map<String, Object> f = new LinkedHashMap<>();
                f.put("op", "hash");
                JSONArray units = new JSONArray();  // UTF-16 code units: getBytes would replace lone surrogates
                for (char ch : s.toCharArray()) {
                    units.add((int) ch);
                }
                f.put("units", units);
                f.put("hash_code", hash);
                f.put("math_abs", Math.abs(hash));
                kind.add("hash-" + i++, f, s.getBytes(StandardCharsets.UTF_16BE));
            }
            byte[][] blobs = {new byte[0], "123456789".getBytes(StandardCharsets.US_ASCII), pattern(1024, 9), pattern(77, 3)};
            i = 0;
            for (byte[] blob : blobs) {
                Map<String, Object> f = new LinkedHashMap<>();
                f.put("op", "crc32");
                f.put("crc32", UtilAll.crc32(blob));
                kind.add("crc32-" + i++, f, blob);
            }
            long[] offsets = {0L, 1L, 65536L, 1073741824L, 6000000L, 99999999999999999L, Long.MAX_VALUE};
            for (long offset : offsets) {
                String name = UtilAll.offset2FileName(offset);
                Map<String, Object> f = new LinkedHashMap<>();
                f.put("op", "file_name");
                f.put("offset", offset);
                f.put("name", name);
                kind.add("file-name-" + offset, f, name.getBytes(StandardCharsets.US_ASCII));
            }
        }
    }

    // ------------------------------------------------------------ a real DefaultMessageStore

    /** A DefaultMessageStore loaded and started on a directory; close() stops every thread it made. */
    static final class RunningStore implements AutoCloseable {
        final DefaultMessageStore store;
        private final BrokerStatsManager stats = new BrokerStatsManager("interop", true);
        private boolean started;

        RunningStore(Path dir) throws Exception {
            store = new DefaultMessageStore(storeConfig(dir), stats, null, new BrokerConfig());
            try {
                if (!store.load()) {
                    throw new IllegalStateException("store load failed in " + dir);
                }
                store.start();
                started = true;
            } catch (Exception e) {
                close();
                throw e;
            }
        }

        @Override
        public void close() throws Exception {
            if (started) {
                store.shutdown();
            } else {
                store.getAllocateMappedFileService().shutdown();
                java.lang.reflect.Field index = DefaultMessageStore.class.getDeclaredField("indexService");
                index.setAccessible(true);
                ((org.apache.rocketmq.store.index.IndexService) index.get(store)).shutdown();
            }
            stats.shutdown();
        }
    }

    static MessageStoreConfig storeConfig(Path dir) {
        MessageStoreConfig config = new MessageStoreConfig();
        config.setStorePathRootDir(dir.toString());
        config.setStorePathCommitLog(dir.resolve("commitlog").toString());
        config.setMappedFileSizeCommitLog(COMMITLOG_FILE_SIZE);
        config.setMappedFileSizeConsumeQueue(CQ_FILE_SIZE);
        config.setMaxHashSlotNum(HASH_SLOT_NUM);
        config.setMaxIndexNum(INDEX_NUM);
        config.setHaListenPort(0);
        config.setFlushIntervalCommitLog(50);
        // every commit-log flush thorough: only those record the store time the checkpoint
        // takes, and the first one may come before any put on a busy machine
        config.setFlushCommitLogThoroughInterval(0);
        config.setFlushIntervalConsumeQueue(50);
        return config;
    }

    /** The deterministic messages put into the real store. */
    static List<MessageExtBrokerInner> storeMessages() throws Exception {
        List<MessageExtBrokerInner> list = new ArrayList<>();
        String[] tags = {"TagA", "TagB", null, "标签😀"};
        for (int i = 0; i < 100; i++) {
            MessageExtBrokerInner m = new MessageExtBrokerInner();
            m.setTopic(i % 3 == 0 ? "TopicB" : "TopicA");
            m.setQueueId(i % 2);
            m.setBody(pattern(200 + (i * 137) % 1300, i));
            m.setFlag(i % 5);
            Map<String, String> p = new HashMap<>();
            p.put("UNIQ_KEY", String.format("0A01020300002A9F00000000%08X", i));
            p.put("WAIT", "true");
            if (tags[i % 4] != null) {
                p.put("TAGS", tags[i % 4]);
            }
            if (i % 7 != 0) {
                p.put("KEYS", "key-" + (i % 10) + " order-" + i);
            }
            int sysFlag = 0;
            if (i == 50) {
                p.put("TRAN_MSG", "true");
                p.put("PGROUP", "tx-group");
                sysFlag = MessageSysFlag.TRANSACTION_PREPARED_TYPE;
            }
            MessageAccessor.setProperties(m, p);
            m.setPropertiesString(MessageDecoder.messageProperties2String(p));
            m.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(p.get("TAGS")));
            m.setSysFlag(sysFlag);
            m.setBornTimestamp(1700000000000L + i);
            String bornIp = i % 10 == 9 ? "fd00::1" : "10.1.2.3";
            m.setBornHost(new InetSocketAddress(InetAddress.getByName(bornIp), 50000 + i));
            String storeIp = i >= 95 ? "fd00::abcd" : "10.9.8.7";
            m.setStoreHost(new InetSocketAddress(InetAddress.getByName(storeIp), 10911));
            m.setReconsumeTimes(i % 3);
            list.add(m);
        }
        return list;
    }

    private static void storeFiles(Vectors.Sink sink) throws Exception {
        Path dir = Files.createTempDirectory("rmq-store");
        JSONArray puts = new JSONArray();
        JSONObject answers;
        try (RunningStore running = new RunningStore(dir)) {
            answers = putAll(running.store, puts);
        }
        writeStoreFiles(sink, dir, puts, answers);
        deleteTree(dir);
    }

    private static JSONObject putAll(DefaultMessageStore store, JSONArray puts) throws Exception {
        for (MessageExtBrokerInner m : storeMessages()) {
            PutMessageResult r = store.putMessage(m);
            if (!r.isOk()) {
                throw new IllegalStateException("put failed: " + r);
            }
            Map<String, Object> f = new LinkedHashMap<>();
            f.put("topic", m.getTopic());
            f.put("queue_id", m.getQueueId());
            f.put("wrote_offset", r.getAppendMessageResult().getWroteOffset());
            f.put("wrote_bytes", r.getAppendMessageResult().getWroteBytes());
            f.put("logics_offset", r.getAppendMessageResult().getLogicsOffset());
            f.put("msg_id", r.getAppendMessageResult().getMsgId());
            f.put("store_timestamp", m.getStoreTimestamp());
            puts.add(f);
        }
        while (store.dispatchBehindBytes() > 0) {
            Thread.sleep(10);
        }
        Thread.sleep(200);
        return queryStore(store, Arrays.asList("TopicA", "TopicB"));
    }

    private static void writeStoreFiles(Vectors.Sink sink, Path dir, JSONArray puts, JSONObject answers)
        throws Exception {
        try (Vectors.Kind kind = sink.kind("store_files", SOURCE + " DefaultMessageStore (commitlog "
            + COMMITLOG_FILE_SIZE + " B, consume queue " + CQ_FILE_SIZE + " B, index " + HASH_SLOT_NUM + " slots x "
            + INDEX_NUM + " entries)")) {
            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("puts", puts);
            summary.put("java_reads", answers);
            summary.put("commitlog_file_size", COMMITLOG_FILE_SIZE);
            summary.put("cq_file_size", CQ_FILE_SIZE);
            summary.put("hash_slot_num", HASH_SLOT_NUM);
            summary.put("index_num", INDEX_NUM);
            kind.add("puts", summary, new byte[0]);
            for (Path file : storeFileList(dir)) {
                String rel = dir.relativize(file).toString().replace(File.separatorChar, '/');
                byte[] bytes = Files.readAllBytes(file);
                Map<String, Object> f = new LinkedHashMap<>();
                String name = rel;
                if (rel.startsWith("index/")) {
                    f.put("file_name", rel.substring("index/".length()));  // creation time: clock-derived
                    name = "index";
                }
                f.put("path", name);
                f.put("file_size", bytes.length);
                kind.add(name, f, trimZeros(bytes));
            }
        }
    }

    /** Every message of one queue as Java reads it: offsets and unique key, in queue order. */
    static JSONArray readQueue(DefaultMessageStore store, String topic, int queueId, long max) {
        JSONArray msgs = new JSONArray();
        // one call stops at a consume-queue file boundary: continue from nextBeginOffset
        for (long next = 0; next < max; ) {
            GetMessageResult r = store.getMessage("g", topic, queueId, next, 32, null);
            for (ByteBuffer buf : r.getMessageBufferList()) {
                MessageExt m = MessageDecoder.decode(buf, false, false);
                JSONObject mf = new JSONObject(new LinkedHashMap<>());
                mf.put("commit_log_offset", m.getCommitLogOffset());
                mf.put("queue_offset", m.getQueueOffset());
                mf.put("uniq_key", m.getProperty("UNIQ_KEY"));
                msgs.add(mf);
            }
            r.release();
            if (r.getNextBeginOffset() <= next) {
                break;
            }
            next = r.getNextBeginOffset();
        }
        return msgs;
    }

    /** What Java reads back: every queue's messages and every key's index lookup. */
    private static JSONObject queryStore(DefaultMessageStore store, List<String> topics) {
        JSONObject out = new JSONObject(new LinkedHashMap<>());
        JSONObject queues = new JSONObject(new LinkedHashMap<>());
        JSONObject keys = new JSONObject(new LinkedHashMap<>());
        for (String topic : topics) {
            for (int q = 0; q < 4; q++) {
                long max = store.getMaxOffsetInQueue(topic, q);
                if (max <= 0) {
                    continue;
                }
                JSONArray msgs = readQueue(store, topic, q, max);
                queues.put(topic + "/" + q, msgs);
            }
        }
        for (MessageExtBrokerInner m : safeMessages()) {
            String uniq = m.getProperty("UNIQ_KEY");
            List<String> wanted = new ArrayList<>();
            wanted.add(uniq);
            if (m.getKeys() != null) {
                wanted.addAll(Arrays.asList(m.getKeys().split(" ")));
            }
            for (String key : wanted) {
                String full = m.getTopic() + "#" + key;
                if (keys.containsKey(full)) {
                    continue;
                }
                QueryMessageResult r = store.queryMessage(m.getTopic(), key, 64, 0, Long.MAX_VALUE);
                JSONArray offsets = new JSONArray();
                for (ByteBuffer b : r.getMessageBufferList()) {
                    offsets.add(b.getLong(MessageDecoder.PHY_POS_POSITION));
                }
                r.release();
                keys.put(full, offsets);
            }
        }
        out.put("queues", queues);
        out.put("keys", keys);
        return out;
    }

    private static List<MessageExtBrokerInner> safeMessages() {
        try {
            return storeMessages();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Reads a store directory (written by anyone) with DefaultMessageStore. */
    private static JSONObject readStore(JSONObject request) throws Exception {
        Path dir = Path.of(request.getString("dir"));
        try (RunningStore running = new RunningStore(dir)) {
            JSONObject out = queryStore(running.store, request.getJSONArray("topics").toJavaList(String.class));
            out.put("max_phy_offset", running.store.getMaxPhyOffset());
            return out;
        }
    }

    private static List<Path> storeFileList(Path dir) throws Exception {
        List<Path> files = new ArrayList<>();
        for (String sub : new String[] {"commitlog", "consumequeue", "index"}) {
            try (Stream<Path> walk = Files.walk(dir.resolve(sub))) {
                walk.filter(Files::isRegularFile).sorted(Comparator.comparing(Path::toString)).forEach(files::add);
            }
        }
        files.add(dir.resolve("checkpoint"));
        return files;
    }

    private static byte[] trimZeros(byte[] bytes) {
        int end = bytes.length;
        while (end > 0 && bytes[end - 1] == 0) {
            end--;
        }
        return Arrays.copyOf(bytes, end);
    }

    private static void deleteTree(Path dir) throws Exception {
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        }
    }
}
