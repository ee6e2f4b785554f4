package rmqproto.peers;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;

/**
 * One DefaultMQPushConsumer (4.9.8, concurrently) subscribed to several topics ("*").
 *
 * Usage: ConsumeTopics NAMESRV_ADDR GROUP TOPIC[,TOPIC...] EXPECTED TIMEOUT_SECONDS [LINGER_MS]
 * Starts from the first offset when the group has none. Prints "MSG {json}" per delivery
 * (as ConsumeAll), stops LINGER_MS after EXPECTED deliveries or at the timeout, then prints
 * "DONE deliveries". Offsets go to the broker every second (the client's default is 5 s), so
 * that a test waiting for them to be stored waits no longer than it must.
 */
public final class ConsumeTopics {
    private ConsumeTopics() {
    }

    public static void main(String[] args) throws Exception {
        String[] topics = args[2].split(",");
        int expected = Integer.parseInt(args[3]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[4]) * 1000;
        long linger = args.length > 5 ? Long.parseLong(args[5]) : 0;
        AtomicInteger deliveries = new AtomicInteger();

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args[1]);
        consumer.setNamesrvAddr(args[0]);
        consumer.setPollNameServerInterval(1000);
        consumer.setPersistConsumerOffsetInterval(1000);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        for (String topic : topics) {
            consumer.subscribe(topic, "*");
        }
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            msgs.forEach(m -> {
                ConsumeAll.print(m);
                deliveries.incrementAndGet();
            });
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        long enough = Long.MAX_VALUE;
        while (System.currentTimeMillis() < Math.min(deadline, enough)) {
            TimeUnit.MILLISECONDS.sleep(50);
            if (enough == Long.MAX_VALUE && deliveries.get() >= expected) {
                enough = System.currentTimeMillis() + linger;
            }
        }
        consumer.shutdown();
        System.out.println("DONE " + deliveries.get());
        System.exit(0);
    }
}
