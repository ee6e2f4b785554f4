package rmqproto.bench;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.common.DataVersion;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.protocol.RequestCode;
import org.apache.rocketmq.common.protocol.ResponseCode;
import org.apache.rocketmq.common.protocol.body.RegisterBrokerBody;
import org.apache.rocketmq.common.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.common.protocol.header.namesrv.GetRouteInfoRequestHeader;
import org.apache.rocketmq.common.protocol.header.namesrv.RegisterBrokerRequestHeader;
import org.apache.rocketmq.remoting.netty.NettyDecoder;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * Closed-loop load on a NameServer: CLIENTS connections, each with exactly one request
 * outstanding (the next one is written as soon as the answer arrives). Requests are
 * encoded once by RocketMQ's own {@code RemotingCommand}; answers are decoded by
 * rocketmq-remoting's {@code NettyDecoder}. All connections share one Netty event loop
 * thread, so the generator costs one core at most.
 *
 * Before loading, broker-a of cluster BenchCluster registers TOPICS topics over a connection
 * kept open for the whole run (so its routes stay alive). OPERATION is {@code route}
 * (GET_ROUTEINFO_BY_TOPIC, cycling through those topics) or {@code register}
 * (REGISTER_BROKER of broker-b with the same topics and an unchanged data version, i.e. a
 * broker heartbeat).
 *
 * Usage: NamesrvLoad HOST:PORT OPERATION CLIENTS WARMUP_S MEASURE_S TOPICS [SERVER_PID CLK_TCK]
 * prints one JSON object: requests, seconds, rps, mean_us, p50_us, p99_us, errors, the CPU
 * seconds the server (given SERVER_PID) and this generator used while measuring, and the CPU
 * seconds everything else on the machine used meanwhile (other_cpu_s: a disturbed run shows).
 */
public final class NamesrvLoad {
    private static final String CLUSTER = "BenchCluster";

    private final byte[][] requests;
    private volatile boolean measuring;
    private volatile boolean running = true;
    private long[] latencies = new long[1 << 20];
    private int completed;
    private long errors;

    private NamesrvLoad(byte[][] requests) {
        this.requests = requests;
    }

    public static void main(String[] args) throws Exception {
        String[] hostPort = args[0].split(":");
        String operation = args[1];
        int clients = Integer.parseInt(args[2]);
        double warmup = Double.parseDouble(args[3]);
        double seconds = Double.parseDouble(args[4]);
        int topics = Integer.parseInt(args[5]);
        int serverPid = args.length > 6 ? Integer.parseInt(args[6]) : -1;
        int clockTicks = args.length > 7 ? Integer.parseInt(args[7]) : 100;
        System.setProperty(RemotingCommand.REMOTING_VERSION_KEY, String.valueOf(MQVersion.CURRENT_VERSION));

        byte[][] requests;
        if (operation.equals("route")) {
            requests = new byte[topics][];
            for (int i = 0; i < topics; i++) {
                requests[i] = routeRequest(topicName(i));
            }
        } else if (operation.equals("register")) {
            requests = new byte[][] {registerRequest("broker-b", "127.0.0.1:10921", topics)};
        } else {
            throw new IllegalArgumentException("operation must be route or register: " + operation);
        }

        NamesrvLoad load = new NamesrvLoad(requests);
        EventLoopGroup group = new NioEventLoopGroup(1);
        try {
            String host = hostPort[0];
            int port = Integer.parseInt(hostPort[1]);
            CompletableFuture<RemotingCommand> registered = new CompletableFuture<>();
            Channel keeper = connect(group, host, port, new SimpleChannelInboundHandler<RemotingCommand>() {
                @Override
                protected void channelRead0(ChannelHandlerContext ctx, RemotingCommand response) {
                    registered.complete(response);
                }
            });
            keeper.writeAndFlush(Unpooled.wrappedBuffer(registerRequest("broker-a", "127.0.0.1:10911", topics)));
            RemotingCommand answer = registered.get(30, TimeUnit.SECONDS);
            if (answer.getCode() != ResponseCode.SUCCESS) {
                throw new IllegalStateException("registering broker-a failed: " + answer);
            }

            Channel[] channels = new Channel[clients];
            for (int i = 0; i < clients; i++) {
                channels[i] = connect(group, host, port, load.new Client(i));
            }
            for (Channel channel : channels) {
                channel.pipeline().get(Client.class).sendNext(channel);
            }

            Thread.sleep((long) (warmup * 1000));
            long cpu0 = serverCpuTicks(serverPid);
            long own0 = ownCpuNanos();
            long busy0 = machineBusyTicks();
            long start = System.nanoTime();
            load.measuring = true;
            Thread.sleep((long) (seconds * 1000));
            load.measuring = false;
            long elapsed = System.nanoTime() - start;
            long cpu1 = serverCpuTicks(serverPid);
            long own1 = ownCpuNanos();
            long busy1 = machineBusyTicks();
            load.running = false;
            for (Channel channel : channels) {
                channel.close().sync();
            }
            keeper.close().sync();
            // the loop thread wrote the figures; submitting to it orders those writes before our reads
            group.submit(() -> { }).sync();
            double serverCpu = (cpu1 - cpu0) / (double) clockTicks;
            double ownCpu = (own1 - own0) / 1e9;
            double otherCpu = (busy1 - busy0) / (double) clockTicks - serverCpu - ownCpu;
            System.out.println(load.report(elapsed / 1e9, serverCpu, ownCpu, Math.max(0, otherCpu)));
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    /** One connection: writes the next request when the previous answer arrives. */
    private final class Client extends SimpleChannelInboundHandler<RemotingCommand> {
        private int next;
        private long sentAt;

        Client(int index) {
            next = index;
        }

        void sendNext(Channel channel) {
            byte[] request = requests[next++ % requests.length];
            sentAt = System.nanoTime();
            channel.writeAndFlush(Unpooled.wrappedBuffer(request));
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, RemotingCommand response) {
            long latency = System.nanoTime() - sentAt;
            if (measuring) {
                record(latency, response.getCode() != ResponseCode.SUCCESS);
            }
            if (running) {
                sendNext(ctx.channel());
            }
        }
    }

    private void record(long latency, boolean failed) {
        if (completed == latencies.length) {
            latencies = Arrays.copyOf(latencies, completed * 2);
        }
        latencies[completed++] = latency;
        if (failed) {
            errors++;
        }
    }

    private String report(double seconds, double serverCpu, double generatorCpu, double otherCpu) {
        long[] sorted = Arrays.copyOf(latencies, completed);
        Arrays.sort(sorted);
        double sum = 0;
        for (long l : sorted) {
            sum += l;
        }
        double mean = completed == 0 ? 0 : sum / completed / 1e3;
        return String.format(java.util.Locale.ROOT,
            "{\"requests\":%d,\"seconds\":%.3f,\"rps\":%.1f,\"mean_us\":%.1f,\"p50_us\":%.1f,"
                + "\"p99_us\":%.1f,\"errors\":%d,\"server_cpu_s\":%.3f,\"generator_cpu_s\":%.3f,"
                + "\"other_cpu_s\":%.3f}",
            completed, seconds, completed / seconds, mean, percentile(sorted, 0.50),
            percentile(sorted, 0.99), errors, serverCpu, generatorCpu, otherCpu);
    }

    private static double percentile(long[] sorted, double q) {
        if (sorted.length == 0) {
            return 0;
        }
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1)] / 1e3;
    }

    private static Channel connect(EventLoopGroup group, String host, int port,
        SimpleChannelInboundHandler<RemotingCommand> handler) throws InterruptedException {
        return new Bootstrap().group(group).channel(NioSocketChannel.class)
            .option(ChannelOption.TCP_NODELAY, true)
            .handler(new ChannelInitializer<SocketChannel>() {
                @Override
                protected void initChannel(SocketChannel ch) {
                    ch.pipeline().addLast(new NettyDecoder(), handler);
                }
            })
            .connect(host, port).sync().channel();
    }

    static String topicName(int i) {
        return String.format("BenchTopic_%03d", i);
    }

    private static byte[] routeRequest(String topic) {
        GetRouteInfoRequestHeader header = new GetRouteInfoRequestHeader();
        header.setTopic(topic);
        return frame(RemotingCommand.createRequestCommand(RequestCode.GET_ROUTEINFO_BY_TOPIC, header));
    }

    /** What a 4.9.8 broker's BrokerOuterAPI.registerBrokerAll sends (uncompressed body). */
    private static byte[] registerRequest(String brokerName, String brokerAddr, int topics) {
        ConcurrentMap<String, TopicConfig> table = new ConcurrentHashMap<>();
        for (int i = 0; i < topics; i++) {
            table.put(topicName(i), new TopicConfig(topicName(i), 8, 8, 6));
        }
        TopicConfigSerializeWrapper wrapper = new TopicConfigSerializeWrapper();
        wrapper.setTopicConfigTable(table);
        DataVersion version = new DataVersion();
        version.setTimestamp(1700000000000L);
        wrapper.setDataVersion(version);
        RegisterBrokerBody body = new RegisterBrokerBody();
        body.setTopicConfigSerializeWrapper(wrapper);
        byte[] encoded = body.encode(false);

        RegisterBrokerRequestHeader header = new RegisterBrokerRequestHeader();
        header.setBrokerName(brokerName);
        header.setBrokerAddr(brokerAddr);
        header.setClusterName(CLUSTER);
        header.setHaServerAddr("127.0.0.1:10912");
        header.setBrokerId(0L);
        header.setCompressed(false);
        header.setBodyCrc32(UtilAll.crc32(encoded));
        RemotingCommand request = RemotingCommand.createRequestCommand(RequestCode.REGISTER_BROKER, header);
        request.setBody(encoded);
        return frame(request);
    }

    private static byte[] frame(RemotingCommand command) {
        ByteBuffer encoded = command.encode();
        byte[] bytes = new byte[encoded.remaining()];
        encoded.get(bytes);
        return bytes;
    }

    /** utime + stime of a process in clock ticks (fields 14 and 15 of /proc/PID/stat). */
    private static long serverCpuTicks(int pid) throws Exception {
        if (pid < 0) {
            return 0;
        }
        String stat = new String(Files.readAllBytes(Paths.get("/proc/" + pid + "/stat")));
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
    }

    /** Ticks all CPUs spent neither idle nor waiting for I/O (first line of /proc/stat). */
    private static long machineBusyTicks() throws Exception {
        String[] fields = Files.readAllLines(Paths.get("/proc/stat")).get(0).trim().split("\\s+");
        long busy = 0;
        for (int i = 1; i <= 8 && i < fields.length; i++) {
            if (i != 4 && i != 5) {
                busy += Long.parseLong(fields[i]);
            }
        }
        return busy;
    }

    private static long ownCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
            .getProcessCpuTime();
    }
}
