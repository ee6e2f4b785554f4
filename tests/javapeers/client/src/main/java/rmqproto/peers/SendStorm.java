package rmqproto.peers;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * A send storm: THREADS threads send sync messages to TOPIC as fast as the broker answers,
 * for SECONDS, without retries, carrying on through failures (a broker killed mid-stream).
 *
 * Usage: SendStorm NAMESRV_ADDR TOPIC SECONDS THREADS [POLL_MS]
 * POLL_MS is the producer's pollNameServerInterval (default the client's 30 s): how soon it
 * sees a new master of the same broker name (a DLedger group's new leader).
 * Message i of thread t has key "storm-t-i", tag "T(i%3)" and the body stormBody(key, i).
 * Prints "OK msgId offsetMsgId queueId queueOffset key" per SEND_OK, "NOT_OK status key" per
 * other status, "FAILED key exception" per failed send, and "DONE ok failed" at the end.
 */
public final class SendStorm {
    private SendStorm() {
    }

    public static void main(String[] args) throws Exception {
        String topic = args[1];
        long deadline = System.currentTimeMillis() + Long.parseLong(args[2]) * 1000;
        int threads = Integer.parseInt(args[3]);

        DefaultMQProducer producer = new DefaultMQProducer("StormProducer");
        producer.setNamesrvAddr(args[0]);
        producer.setSendMsgTimeout(3000);
        producer.setRetryTimesWhenSendFailed(0);
        if (args.length > 4) {
            producer.setPollNameServerInterval(Integer.parseInt(args[4]));
        }
        producer.start();
        int[] ok = new int[threads];
        int[] failed = new int[threads];
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int thread = t;
            Thread worker = new Thread(() -> {
                for (int i = 0; System.currentTimeMillis() < deadline; i++) {
                    String key = "storm-" + thread + "-" + i;
                    Message m = new Message(topic, "T" + (i % 3), key, stormBody(key, i).getBytes(StandardCharsets.UTF_8));
                    try {
                        SendResult r = producer.send(m);
                        if (r.getSendStatus() == SendStatus.SEND_OK) {
                            ok[thread]++;
                            System.out.println("OK " + r.getMsgId() + " " + r.getOffsetMsgId() + " "
                                + r.getMessageQueue().getQueueId() + " " + r.getQueueOffset() + " " + key);
                        } else {
                            System.out.println("NOT_OK " + r.getSendStatus() + " " + key);
                        }
                    } catch (Exception e) {
                        failed[thread]++;
                        System.out.println("FAILED " + key + " " + e.getClass().getSimpleName());
                        pause();
                    }
                }
            });
            workers.add(worker);
            worker.start();
        }
        for (Thread worker : workers) {
            worker.join();
        }
        producer.shutdown();
        int okTotal = 0;
        int failedTotal = 0;
        for (int t = 0; t < threads; t++) {
            okTotal += ok[t];
            failedTotal += failed[t];
        }
        System.out.println("DONE " + okTotal + " " + failedTotal);
        System.exit(0);
    }

    /** The body of message I with key KEY: the key repeated 1 + I % 40 times. */
    static String stormBody(String key, int i) {
        return (key + " ").repeat(1 + i % 40);
    }

    static void pause() {
        try {
            Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
