package rmqproto.peers;

import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Consumes TOPIC as GROUP with one of the 4.9.8 consumers and prints every delivery.
 *
 * Usage: ConsumeAll NAMESRV_ADDR MODE GROUP TOPIC EXPECTED TIMEOUT_SECONDS [name=value ...]
 * MODE: "concurrently" or "orderly" (DefaultMQPushConsumer) or "litepull"
 * (DefaultLitePullConsumer, subscribe mode, auto commit). Options:
 *   subscription=EXPR        the tag expression subscribed to ("*" by default)
 *   linger=MS                keep consuming MS after EXPECTED deliveries (to see duplicates)
 *   reconsumeLater=true      the concurrently listener always answers RECONSUME_LATER
 *   maxReconsumeTimes=N      the push consumer's maxReconsumeTimes
 *   heartbeat=MS             the push consumer's heartbeatBrokerInterval (a Java broker answers
 *                            SUBSCRIPTION_NOT_LATEST until a heartbeat after the first rebalance)
 *   send=N                   once the consumer runs, send N sync messages (keys "fresh-key-i")
 *   delayLevel=L             ... with this delay level
 *
 * The consumer starts from the first offset when its group has none. It stops after
 * EXPECTED deliveries (plus linger) or TIMEOUT_SECONDS. Output: "SENT {json}" per sent
 * message, "MSG {json}" per delivery, then "DONE deliveries".
 */
public final class ConsumeAll {
    private static final AtomicInteger DELIVERIES = new AtomicInteger();

    private ConsumeAll() {
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String mode = args[1];
        String group = args[2];
        String topic = args[3];
        int expected = Integer.parseInt(args[4]);
        long timeoutMs = Long.parseLong(args[5]) * 1000;
        Map<String, String> options = new LinkedHashMap<>();
        for (int i = 6; i < args.length; i++) {
            String[] pair = args[i].split("=", 2);
            options.put(pair[0], pair[1]);
        }
        long linger = Long.parseLong(options.getOrDefault("linger", "0"));
        long deadline = System.currentTimeMillis() + timeoutMs;

        Runnable stop;
        DefaultLitePullConsumer lite = null;
        if ("litepull".equals(mode)) {
            lite = new DefaultLitePullConsumer(group);
            lite.setNamesrvAddr(namesrv);
            lite.setPollNameServerInterval(1000);
            lite.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            lite.setAutoCommit(true);
            lite.setAutoCommitIntervalMillis(1000);
            lite.subscribe(topic, options.getOrDefault("subscription", "*"));
            lite.start();
            DefaultLitePullConsumer started = lite;
            stop = () -> {
                started.commitSync(); // what was polled is committed, whatever the timer's phase
                started.shutdown();   // and sent to the broker
            };
        } else {
            DefaultMQPushConsumer push = pushConsumer(namesrv, mode, group, topic, options);
            push.start();
            stop = push::shutdown;
        }

        int toSend = Integer.parseInt(options.getOrDefault("send", "0"));
        if (toSend > 0) {
            send(namesrv, group, topic, toSend, Integer.parseInt(options.getOrDefault("delayLevel", "0")));
        }

        long enough = Long.MAX_VALUE;
        while (System.currentTimeMillis() < Math.min(deadline, enough)) {
            if (lite != null) {
                for (MessageExt m : lite.poll(200)) {
                    print(m);
                }
            } else {
                TimeUnit.MILLISECONDS.sleep(50);
            }
            if (enough == Long.MAX_VALUE && DELIVERIES.get() >= expected) {
                enough = System.currentTimeMillis() + linger;
            }
        }
        stop.run();
        System.out.println("DONE " + DELIVERIES.get());
        System.exit(0);
    }

    static DefaultMQPushConsumer pushConsumer(String namesrv, String mode, String group, String topic,
                                              Map<String, String> options) throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setPollNameServerInterval(1000); // topics made after the start are routed soon
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setMaxReconsumeTimes(Integer.parseInt(options.getOrDefault("maxReconsumeTimes", "16")));
        if (options.containsKey("heartbeat")) {
            consumer.setHeartbeatBrokerInterval(Integer.parseInt(options.get("heartbeat")));
        }
        consumer.subscribe(topic, options.getOrDefault("subscription", "*"));
        if ("orderly".equals(mode)) {
            consumer.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
                msgs.forEach(ConsumeAll::print);
                return ConsumeOrderlyStatus.SUCCESS;
            });
        } else if ("concurrently".equals(mode)) {
            boolean later = Boolean.parseBoolean(options.getOrDefault("reconsumeLater", "false"));
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                msgs.forEach(ConsumeAll::print);
                return later ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
        } else {
            throw new IllegalArgumentException("unknown mode " + mode);
        }
        return consumer;
    }

    static void send(String namesrv, String group, String topic, int count, int delayLevel) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(group + "_fresh_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(10000);
        producer.start();
        for (int i = 0; i < count; i++) {
            Message msg = new Message(topic, "Tagfresh", "fresh-key-" + i,
                ("fresh body " + i + " \u00e9\u4e2d").getBytes(StandardCharsets.UTF_8));
            msg.putUserProperty("seq", Integer.toString(i));
            if (delayLevel > 0) {
                msg.setDelayTimeLevel(delayLevel);
            }
            long before = System.currentTimeMillis();
            SendResult result = producer.send(msg);
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("status", result.getSendStatus().name());
            line.put("msgId", result.getMsgId());
            line.put("sendTime", before);
            System.out.println("SENT " + JSON.toJSONString(line));
        }
        producer.shutdown();
    }

    static synchronized void print(MessageExt m) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("receivedAt", System.currentTimeMillis());
        line.put("thread", Thread.currentThread().getName());
        line.put("topic", m.getTopic());
        line.put("queueId", m.getQueueId());
        line.put("queueOffset", m.getQueueOffset());
        line.put("msgId", m.getMsgId());
        line.put("offsetMsgId", m instanceof MessageClientExt ? ((MessageClientExt) m).getOffsetMsgId() : m.getMsgId());
        line.put("keys", m.getKeys());
        line.put("tags", m.getTags());
        line.put("body", new String(m.getBody(), StandardCharsets.UTF_8));
        line.put("reconsumeTimes", m.getReconsumeTimes());
        line.put("bornTimestamp", m.getBornTimestamp());
        line.put("storeTimestamp", m.getStoreTimestamp());
        line.put("retryTopic", m.getProperty(MessageConst.PROPERTY_RETRY_TOPIC));
        line.put("properties", m.getProperties());
        System.out.println("MSG " + JSON.toJSONString(line));
        DELIVERIES.incrementAndGet();
    }
}
