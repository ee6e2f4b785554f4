package rmqproto.peers;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Transactional messages with the Java client's TransactionMQProducer, on each TOPIC given
 * (one producer group and one consumer group per topic). Five messages per topic, named by
 * their "kind" property: "commit" and "rollback" end at once; "check-commit",
 * "check-rollback" and "check-unknown" answer UNKNOW and are decided when the broker checks
 * back (commit, rollback, UNKNOW every time). A push consumer reads each topic. Heartbeats
 * go every second, so that a restarted broker soon knows the producer group again.
 *
 * Usage: Transactions NAMESRV_ADDR CHECK_MAX TIMEOUT_SECONDS TOPIC...
 * Prints "SEND topic kind status", "CHECK topic kind times" for every check-back,
 * "RECEIVED topic kind TRAN_MSG REAL_TOPIC REAL_QID PGROUP" for every message consumed and
 * "DONE"; exits 0 when each topic saw its checks (CHECK_MAX of check-unknown) and its two
 * committed messages in time.
 */
public final class Transactions {
    static final String[] KINDS = {"commit", "rollback", "check-commit", "check-rollback", "check-unknown"};

    private Transactions() {
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        int checkMax = Integer.parseInt(args[1]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[2]) * 1000;
        Map<String, AtomicInteger> checks = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> received = new ConcurrentHashMap<>();
        List<TransactionMQProducer> producers = new ArrayList<>();
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        for (int t = 3; t < args.length; t++) {
            String topic = args[t];
            DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("TxConsumer-" + topic);
            consumer.setNamesrvAddr(namesrv);
            consumer.setHeartbeatBrokerInterval(1000); // a restarted broker learns the producer soon
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.subscribe(topic, "*");
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                for (MessageExt m : msgs) {
                    String kind = m.getUserProperty("kind");
                    received.computeIfAbsent(topic + " " + kind, k -> new AtomicInteger()).incrementAndGet();
                    System.out.println("RECEIVED " + topic + " " + kind + " " + m.getProperty("TRAN_MSG") + " "
                        + m.getProperty("REAL_TOPIC") + " " + m.getProperty("REAL_QID") + " " + m.getProperty("PGROUP")
                        + " " + new String(m.getBody(), StandardCharsets.UTF_8));
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            consumers.add(consumer);

            TransactionMQProducer producer = new TransactionMQProducer("TxProducer-" + topic);
            producer.setNamesrvAddr(namesrv);
            producer.setHeartbeatBrokerInterval(1000);
            producer.setTransactionListener(new TransactionListener() {
                @Override
                public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                    switch (msg.getUserProperty("kind")) {
                        case "commit":
                            return LocalTransactionState.COMMIT_MESSAGE;
                        case "rollback":
                            return LocalTransactionState.ROLLBACK_MESSAGE;
                        default:
                            return LocalTransactionState.UNKNOW;
                    }
                }

                @Override
                public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                    String kind = msg.getUserProperty("kind");
                    int times = checks.computeIfAbsent(topic + " " + kind, k -> new AtomicInteger()).incrementAndGet();
                    System.out.println("CHECK " + topic + " " + kind + " " + times + " " + msg.getTopic()
                        + " " + msg.getProperty("TRANSACTION_CHECK_TIMES"));
                    switch (kind) {
                        case "check-commit":
                            return LocalTransactionState.COMMIT_MESSAGE;
                        case "check-rollback":
                            return LocalTransactionState.ROLLBACK_MESSAGE;
                        default:
                            return LocalTransactionState.UNKNOW;
                    }
                }
            });
            producer.start();
            producers.add(producer);
            for (String kind : KINDS) {
                Message msg = new Message(topic, "TagTx", "key-" + kind, (kind + " body").getBytes(StandardCharsets.UTF_8));
                msg.putUserProperty("kind", kind);
                TransactionSendResult result = producer.sendMessageInTransaction(msg, null);
                System.out.println("SEND " + topic + " " + kind + " " + result.getSendStatus() + " "
                    + result.getLocalTransactionState());
            }
        }
        boolean complete = false;
        while (!complete && System.currentTimeMillis() < deadline) {
            TimeUnit.MILLISECONDS.sleep(200);
            complete = true;
            for (int t = 3; t < args.length; t++) {
                String topic = args[t];
                complete &= count(checks, topic + " check-commit") >= 1
                    && count(checks, topic + " check-rollback") >= 1
                    && count(checks, topic + " check-unknown") >= checkMax
                    && count(received, topic + " commit") >= 1
                    && count(received, topic + " check-commit") >= 1;
            }
        }
        if (complete) {
            TimeUnit.MILLISECONDS.sleep(3000); // a check or a message too many would come now
        }
        for (DefaultMQPushConsumer consumer : consumers) {
            consumer.shutdown();
        }
        for (TransactionMQProducer producer : producers) {
            producer.shutdown();
        }
        System.out.println("DONE " + complete);
        System.exit(complete ? 0 : 1);
    }

    static int count(Map<String, AtomicInteger> counts, String key) {
        AtomicInteger value = counts.get(key);
        return value == null ? 0 : value.get();
    }
}
