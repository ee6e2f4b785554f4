package rmqproto.bench;

import io.openmessaging.storage.dledger.client.DLedgerClient;
import io.openmessaging.storage.dledger.protocol.AppendEntryResponse;
import io.openmessaging.storage.dledger.protocol.DLedgerResponseCode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Closed-loop appends to a DLedger group with DLedger 0.3.1.2's own client: CLIENTS threads,
 * each with its own {@code DLedgerClient} and one append outstanding.
 *
 * Usage: DLedgerLoad GROUP PEERS BODY_BYTES CLIENTS WARMUP_S MEASURE_S
 * prints one JSON object: appends, seconds, aps, mean_us, p50_us, p99_us, errors (answers
 * other than SUCCESS while measuring).
 */
public final class DLedgerLoad {
    private static volatile boolean measuring;
    private static volatile boolean running = true;

    private DLedgerLoad() {
    }

    public static void main(String[] args) throws Exception {
        String group = args[0];
        String peers = args[1];
        byte[] body = new byte[Integer.parseInt(args[2])];
        int clients = Integer.parseInt(args[3]);
        long warmup = Long.parseLong(args[4]) * 1000;
        long measure = Long.parseLong(args[5]) * 1000;
        AtomicLong errors = new AtomicLong();
        List<long[]> samples = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        int[] counts = new int[clients];
        for (int c = 0; c < clients; c++) {
            long[] latencies = new long[1 << 17];  // 1 MiB a client: 32 fit a small heap
            samples.add(latencies);
            final int me = c;
            DLedgerClient client = new DLedgerClient(group, peers);
            client.startup();
            Thread thread = new Thread(() -> {
                while (running) {
                    long start = System.nanoTime();
                    AppendEntryResponse response = client.append(body);
                    long took = System.nanoTime() - start;
                    if (!measuring) {
                        continue;
                    }
                    if (response.getCode() != DLedgerResponseCode.SUCCESS.getCode()) {
                        errors.incrementAndGet();
                    } else if (counts[me] < latencies.length) {
                        latencies[counts[me]++] = took;
                    }
                }
                client.shutdown();
            });
            threads.add(thread);
            thread.start();
        }
        Thread.sleep(warmup);
        measuring = true;
        long begin = System.nanoTime();
        Thread.sleep(measure);
        measuring = false;
        double seconds = (System.nanoTime() - begin) / 1e9;
        running = false;  // appends still outstanding are not waited for
        int total = Arrays.stream(counts).sum();
        long[] all = new long[total];
        int at = 0;
        for (int c = 0; c < clients; c++) {
            System.arraycopy(samples.get(c), 0, all, at, counts[c]);
            at += counts[c];
        }
        Arrays.sort(all);
        double mean = total == 0 ? 0 : Arrays.stream(all).average().orElse(0) / 1000.0;
        long p50 = total == 0 ? 0 : all[total / 2] / 1000;
        long p99 = total == 0 ? 0 : all[Math.min(total - 1, (int) (total * 0.99))] / 1000;
        System.out.printf("{\"appends\": %d, \"seconds\": %.3f, \"aps\": %.1f, \"mean_us\": %.1f, "
            + "\"p50_us\": %d, \"p99_us\": %d, \"errors\": %d}%n", total, seconds, total / seconds,
            mean, p50, p99, errors.get());
        System.exit(0);
    }
}
