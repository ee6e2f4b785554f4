package rmqproto.peers;

import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Sends COUNT messages to TOPIC with the Java client (sync sends), then consumes them with a
 * push consumer, both finding their routes through the NameServer(s) given.
 *
 * Usage: ProduceConsume NAMESRV_ADDR TOPIC COUNT GROUP TIMEOUT_SECONDS
 * Prints "SENT n", then "RECEIVED n" and exits 0 when every message came back intact.
 */
public final class ProduceConsume {
    private ProduceConsume() {
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        int count = Integer.parseInt(args[2]);
        String group = args[3];
        long timeoutMs = Long.parseLong(args[4]) * 1000;

        DefaultMQProducer producer = new DefaultMQProducer(group + "_producer");
        producer.setNamesrvAddr(namesrv);
        producer.start();
        int sent = 0;
        for (int i = 0; i < count; i++) {
            Message msg = new Message(topic, "TagA", "key-" + i, body(i));
            msg.putUserProperty("seq", Integer.toString(i));
            SendResult result = producer.send(msg, 10000);
            if (result.getSendStatus() == SendStatus.SEND_OK) {
                sent++;
            }
        }
        producer.shutdown();
        System.out.println("SENT " + sent);

        Set<Integer> received = ConcurrentHashMap.newKeySet();
        Set<String> broken = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "TagA");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                int seq = Integer.parseInt(m.getUserProperty("seq"));
                boolean intact = new String(m.getBody(), StandardCharsets.UTF_8).equals(new String(body(seq), StandardCharsets.UTF_8))
                    && ("key-" + seq).equals(m.getKeys()) && "TagA".equals(m.getTags());
                if (!intact) {
                    broken.add(m.getMsgId());
                }
                received.add(seq);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (received.size() < count && System.currentTimeMillis() < deadline) {
            TimeUnit.MILLISECONDS.sleep(100);
        }
        consumer.shutdown();
        System.out.println("RECEIVED " + received.size());
        System.out.println("BROKEN " + broken.size());
        System.exit(received.size() == count && sent == count && broken.isEmpty() ? 0 : 1);
    }

    static byte[] body(int i) {
        return ("message body " + i + " \u00e9\u4e2d").getBytes(StandardCharsets.UTF_8);
    }
}
