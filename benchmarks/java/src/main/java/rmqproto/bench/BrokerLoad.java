package rmqproto.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.LongStream;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Load on a broker through the real RocketMQ 4.9.8 Java client, the way the benchmark
 * {@code Producer} / {@code Consumer} of rocketmq-example load it.
 *
 * <p>{@code send}: one {@code DefaultMQProducer}, THREADS threads each sending synchronously
 * in a closed loop (the next send starts when the previous one returned), every message a new
 * {@code Message(topic, body)} of BODY_SIZE bytes; with BATCH > 1 each send is a batch of
 * BATCH such messages ({@code send(Collection)}, SEND_BATCH_MESSAGE). The client does not
 * retry ({@code retryTimesWhenSendFailed = 0}) and never compresses, so every send is one
 * request. After WARMUP_S seconds it prints {@code measuring}, measures for MEASURE_S
 * seconds, prints {@code measured}, then one JSON line: sends (requests), messages, seconds,
 * rps, tps (messages/s), mean_us, p99_us, max_us (latency of one send call), errors.
 *
 * <p>{@code consume}: a {@code DefaultMQPushConsumer} of a new group reads TOPIC from its
 * first offset with a listener that only counts; it prints {@code measuring} at the first
 * message and {@code measured} once EXPECTED messages arrived (or TIMEOUT_S passed), then the
 * JSON line: messages, seconds (first to last message), tps, errors (0).
 *
 * <p>{@code async}: as {@code send} with single messages, but one thread keeps THREADS
 * asynchronous sends ({@code send(Message, SendCallback)}, {@code retryTimesWhenSendAsyncFailed
 * = 0}) in flight, starting the next as soon as a callback returned one; the latency is from
 * the call to its callback.
 *
 * <p>{@code litepull}: as {@code consume} with a {@code DefaultLitePullConsumer} (subscribed,
 * its defaults), {@code poll()} called in a loop.
 *
 * <p>Usage: BrokerLoad NAMESRV send|async TOPIC THREADS BODY_SIZE BATCH WARMUP_S MEASURE_S
 * <br>BrokerLoad NAMESRV consume|litepull TOPIC EXPECTED TIMEOUT_S
 */
public final class BrokerLoad {
    private volatile boolean measuring;
    private volatile boolean running = true;

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String mode = args[1];
        String topic = args[2];
        String report;
        if (mode.equals("send") || mode.equals("async")) {
            report = new BrokerLoad().send(namesrv, topic, mode.equals("async"), Integer.parseInt(args[3]),
                Integer.parseInt(args[4]), Integer.parseInt(args[5]), Double.parseDouble(args[6]),
                Double.parseDouble(args[7]));
        } else if (mode.equals("consume")) {
            report = consume(namesrv, topic, Long.parseLong(args[3]), Double.parseDouble(args[4]));
        } else if (mode.equals("litepull")) {
            report = litePull(namesrv, topic, Long.parseLong(args[3]), Double.parseDouble(args[4]));
        } else {
            throw new IllegalArgumentException("mode must be send, async, consume or litepull: " + mode);
        }
        System.out.println(report);
        System.exit(0);  // the client's non-daemon threads must not keep the process alive
    }

    /** A sending thread and its figures, merged when the run is over. */
    private abstract class Meter extends Thread {
        final DefaultMQProducer producer;
        final String topic;
        final byte[] body;
        private final LongStream.Builder latencies = LongStream.builder();
        private long errors;

        Meter(DefaultMQProducer producer, String topic, byte[] body) {
            this.producer = producer;
            this.topic = topic;
            this.body = body;
        }

        /** A send that started at {@code start} (nanoTime) ended now. */
        synchronized void record(long start, boolean failed) {
            long latency = System.nanoTime() - start;
            if (measuring) {
                latencies.add(latency);
                errors += failed ? 1 : 0;
            }
        }
    }

    /** Sends synchronously in a closed loop. */
    private final class Sender extends Meter {
        private final int batch;

        Sender(DefaultMQProducer producer, String topic, byte[] body, int batch) {
            super(producer, topic, body);
            this.batch = batch;
        }

        @Override
        public void run() {
            while (running) {
                boolean failed;
                long start = System.nanoTime();
                try {
                    SendResult result;
                    if (batch > 1) {
                        List<Message> messages = new ArrayList<>(batch);
                        for (int i = 0; i < batch; i++) {
                            messages.add(new Message(topic, body));
                        }
                        result = producer.send(messages);
                    } else {
                        result = producer.send(new Message(topic, body));
                    }
                    failed = result.getSendStatus() != SendStatus.SEND_OK;
                } catch (Exception e) {
                    failed = true;
                }
                record(start, failed);
            }
        }
    }

    /** Keeps PERMITS asynchronous sends in flight; their callbacks record the figures. */
    private final class AsyncSender extends Meter {
        private final Semaphore inflight;
        private final int permits;

        AsyncSender(DefaultMQProducer producer, String topic, byte[] body, int permits) {
            super(producer, topic, body);
            this.permits = permits;
            this.inflight = new Semaphore(permits);
        }

        @Override
        public void run() {
            try {
                while (running) {
                    inflight.acquire();
                    long start = System.nanoTime();
                    try {
                        producer.send(new Message(topic, body), new Callback(start));
                    } catch (Exception e) {
                        done(start, true);
                    }
                }
                inflight.tryAcquire(permits, 10, TimeUnit.SECONDS);  // the last callbacks
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        private void done(long start, boolean failed) {
            record(start, failed);
            inflight.release();
        }

        /** One send's callback: when it started. */
        private final class Callback implements SendCallback {
            private final long start;

            Callback(long start) {
                this.start = start;
            }

            @Override
            public void onSuccess(SendResult result) {
                done(start, result.getSendStatus() != SendStatus.SEND_OK);
            }

            @Override
            public void onException(Throwable e) {
                done(start, true);
            }
        }
    }

    private String send(String namesrv, String topic, boolean async, int threads, int bodySize, int batch,
        double warmup, double seconds) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("bench_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("bench-" + ProcessHandle.current().pid());
        producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        producer.setRetryTimesWhenSendFailed(0);
        producer.setRetryTimesWhenSendAsyncFailed(0);
        producer.start();
        byte[] body = new byte[bodySize];
        Arrays.fill(body, (byte) 'x');
        Meter[] senders = new Meter[async ? 1 : threads];
        for (int i = 0; i < senders.length; i++) {
            senders[i] = async ? new AsyncSender(producer, topic, body, threads)
                : new Sender(producer, topic, body, batch);
            senders[i].start();
        }
        Thread.sleep((long) (warmup * 1000));
        System.out.println("measuring");
        System.out.flush();
        long start = System.nanoTime();
        measuring = true;
        Thread.sleep((long) (seconds * 1000));
        measuring = false;
        long elapsed = System.nanoTime() - start;
        System.out.println("measured");
        System.out.flush();
        running = false;
        for (Meter sender : senders) {
            sender.join(10_000);
        }
        producer.shutdown();

        long[] all = Arrays.stream(senders).flatMapToLong(s -> s.latencies.build()).sorted().toArray();
        long errors = Arrays.stream(senders).mapToLong(s -> s.errors).sum();
        int sends = all.length;
        double sum = LongStream.of(all).sum();
        double secs = elapsed / 1e9;
        return String.format(Locale.ROOT,
            "{\"sends\":%d,\"messages\":%d,\"seconds\":%.3f,\"rps\":%.1f,\"tps\":%.1f,\"mean_us\":%.1f,"
                + "\"p99_us\":%.1f,\"max_us\":%.1f,\"errors\":%d}",
            sends, (long) sends * batch, secs, sends / secs, (long) sends * batch / secs,
            sends == 0 ? 0 : sum / sends / 1e3, percentile(all, 0.99),
            sends == 0 ? 0 : all[sends - 1] / 1e3, errors);
    }

    private static String consume(String namesrv, String topic, long expected, double timeout) throws Exception {
        AtomicLong received = new AtomicLong();
        AtomicLong first = new AtomicLong();
        AtomicLong last = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("bench_consumer_" + System.nanoTime());
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("bench-" + ProcessHandle.current().pid());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            long now = System.nanoTime();
            if (first.compareAndSet(0, now)) {
                System.out.println("measuring");
                System.out.flush();
            }
            long count = received.addAndGet(messages.size());
            last.accumulateAndGet(now, Math::max);
            if (count >= expected) {
                done.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        done.await((long) (timeout * 1000), TimeUnit.MILLISECONDS);
        System.out.println("measured");
        System.out.flush();
        consumer.shutdown();
        return consumed(received.get(), first.get(), last.get());
    }

    private static String litePull(String namesrv, String topic, long expected, double timeout) throws Exception {
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer("bench_consumer_" + System.nanoTime());
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("bench-" + ProcessHandle.current().pid());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.start();
        long deadline = System.nanoTime() + (long) (timeout * 1e9);
        long count = 0;
        long first = 0;
        long last = 0;
        while (count < expected && System.nanoTime() < deadline) {
            List<MessageExt> messages = consumer.poll(1000);
            if (messages.isEmpty()) {
                continue;
            }
            last = System.nanoTime();
            if (first == 0) {
                first = last;
                System.out.println("measuring");
                System.out.flush();
            }
            count += messages.size();
        }
        System.out.println("measured");
        System.out.flush();
        consumer.shutdown();
        return consumed(count, first, last);
    }

    /** The JSON line of a consume: COUNT messages from the first (nanoTime) to the last. */
    private static String consumed(long count, long first, long last) {
        double secs = Math.max(1e-9, (last - first) / 1e9);
        return String.format(Locale.ROOT, "{\"messages\":%d,\"seconds\":%.3f,\"rps\":%.1f,\"tps\":%.1f,\"errors\":0}",
            count, secs, count / secs, count / secs);
    }

    private static double percentile(long[] sorted, double q) {
        if (sorted.length == 0) {
            return 0;
        }
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1)] / 1e3;
    }
}
