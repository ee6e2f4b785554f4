package org.apache.rocketmq.store;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.protocol.RequestCode;
import org.apache.rocketmq.common.protocol.header.SendMessageRequestHeaderV2;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * Single-threaded timed loops over the codec operations rmqproto benchmarks, done with the
 * RocketMQ 4.9.8 classes. It lives in the store's package only to reach the broker's own
 * record encoder ({@code CommitLog.MessageExtEncoder}), whose constructor is package-private.
 *
 * Usage: CodecBench SECONDS_PER_OP BODY_SIZE; prints one JSON object of operations per second.
 * CodecBench inputs BODY_SIZE prints the inputs instead, as hex: the request frame (without
 * its length prefix), the record the broker's encoder writes and the stored record decoded.
 */
public final class CodecBench {
    private static volatile Object sink;

    private CodecBench() {
    }

    interface Op {
        void run() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        int bodySize = Integer.parseInt(args[1]);
        System.setProperty(RemotingCommand.REMOTING_VERSION_KEY, "409");

        byte[] frame = sendFrame(bodySize);
        MessageExtBrokerInner inner = message(bodySize);
        CommitLog.MessageExtEncoder encoder = new CommitLog.MessageExtEncoder(4 * 1024 * 1024);
        byte[] record = MessageDecoder.encode(inner, false);
        ByteBuffer unit = ByteBuffer.allocate(20);
        if (args[0].equals("inputs")) {
            inner.setBodyCRC(UtilAll.crc32(inner.getBody()));
            encoder.encode(inner);
            ByteBuffer encoded = encoder.getEncoderBuffer();
            byte[] written = new byte[encoded.remaining()];
            encoded.get(written);
            System.out.println("{\"frame\":\"" + UtilAll.bytes2string(frame)
                + "\",\"encoded_record\":\"" + UtilAll.bytes2string(written)
                + "\",\"stored_record\":\"" + UtilAll.bytes2string(record) + "\"}");
            return;
        }
        double seconds = Double.parseDouble(args[0]);

        Map<String, Op> ops = new LinkedHashMap<>();
        ops.put("frame_decode", () -> sink = RemotingCommand.decode(ByteBuffer.wrap(frame)));
        ops.put("frame_decode_header", () -> {
            RemotingCommand cmd = RemotingCommand.decode(ByteBuffer.wrap(frame));
            sink = cmd.decodeCommandCustomHeader(SendMessageRequestHeaderV2.class);
        });
        ops.put("record_encode", () -> {
            inner.setBodyCRC(UtilAll.crc32(inner.getBody()));
            sink = encoder.encode(inner);
        });
        ops.put("record_decode", () -> sink = MessageDecoder.decode(ByteBuffer.wrap(record), true, false));
        ops.put("cq_unit_encode", () -> {
            unit.clear();
            unit.putLong(123456789L).putInt(1100).putLong(987654321L);
            sink = unit;
        });
        ops.put("cq_unit_decode", () -> {
            unit.rewind();
            long offset = unit.getLong();
            int size = unit.getInt();
            long tags = unit.getLong();
            sink = offset + size + tags;
        });

        StringBuilder out = new StringBuilder("{");
        for (Map.Entry<String, Op> e : ops.entrySet()) {
            measure(e.getValue(), 0.5);  // JIT warm-up
            if (out.length() > 1) {
                out.append(',');
            }
            out.append('"').append(e.getKey()).append("\":").append(measure(e.getValue(), seconds));
        }
        System.out.println(out.append('}'));
    }

    private static double measure(Op op, double seconds) throws Exception {
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        long start = System.nanoTime();
        long count = 0;
        while (true) {
            for (int i = 0; i < 1000; i++) {
                op.run();
            }
            count += 1000;
            long now = System.nanoTime();
            if (now >= deadline) {
                return count / ((now - start) / 1e9);
            }
        }
    }

    private static byte[] sendFrame(int bodySize) {
        SendMessageRequestHeaderV2 h = new SendMessageRequestHeaderV2();
        h.setA("benchmark_producer_group");
        h.setB("BenchmarkTopic");
        h.setC("TBW102");
        h.setD(4);
        h.setE(3);
        h.setF(0);
        h.setG(1700000000000L);
        h.setH(0);
        h.setI(properties());
        h.setJ(0);
        h.setK(false);
        h.setM(false);
        RemotingCommand cmd = RemotingCommand.createRequestCommand(RequestCode.SEND_MESSAGE_V2, h);
        cmd.setBody(new byte[bodySize]);
        ByteBuffer encoded = cmd.encode();
        byte[] all = new byte[encoded.remaining()];
        encoded.get(all);
        byte[] frame = new byte[all.length - 4];
        System.arraycopy(all, 4, frame, 0, frame.length);
        return frame;
    }

    static String properties() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put(MessageConst.PROPERTY_KEYS, "order-42");
        p.put(MessageConst.PROPERTY_TAGS, "TagA");
        p.put(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "7F00000100002A9F0000000000000001");
        p.put(MessageConst.PROPERTY_WAIT_STORE_MSG_OK, "true");
        return MessageDecoder.messageProperties2String(p);
    }

    /** The benchmark message, with both the properties string (broker encoder) and map (MessageDecoder). */
    private static MessageExtBrokerInner message(int bodySize) {
        MessageExtBrokerInner m = new MessageExtBrokerInner();
        m.setTopic("BenchmarkTopic");
        m.setBody(new byte[bodySize]);
        m.setQueueId(3);
        m.setBornTimestamp(1700000000000L);
        m.setStoreTimestamp(1700000000001L);
        m.setBornHost(new InetSocketAddress("127.0.0.1", 50000));
        m.setStoreHost(new InetSocketAddress("127.0.0.1", 10911));
        m.setPropertiesString(properties());
        MessageAccessor.setProperties(m, MessageDecoder.string2messageProperties(properties()));
        return m;
    }
}
