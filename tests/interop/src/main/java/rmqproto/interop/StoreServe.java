package rmqproto.interop;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.store.ConsumeQueue;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.MessageExtBrokerInner;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.QueryMessageResult;
import org.apache.rocketmq.store.SelectMappedBufferResult;

/**
 * Serves a store directory with rocketmq-store 4.9.8's DefaultMessageStore, or writes one.
 *
 * <pre>
 * StoreServe read  DIR TOPICS KEYS   load DIR, read every queue and key, print JSON
 * StoreServe write DIR TOPICS KEYS   put StoreFamily's messages and a delayed one into a
 *                                    new store in DIR, print the same JSON, shut down cleanly
 * </pre>
 * TOPICS: comma-separated; KEYS: comma-separated "topic#key". Geometry: StoreFamily.storeConfig
 * (commit log 64 KiB, consume queue 8 units, index 16 slots x 400 entries).
 * JSON: {"queues": {"topic/q": [{commit_log_offset, queue_offset, uniq_key}]},
 * "tags": {"topic/q": [tagsCode per unit]}, "keys": {"topic#key": [offsets]}, "max_phy_offset": n}.
 */
public final class StoreServe {
    private static final int MAX_QUEUE_ID = 18;

    private StoreServe() {
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        Path dir = Path.of(args[1]);
        String[] topics = args[2].split(",");
        String[] keys = args[3].isEmpty() ? new String[0] : args[3].split(",");
        JSONObject out;
        if ("write".equals(mode)) {
            Files.createDirectories(dir);
            try (StoreFamily.RunningStore running = new StoreFamily.RunningStore(dir)) {
                putAll(running.store);
                out = serve(running.store, topics, keys);
            }
        } else if ("read".equals(mode)) {
            try (StoreFamily.RunningStore running = new StoreFamily.RunningStore(dir)) {
                out = serve(running.store, topics, keys);
            }
        } else {
            throw new IllegalArgumentException("mode must be read or write: " + mode);
        }
        System.out.println(JSON.toJSONString(out));
        System.exit(0);
    }

    private static void putAll(DefaultMessageStore store) throws Exception {
        for (MessageExtBrokerInner m : StoreFamily.storeMessages()) {
            check(store.putMessage(m));
        }
        MessageExtBrokerInner delayed = new MessageExtBrokerInner();
        delayed.setTopic("TopicA");
        delayed.setQueueId(1);
        delayed.setBody("later".getBytes());
        Map<String, String> p = new HashMap<>();
        p.put("UNIQ_KEY", "DELAYED0001");
        p.put("DELAY", "18");
        p.put("TAGS", "TagD");
        MessageAccessor.setProperties(delayed, p);
        delayed.setPropertiesString(MessageDecoder.messageProperties2String(p));
        delayed.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode("TagD"));
        delayed.setBornTimestamp(1700000000999L);
        delayed.setBornHost(new InetSocketAddress(InetAddress.getByName("10.1.2.3"), 50001));
        delayed.setStoreHost(new InetSocketAddress(InetAddress.getByName("10.9.8.7"), 10911));
        check(store.putMessage(delayed));
        while (store.dispatchBehindBytes() > 0) {
            Thread.sleep(10);
        }
        Thread.sleep(300);
    }

    private static void check(PutMessageResult r) {
        if (!r.isOk()) {
            throw new IllegalStateException("put failed: " + r);
        }
    }

    private static JSONObject serve(DefaultMessageStore store, String[] topics, String[] keys) {
        JSONObject queues = new JSONObject(new LinkedHashMap<>());
        JSONObject tags = new JSONObject(new LinkedHashMap<>());
        for (String topic : topics) {
            for (int q = 0; q < MAX_QUEUE_ID; q++) {
                long max = store.getMaxOffsetInQueue(topic, q);
                if (max <= 0) {
                    continue;
                }
                JSONArray msgs = StoreFamily.readQueue(store, topic, q, max);
                queues.put(topic + "/" + q, msgs);
                ConsumeQueue cq = store.getConsumeQueue(topic, q);
                JSONArray codes = new JSONArray();
                for (long i = cq.getMinOffsetInQueue(); i < max; i++) {
                    SelectMappedBufferResult unit = cq.getIndexBuffer(i);
                    codes.add(unit.getByteBuffer().getLong(12));
                    unit.release();
                }
                tags.put(topic + "/" + q, codes);
            }
        }
        JSONObject found = new JSONObject(new LinkedHashMap<>());
        for (String full : keys) {
            int hash = full.indexOf('#');
            QueryMessageResult r = store.queryMessage(full.substring(0, hash), full.substring(hash + 1), 64, 0,
                Long.MAX_VALUE);
            JSONArray offsets = new JSONArray();
            for (ByteBuffer b : r.getMessageBufferList()) {
                offsets.add(b.getLong(MessageDecoder.PHY_POS_POSITION));
            }
            r.release();
            found.put(full, offsets);
        }
        JSONObject out = new JSONObject(new LinkedHashMap<>());
        out.put("queues", queues);
        out.put("tags", tags);
        out.put("keys", found);
        out.put("max_phy_offset", store.getMaxPhyOffset());
        return out;
    }
}
