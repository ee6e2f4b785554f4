package rmqproto.interop;

import com.alibaba.fastjson.JSONObject;
import io.netty.channel.ChannelHandlerContext;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyRemotingClient;
import org.apache.rocketmq.remoting.netty.NettyRemotingServer;
import org.apache.rocketmq.remoting.netty.NettyRequestProcessor;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.remoting.netty.ResponseFuture;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.SerializeType;

/**
 * The real Java remoting stack (rocketmq-remoting 4.9.8) as a peer of rmqproto's remoting layer.
 *
 * <pre>
 *   client   a NettyRemotingClient; reads one JSON command a line on stdin, answers one JSON line:
 *            {"op":"sync"|"async"|"oneway","addr":"host:port","code":N,"serialize":"JSON"|"ROCKETMQ",
 *             "ext":{..},"body":HEX,"timeout":MS}  -> the response (see describe) or {"error":..}
 *            {"op":"many","addr":..,"code":N,"count":N,"timeout":MS}  -> {"ok":N,"failed":N}
 *            it answers server callbacks with code 40: body "java:" + request body
 *   server   a NettyRemotingServer on a free port; prints {"port":N}, serves until stdin closes:
 *            7 echo (ext fields and body back; remark = what Java decoded from the request),
 *            8 oneway sink, 9 how many code-8 requests arrived (body), 10 throws,
 *            30 calls the caller back with code 40 on the same connection and returns its body
 * </pre>
 *
 * Every other code has no processor, so Java answers REQUEST_CODE_NOT_SUPPORTED.
 */
public final class RemotingPeer {
    private static final int ECHO = 7;
    private static final int SINK = 8;
    private static final int SINK_COUNT = 9;
    private static final int FAIL = 10;
    private static final int CALL_BACK = 30;
    private static final int CALLBACK_CODE = 40;

    private RemotingPeer() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        ExecutorService executor = Executors.newFixedThreadPool(4);
        if (args.length == 1 && args[0].equals("client")) {
            runClient(in, out, executor);
        } else if (args.length == 1 && args[0].equals("server")) {
            runServer(in, out, executor);
        } else {
            System.err.println("usage: client | server");
            System.exit(2);
        }
        System.exit(0);
    }

    // ------------------------------------------------------------------ client

    private static void runClient(BufferedReader in, PrintStream out, ExecutorService executor)
        throws Exception {
        NettyRemotingClient client = new NettyRemotingClient(new NettyClientConfig());
        client.registerProcessor(CALLBACK_CODE, processor((ctx, request) -> {
            RemotingCommand response = RemotingCommand.createResponseCommand(0, null);
            response.setBody(concat("java:".getBytes(StandardCharsets.UTF_8), request.getBody()));
            return response;
        }), executor);
        client.start();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.isEmpty()) {
                continue;
            }
            JSONObject answer;
            try {
                answer = clientCommand(client, JSONObject.parseObject(line));
            } catch (Throwable t) {
                answer = new JSONObject();
                answer.put("error", t.toString());
            }
            out.println(answer.toJSONString());
        }
        client.shutdown();
    }

    private static JSONObject clientCommand(NettyRemotingClient client, JSONObject command) throws Exception {
        String op = command.getString("op");
        String addr = command.getString("addr");
        long timeout = command.getLongValue("timeout") > 0 ? command.getLongValue("timeout") : 3000;
        if (op.equals("many")) {
            return many(client, addr, command.getIntValue("code"), command.getIntValue("count"), timeout);
        }
        RemotingCommand request = request(command);
        switch (op) {
            case "sync":
                return describe(request, client.invokeSync(addr, request, timeout));
            case "async": {
                AtomicReference<ResponseFuture> done = new AtomicReference<>();
                CountDownLatch latch = new CountDownLatch(1);
                client.invokeAsync(addr, request, timeout, future -> {
                    done.set(future);
                    latch.countDown();
                });
                if (!latch.await(timeout + 1000, TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("async callback never ran");
                }
                RemotingCommand response = done.get().getResponseCommand();
                if (response == null) {
                    throw new IllegalStateException("async request failed: " + done.get().getCause());
                }
                return describe(request, response);
            }
            case "oneway": {
                client.invokeOneway(addr, request, timeout);
                JSONObject answer = new JSONObject();
                answer.put("sent", true);
                answer.put("requestOpaque", request.getOpaque());
                return answer;
            }
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    /** {@code count} concurrent async requests whose body must come back unchanged. */
    private static JSONObject many(NettyRemotingClient client, String addr, int code, int count, long timeout)
        throws Exception {
        AtomicInteger ok = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        CountDownLatch latch = new CountDownLatch(count);
        for (int i = 0; i < count; i++) {
            RemotingCommand request = RemotingCommand.createRequestCommand(code, null);
            byte[] body = ("m" + i).getBytes(StandardCharsets.UTF_8);
            request.setBody(body);
            if (i % 2 == 1) {
                request.setSerializeTypeCurrentRPC(SerializeType.ROCKETMQ);
            }
            client.invokeAsync(addr, request, timeout, future -> {
                RemotingCommand response = future.getResponseCommand();
                if (response != null && response.getCode() == 0
                    && java.util.Arrays.equals(body, response.getBody())) {
                    ok.incrementAndGet();
                } else {
                    failed.incrementAndGet();
                }
                latch.countDown();
            });
        }
        latch.await(timeout + 1000, TimeUnit.MILLISECONDS);
        JSONObject answer = new JSONObject();
        answer.put("ok", ok.get());
        answer.put("failed", failed.get() + (int) latch.getCount());
        return answer;
    }

    private static RemotingCommand request(JSONObject command) {
        RemotingCommand request = RemotingCommand.createRequestCommand(command.getIntValue("code"), null);
        JSONObject ext = command.getJSONObject("ext");
        if (ext != null) {
            for (Map.Entry<String, Object> e : ext.entrySet()) {
                request.addExtField(e.getKey(), String.valueOf(e.getValue()));
            }
        }
        if (command.containsKey("body")) {
            request.setBody(Vectors.unhex(command.getString("body")));
        }
        if (command.containsKey("serialize")) {
            request.setSerializeTypeCurrentRPC(SerializeType.valueOf(command.getString("serialize")));
        }
        return request;
    }

    /** What the Java client decoded from a response. */
    private static JSONObject describe(RemotingCommand request, RemotingCommand response) {
        JSONObject answer = new JSONObject();
        answer.put("requestOpaque", request.getOpaque());
        answer.put("code", response.getCode());
        answer.put("opaque", response.getOpaque());
        answer.put("flag", response.getFlag());
        answer.put("version", response.getVersion());
        answer.put("language", response.getLanguage().name());
        answer.put("serialize", response.getSerializeTypeCurrentRPC().name());
        answer.put("remark", response.getRemark());
        answer.put("ext", response.getExtFields());
        answer.put("body", response.getBody() == null ? null : Vectors.hex(response.getBody()));
        return answer;
    }

    // ------------------------------------------------------------------ server

    private static void runServer(BufferedReader in, PrintStream out, ExecutorService executor) throws Exception {
        NettyServerConfig config = new NettyServerConfig();
        config.setListenPort(0);
        NettyRemotingServer server = new NettyRemotingServer(config);
        AtomicInteger sunk = new AtomicInteger();
        server.registerProcessor(ECHO, processor((ctx, request) -> {
            RemotingCommand response = RemotingCommand.createResponseCommand(0, seen(request));
            response.setExtFields(request.getExtFields());
            response.setBody(request.getBody());
            return response;
        }), executor);
        server.registerProcessor(SINK, processor((ctx, request) -> {
            sunk.incrementAndGet();
            return null;
        }), executor);
        server.registerProcessor(SINK_COUNT, processor((ctx, request) -> {
            RemotingCommand response = RemotingCommand.createResponseCommand(0, null);
            response.setBody(String.valueOf(sunk.get()).getBytes(StandardCharsets.UTF_8));
            return response;
        }), executor);
        server.registerProcessor(FAIL, processor((ctx, request) -> {
            throw new IllegalStateException("boom");
        }), executor);
        server.registerProcessor(CALL_BACK, processor((ctx, request) -> {
            RemotingCommand callback = RemotingCommand.createRequestCommand(CALLBACK_CODE, null);
            callback.setBody(request.getBody());
            RemotingCommand answer = server.invokeSync(ctx.channel(), callback, 3000);
            RemotingCommand response = RemotingCommand.createResponseCommand(answer.getCode(), answer.getRemark());
            response.setBody(answer.getBody());
            return response;
        }), executor);
        server.start();
        JSONObject ready = new JSONObject();
        ready.put("port", server.localListenPort());
        out.println(ready.toJSONString());
        while (in.readLine() != null) {
            // serve until the driving process closes our stdin
        }
        server.shutdown();
    }

    /** What the Java server decoded from a request, as JSON (the echo's remark). */
    private static String seen(RemotingCommand request) {
        Map<String, Object> seen = new HashMap<>();
        seen.put("opaque", request.getOpaque());
        seen.put("flag", request.getFlag());
        seen.put("version", request.getVersion());
        seen.put("language", request.getLanguage().name());
        seen.put("serialize", request.getSerializeTypeCurrentRPC().name());
        return new JSONObject(seen).toJSONString();
    }

    // ------------------------------------------------------------------ helpers

    private interface Handler {
        RemotingCommand handle(ChannelHandlerContext ctx, RemotingCommand request) throws Exception;
    }

    private static NettyRequestProcessor processor(Handler handler) {
        return new NettyRequestProcessor() {
            @Override
            public RemotingCommand processRequest(ChannelHandlerContext ctx, RemotingCommand request)
                throws Exception {
                return handler.handle(ctx, request);
            }

            @Override
            public boolean rejectRequest() {
                return false;
            }
        };
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] joined = new byte[a.length + (b == null ? 0 : b.length)];
        System.arraycopy(a, 0, joined, 0, a.length);
        if (b != null) {
            System.arraycopy(b, 0, joined, a.length, b.length);
        }
        return joined;
    }
}
