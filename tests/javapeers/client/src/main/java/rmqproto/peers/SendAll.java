package rmqproto.peers;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

/**
 * Sends COUNT messages each way to TOPIC with DefaultMQProducer: sync, async, oneway, and
 * one batch of COUNT, then tries a few sends the broker must refuse.
 *
 * Usage: SendAll NAMESRV_ADDR TOPIC COUNT
 * Prints one line per acknowledged send:
 *   "&lt;KIND&gt; &lt;status&gt; &lt;msgId&gt; &lt;offsetMsgId&gt; &lt;queueId&gt; &lt;queueOffset&gt;"
 * ("," joins the ids of a batch), "ONEWAY n" after the oneway sends, and for each refused
 * send "REFUSED &lt;case&gt; &lt;response code&gt;". Exits 0 when every send was acknowledged.
 */
public final class SendAll {
    private SendAll() {
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        int count = Integer.parseInt(args[2]);

        DefaultMQProducer producer = new DefaultMQProducer("SendAllGroup");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(10000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.start();
        int failures = 0;

        for (int i = 0; i < count; i++) {
            print("SYNC", producer.send(message(topic, "sync", i)));
        }

        CountDownLatch latch = new CountDownLatch(count);
        int[] asyncFailures = new int[1];
        for (int i = 0; i < count; i++) {
            producer.send(message(topic, "async", i), new SendCallback() {
                @Override
                public void onSuccess(SendResult result) {
                    print("ASYNC", result);
                    latch.countDown();
                }

                @Override
                public void onException(Throwable e) {
                    System.out.println("ASYNC-FAILED " + e);
                    synchronized (asyncFailures) {
                        asyncFailures[0]++;
                    }
                    latch.countDown();
                }
            });
        }
        if (!latch.await(60, TimeUnit.SECONDS)) {
            failures++;
        }
        failures += asyncFailures[0];

        for (int i = 0; i < count; i++) {
            producer.sendOneway(message(topic, "oneway", i));
        }
        System.out.println("ONEWAY " + count);

        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            batch.add(message(topic, "batch", i));
        }
        print("BATCH", producer.send(batch));

        byte[] noise = new byte[4 * 1024 * 1024 + 1];
        new java.util.Random(1).nextBytes(noise); // incompressible: stays above maxMessageSize
        refused(producer, "oversize-body", new Message(topic, "T", noise));
        Message bigProperties = message(topic, "big", 0);
        StringBuilder big = new StringBuilder();
        for (int i = 0; i < 33000; i++) {
            big.append('p');
        }
        bigProperties.putUserProperty("big", big.toString());
        refused(producer, "oversize-properties", bigProperties);

        producer.shutdown();
        System.exit(failures == 0 ? 0 : 1);
    }

    static Message message(String topic, String kind, int i) {
        Message msg = new Message(topic, "Tag" + kind, kind + "-key-" + i,
            (kind + " body " + i + " \u00e9\u4e2d").getBytes(StandardCharsets.UTF_8));
        msg.putUserProperty("seq", Integer.toString(i));
        return msg;
    }

    static void print(String kind, SendResult result) {
        System.out.println(kind + " " + result.getSendStatus() + " " + result.getMsgId() + " "
            + result.getOffsetMsgId() + " " + result.getMessageQueue().getQueueId() + " "
            + result.getQueueOffset());
    }

    /** The broker's answer to a send the client lets through but the broker must refuse. */
    static void refused(DefaultMQProducer producer, String name, Message msg) {
        producer.setMaxMessageSize(64 * 1024 * 1024);
        try {
            SendResult result = producer.send(msg);
            System.out.println("ACCEPTED " + name + " " + result.getSendStatus());
        } catch (MQBrokerException e) {
            System.out.println("REFUSED " + name + " " + e.getResponseCode());
        } catch (Exception e) {
            System.out.println("ERROR " + name + " " + e);
        }
    }
}
