package rmqproto.peers;

import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientIDSetter;

/**
 * Fills a broker with a mix of messages for the store interop tests: several topics, tags,
 * keys, user properties, a compressed body, a batch and a delayed message.
 *
 * Usage: SendMix NAMESRV_ADDR PREFIX DELAY_LEVEL
 * Topics: PREFIX+"Orders" (40 messages, tags TagA/TagB, keys "order-i" and "customer-(i%5)"),
 * PREFIX+"Events" (20 messages without tags, key "event-i"; event 7 has a 10 KiB body the
 * client compresses), PREFIX+"Batch" (one batch of 8, keys "batch-i"), PREFIX+"Delayed"
 * (one message, key "delayed-0", sent with DELAY_LEVEL). Every message carries the user
 * properties "seq" and "note". Prints "SENT {json}" per acknowledged message (topic, tags,
 * keys, body, userProperties, msgId, offsetMsgId, queueId, queueOffset, status, sendTime)
 * and exits 0 when every send was SEND_OK.
 */
public final class SendMix {
    private SendMix() {
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String prefix = args[1];
        int delayLevel = Integer.parseInt(args[2]);

        DefaultMQProducer producer = new DefaultMQProducer(prefix + "MixProducer");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(10000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.start();
        boolean allOk = true;
        for (int i = 0; i < 40; i++) {
            Message m = message(prefix + "Orders", i % 2 == 0 ? "TagA" : "TagB", i, "order-" + i + " customer-" + (i % 5));
            allOk &= print(m, producer.send(m));
        }
        for (int i = 0; i < 20; i++) {
            Message m = message(prefix + "Events", null, i, "event-" + i);
            if (i == 7) {
                m.setBody(text(i, 10 * 1024).getBytes(StandardCharsets.UTF_8));
            }
            allOk &= print(m, producer.send(m));
        }
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            batch.add(message(prefix + "Batch", "TagBatch", i, "batch-" + i));
        }
        SendResult result = producer.send(batch);
        String[] ids = result.getMsgId().split(",");
        String[] offsetIds = result.getOffsetMsgId().split(",");
        for (int i = 0; i < batch.size(); i++) {
            allOk &= print(batch.get(i), result, ids[i], offsetIds[i], result.getQueueOffset() + i);
        }
        Message delayed = message(prefix + "Delayed", "TagDelayed", 0, "delayed-0");
        delayed.setDelayTimeLevel(delayLevel);
        allOk &= print(delayed, producer.send(delayed));
        producer.shutdown();
        System.exit(allOk ? 0 : 1);
    }

    static Message message(String topic, String tags, int i, String keys) {
        Message m = new Message(topic, tags, keys, text(i, 60 + i * 37).getBytes(StandardCharsets.UTF_8));
        m.putUserProperty("seq", Integer.toString(i));
        m.putUserProperty("note", "n\u00e9 " + i + " \u4e2d\u6587 \ud83d\ude00 a=b;c:d");
        return m;
    }

    /** A body of about LENGTH characters that names message I. */
    static String text(int i, int length) {
        StringBuilder sb = new StringBuilder("body " + i + " \u00e9\u4e2d");
        while (sb.length() < length) {
            sb.append(" ").append(sb.length() % 97);
        }
        return sb.toString();
    }

    static boolean print(Message m, SendResult r) {
        return print(m, r, r.getMsgId(), r.getOffsetMsgId(), r.getQueueOffset());
    }

    static boolean print(Message m, SendResult r, String msgId, String offsetMsgId, long queueOffset) {
        Map<String, Object> user = new LinkedHashMap<>();
        user.put("seq", m.getUserProperty("seq"));
        user.put("note", m.getUserProperty("note"));
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("topic", m.getTopic());
        line.put("tags", m.getTags());
        line.put("keys", m.getKeys());
        line.put("body", new String(m.getBody(), StandardCharsets.UTF_8));
        line.put("userProperties", user);
        line.put("msgId", msgId);
        line.put("uniqKey", MessageClientIDSetter.getUniqID(m));
        line.put("offsetMsgId", offsetMsgId);
        line.put("queueId", r.getMessageQueue().getQueueId());
        line.put("queueOffset", queueOffset);
        line.put("status", r.getSendStatus().name());
        line.put("sendTime", System.currentTimeMillis());
        System.out.println("SENT " + JSON.toJSONString(line));
        return r.getSendStatus() == SendStatus.SEND_OK;
    }
}
