package rmqproto.peers;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Sends the same batches to queue 0 of several brokers, to compare what each stores.
 *
 * Usage: SendBatches NAMESRV_ADDR TOPIC BROKER_NAME...
 * Three batches: 6 messages with tags, keys and user properties (Unicode among them), 3
 * without tags or keys, 4 with WAIT=false. Each batch goes to every broker in turn, as the
 * same Message objects, so each message has the same UNIQ_KEY everywhere. Prints
 * "SENT broker status queueOffset" per send and exits 0 when every send was SEND_OK.
 */
public final class SendBatches {
    private SendBatches() {
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        DefaultMQProducer producer = new DefaultMQProducer("BatchCompareProducer");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(10000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.start();
        List<MessageQueue> queues = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            queues.add(queueZero(producer, topic, args[i]));
        }
        List<List<Message>> batches = new ArrayList<>();
        List<Message> tagged = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            Message m = new Message(topic, "Tag" + (i % 3), "key-" + i + " shared-key",
                                    body(i, 40 + 29 * i));
            m.putUserProperty("seq", Integer.toString(i));
            m.putUserProperty("note", "n\u00e9 " + i + " \u4e2d\u6587 \ud83d\ude00 a=b;c:d");
            tagged.add(m);
        }
        batches.add(tagged);
        List<Message> plain = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            plain.add(new Message(topic, body(10 + i, 300)));
        }
        batches.add(plain);
        List<Message> noWait = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Message m = new Message(topic, "NoWait", "nowait-" + i, body(20 + i, 64));
            m.setWaitStoreMsgOK(false);
            noWait.add(m);
        }
        batches.add(noWait);
        boolean allOk = true;
        for (List<Message> batch : batches) {
            for (MessageQueue queue : queues) {
                SendResult result = producer.send(batch, queue, 10000);
                System.out.println("SENT " + queue.getBrokerName() + " " + result.getSendStatus()
                                   + " " + result.getQueueOffset());
                allOk &= result.getSendStatus().name().equals("SEND_OK");
            }
        }
        producer.shutdown();
        System.exit(allOk ? 0 : 1);
    }

    static MessageQueue queueZero(DefaultMQProducer producer, String topic, String brokerName)
        throws Exception {
        for (MessageQueue queue : producer.fetchPublishMessageQueues(topic)) {
            if (queue.getBrokerName().equals(brokerName) && queue.getQueueId() == 0) {
                return queue;
            }
        }
        throw new IllegalStateException("no queue 0 of " + brokerName + " for " + topic);
    }

    static byte[] body(int i, int length) {
        StringBuilder sb = new StringBuilder("batch body " + i + " \u00e9\u4e2d");
        while (sb.length() < length) {
            sb.append(' ').append(sb.length() % 89);
        }
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }
}
