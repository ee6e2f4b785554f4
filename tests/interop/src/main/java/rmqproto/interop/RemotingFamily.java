package rmqproto.interop;

import com.alibaba.fastjson.JSONObject;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.protocol.RequestCode;
import org.apache.rocketmq.common.protocol.header.GetAllProducerInfoRequestHeader;
import org.apache.rocketmq.common.protocol.header.SendMessageRequestHeaderV2;
import org.apache.rocketmq.common.protocol.header.SendMessageResponseHeader;
import org.apache.rocketmq.common.protocol.header.UpdateConsumerOffsetRequestHeader;
import org.apache.rocketmq.common.protocol.header.namesrv.GetRouteInfoRequestHeader;
import org.apache.rocketmq.remoting.CommandCustomHeader;
import org.apache.rocketmq.remoting.annotation.CFNotNull;
import org.apache.rocketmq.remoting.protocol.FastCodesHeader;
import org.apache.rocketmq.remoting.protocol.LanguageCode;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RemotingSysResponseCode;
import org.apache.rocketmq.remoting.protocol.SerializeType;

/**
 * Remoting frames ({@code RemotingCommand}) and custom headers.
 *
 * <p>Frames are encoded with {@code fastEncodeHeader} plus the body, exactly as the Netty
 * encoder puts them on the wire, and the recorded fields are what {@code RemotingCommand.decode}
 * reads back from those bytes. Every command gets an explicit version and opaque.
 */
final class RemotingFamily implements Main.Family {
    private static final String HEADER_PACKAGE = "org.apache.rocketmq.common.protocol.header.";

    /** The 4.9.8 header classes declared by rmqproto.codec.headers, by package-relative name. */
    private static final String[] HEADERS = {
        "namesrv.PutKVConfigRequestHeader", "namesrv.GetKVConfigRequestHeader",
        "namesrv.GetKVConfigResponseHeader", "namesrv.DeleteKVConfigRequestHeader",
        "namesrv.GetKVListByNamespaceRequestHeader", "namesrv.RegisterBrokerRequestHeader",
        "namesrv.RegisterBrokerResponseHeader", "namesrv.UnRegisterBrokerRequestHeader",
        "namesrv.QueryDataVersionRequestHeader", "namesrv.QueryDataVersionResponseHeader",
        "namesrv.GetRouteInfoRequestHeader", "namesrv.WipeWritePermOfBrokerRequestHeader",
        "namesrv.WipeWritePermOfBrokerResponseHeader", "namesrv.AddWritePermOfBrokerRequestHeader",
        "namesrv.AddWritePermOfBrokerResponseHeader", "namesrv.DeleteTopicFromNamesrvRequestHeader",
        "namesrv.RegisterOrderTopicRequestHeader", "GetTopicsByClusterRequestHeader",
        "SendMessageRequestHeader", "SendMessageRequestHeaderV2", "SendMessageResponseHeader",
        "ReplyMessageRequestHeader", "PullMessageRequestHeader", "PullMessageResponseHeader",
        "QueryConsumerOffsetRequestHeader", "QueryConsumerOffsetResponseHeader",
        "UpdateConsumerOffsetRequestHeader", "UpdateConsumerOffsetResponseHeader",
        "SearchOffsetRequestHeader", "SearchOffsetResponseHeader", "GetMaxOffsetRequestHeader",
        "GetMaxOffsetResponseHeader", "GetMinOffsetRequestHeader", "GetMinOffsetResponseHeader",
        "GetEarliestMsgStoretimeRequestHeader", "GetEarliestMsgStoretimeResponseHeader",
        "QueryMessageRequestHeader", "QueryMessageResponseHeader", "ViewMessageRequestHeader",
        "ViewMessageResponseHeader", "ConsumerSendMsgBackRequestHeader", "EndTransactionRequestHeader",
        "EndTransactionResponseHeader", "CheckTransactionStateRequestHeader",
        "CheckTransactionStateResponseHeader", "ResumeCheckHalfMessageRequestHeader",
        "CreateTopicRequestHeader", "DeleteTopicRequestHeader", "GetTopicStatsInfoRequestHeader",
        "DeleteSubscriptionGroupRequestHeader", "QueryTopicConsumeByWhoRequestHeader",
        "QueryConsumeTimeSpanRequestHeader", "QueryConsumeQueueRequestHeader",
        "QueryCorrectionOffsetHeader", "CloneGroupOffsetRequestHeader", "ResetOffsetRequestHeader",
        "GetConsumeStatsRequestHeader", "GetConsumeStatsInBrokerHeader",
        "ViewBrokerStatsDataRequestHeader", "UnregisterClientRequestHeader",
        "UnregisterClientResponseHeader", "GetConsumerListByGroupRequestHeader",
        "GetConsumerListByGroupResponseHeader", "NotifyConsumerIdsChangedRequestHeader",
        "GetConsumerConnectionListRequestHeader", "GetProducerConnectionListRequestHeader",
        "GetAllProducerInfoRequestHeader", "GetConsumerRunningInfoRequestHeader",
        "GetConsumerStatusRequestHeader", "ConsumeMessageDirectlyResultRequestHeader",
        "GetAllTopicConfigResponseHeader", "GetBrokerConfigResponseHeader",
        "CreateAccessConfigRequestHeader", "DeleteAccessConfigRequestHeader",
        "UpdateGlobalWhiteAddrsConfigRequestHeader", "GetBrokerAclConfigResponseHeader",
    };

    private static final int VERSION = MQVersion.CURRENT_VERSION;

    @Override
    public void register(Map<String, Main.Decoder> decoders) {
        decoders.put("frame_command", (bytes, request) -> commandFields(decodeFrame(bytes)));
        decoders.put("header_ext_fields", (bytes, request) -> {
            RemotingCommand cmd = decodeFrame(bytes);
            String name = request.containsKey("class") ? request.getString("class") : cmd.getRemark();
            CommandCustomHeader header = cmd.decodeCommandCustomHeader(headerClass(name));
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("extFields", cmd.getExtFields());
            out.put("values", headerValues(header));
            return out;
        });
    }

    @Override
    public void generate(Vectors.Sink sink) throws Exception {
        frames(sink);
        headerSchema(sink);
        headerVectors(sink);
        versions(sink);
    }

    // ------------------------------------------------------------------ frames

    private static void frames(Vectors.Sink sink) throws Exception {
        Vectors.Kind kind = sink.kind("frame_command",
            "RemotingCommand.fastEncodeHeader + body (NettyEncoder); fields = RemotingCommand.decode of the bytes");
        for (SerializeType type : SerializeType.values()) {
            String p = type.name().toLowerCase() + "_";

            GetRouteInfoRequestHeader route = new GetRouteInfoRequestHeader();
            route.setTopic("TopicTest");
            addFrame(kind, p + "request_route", command(RequestCode.GET_ROUTEINFO_BY_TOPIC, route, type, 7));

            addFrame(kind, p + "response_success",
                response(RemotingSysResponseCode.SUCCESS, null, type, 7));

            addFrame(kind, p + "remark_unicode_controls", response(RemotingSysResponseCode.SYSTEM_ERROR,
                "错误: \u0000\u0001\u001f\t\n\r\b\f\"\\/\u007f\u00a0\u2028\u2029 é \uD83D\uDE00 end", type, 8));

            addFrame(kind, p + "remark_c1_controls", response(RemotingSysResponseCode.SYSTEM_ERROR,
                "c1: \u0080\u0085\u009f.", type, 8));

            addFrame(kind, p + "remark_empty", response(RemotingSysResponseCode.SYSTEM_BUSY, "", type, 9));

            RemotingCommand many = command(RequestCode.HEART_BEAT, null, type, 10);
            for (int i = 0; i < 40; i++) {
                many.addExtField((i % 3 == 0 ? "key" : i % 3 == 1 ? "Aa" : "BB") + i + (i % 5 == 0 ? "ü" : ""),
                    "value-" + (i * 7919));
            }
            many.addExtField("empty", "");
            addFrame(kind, p + "ext_many_keys", many);

            SendMessageRequestHeaderV2 send = new SendMessageRequestHeaderV2();
            send.setA("producer-group");
            send.setB("TopicTest");
            send.setC("TBW102");
            send.setD(4);
            send.setE(3);
            send.setF(0);
            send.setG(1700000000123L);
            send.setH(0);
            send.setI("UNIQ_KEY\u0001C0A8000100002A9F0000000000000001\u0002WAIT\u0001true\u0002TAGS\u0001TagA\u0002");
            send.setJ(0);
            send.setL(16);
            send.setBname("broker-a");
            Field n = SendMessageRequestHeaderV2.class.getDeclaredField("n");
            n.setAccessible(true);
            n.set(send, "broker-a");
            RemotingCommand sendCmd = command(RequestCode.SEND_MESSAGE_V2, send, type, 11);
            byte[] body = new byte[256];
            for (int i = 0; i < body.length; i++) {
                body[i] = (byte) i;
            }
            sendCmd.setBody(body);
            addFrame(kind, p + "send_v2_with_body", sendCmd);

            UpdateConsumerOffsetRequestHeader offset = new UpdateConsumerOffsetRequestHeader();
            offset.setConsumerGroup("group-ä");
            offset.setTopic("TopicTest");
            offset.setQueueId(2);
            offset.setCommitOffset(Long.MAX_VALUE);
            RemotingCommand oneway = command(RequestCode.UPDATE_CONSUMER_OFFSET, offset, type, 12);
            oneway.markOnewayRPC();
            addFrame(kind, p + "oneway", oneway);

            addFrame(kind, p + "negative_opaque", response(RemotingSysResponseCode.SUCCESS, null, type, -123456789));
            addFrame(kind, p + "min_opaque", command(RequestCode.GET_BROKER_CLUSTER_INFO, null, type, Integer.MIN_VALUE));

            for (int code : new int[] {32767, 32768, 50001, 65535, 200050, -1000}) {
                addFrame(kind, p + "code_" + (code < 0 ? "minus" + -code : code), command(code, null, type, 13));
            }
            RemotingCommand bigVersion = command(RequestCode.HEART_BEAT, null, type, 14);
            bigVersion.setVersion(40000);
            addFrame(kind, p + "version_40000", bigVersion);

            RemotingCommand cpp = command(RequestCode.HEART_BEAT, null, type, 15);
            cpp.setLanguage(LanguageCode.CPP);
            cpp.setVersion(0);
            cpp.setBody("{\"clientID\":\"x\"}".getBytes("UTF-8"));
            addFrame(kind, p + "language_cpp_version_0", cpp);

            addFrame(kind, p + "no_header_fields",
                command(RequestCode.GET_ALL_PRODUCER_INFO, new GetAllProducerInfoRequestHeader(), type, 16));

            RemotingCommand sendResponse = RemotingCommand.createResponseCommand(SendMessageResponseHeader.class);
            SendMessageResponseHeader sent = (SendMessageResponseHeader) sendResponse.readCustomHeader();
            sendResponse.setCode(RemotingSysResponseCode.SUCCESS);
            sendResponse.setRemark(null);
            sent.setMsgId("C0A8000100002A9F0000000000000000");
            sent.setQueueId(3);
            sent.setQueueOffset(42L);
            sendResponse.addExtField("MSG_REGION", "DefaultRegion");
            sendResponse.addExtField("TRACE_ON", "true");
            prepare(sendResponse, type, 11);
            addFrame(kind, p + "send_response_with_extra", sendResponse);
        }
        kind.close();
    }

    private static RemotingCommand command(int code, CommandCustomHeader header, SerializeType type, int opaque) {
        RemotingCommand cmd = RemotingCommand.createRequestCommand(code, header);
        return prepare(cmd, type, opaque);
    }

    private static RemotingCommand response(int code, String remark, SerializeType type, int opaque) {
        return prepare(RemotingCommand.createResponseCommand(code, remark), type, opaque);
    }

    private static RemotingCommand prepare(RemotingCommand cmd, SerializeType type, int opaque) {
        cmd.setSerializeTypeCurrentRPC(type);
        cmd.setVersion(VERSION);
        cmd.setOpaque(opaque);
        return cmd;
    }

    /** The bytes the Netty encoder writes for {@code cmd}. */
    static byte[] wire(RemotingCommand cmd) {
        ByteBuf out = Unpooled.buffer();
        cmd.fastEncodeHeader(out);
        if (cmd.getBody() != null) {
            out.writeBytes(cmd.getBody());
        }
        byte[] bytes = new byte[out.readableBytes()];
        out.readBytes(bytes);
        return bytes;
    }

    /** Decodes a whole frame (length prefix included) as NettyDecoder does after stripping the prefix. */
    static RemotingCommand decodeFrame(byte[] frame) throws Exception {
        return RemotingCommand.decode(ByteBuffer.wrap(frame, 4, frame.length - 4).slice());
    }

    private static void addFrame(Vectors.Kind kind, String name, RemotingCommand cmd) throws Exception {
        byte[] bytes = wire(cmd);
        kind.add(name, commandFields(decodeFrame(bytes)), bytes);
    }

    static Map<String, Object> commandFields(RemotingCommand cmd) {
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("code", cmd.getCode());
        f.put("language", cmd.getLanguage() == null ? null : cmd.getLanguage().name());
        f.put("version", cmd.getVersion());
        f.put("opaque", cmd.getOpaque());
        f.put("flag", cmd.getFlag());
        f.put("remark", cmd.getRemark());
        f.put("extFields", cmd.getExtFields() == null ? null : new JSONObject(new LinkedHashMap<>(cmd.getExtFields())));
        f.put("serializeType", cmd.getSerializeTypeCurrentRPC().name());
        f.put("body", cmd.getBody() == null ? "" : Vectors.hex(cmd.getBody()));
        return f;
    }

    // ------------------------------------------------------------------ headers

    static Class<? extends CommandCustomHeader> headerClass(String simpleName) throws Exception {
        for (String name : HEADERS) {
            if (name.endsWith(simpleName) && name.substring(name.lastIndexOf('.') + 1).equals(simpleName)) {
                return Class.forName(HEADER_PACKAGE + name).asSubclass(CommandCustomHeader.class);
            }
        }
        throw new IllegalArgumentException("unknown header class " + simpleName);
    }

    /** Fields as makeCustomHeaderToNet sees them: own first, then superclasses, declaration order. */
    private static List<Field> fields(Class<?> cls) {
        List<Field> out = new ArrayList<>();
        for (Class<?> c = cls; c != Object.class; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                f.setAccessible(true);
                out.add(f);
            }
        }
        return out;
    }

    private static Map<String, Object> headerValues(CommandCustomHeader header) throws Exception {
        Map<String, Object> values = new LinkedHashMap<>();
        if (header != null) {
            for (Field f : fields(header.getClass())) {
                if (!Modifier.isStatic(f.getModifiers()) && f.get(header) != null) {
                    values.put(f.getName(), f.get(header));
                }
            }
        }
        return values;
    }

    /** Reflection facts of every header class: what the Python declarations must repeat. */
    private static void headerSchema(Vectors.Sink sink) throws Exception {
        Vectors.Kind kind = sink.kind("header_schema",
            "reflection over the 4.9.8 header classes: fields in getDeclaredFields order, @CFNotNull, initial values");
        for (String name : HEADERS) {
            Class<?> cls = Class.forName(HEADER_PACKAGE + name);
            Object fresh = cls.getDeclaredConstructor().newInstance();
            List<Object> fields = new ArrayList<>();
            for (Field f : fields(cls)) {
                Map<String, Object> d = new LinkedHashMap<>();
                d.put("name", f.getName());
                d.put("type", f.getType().getSimpleName());
                d.put("declaringClass", f.getDeclaringClass().getName());
                d.put("static", Modifier.isStatic(f.getModifiers()));
                d.put("required", f.getAnnotation(CFNotNull.class) != null);
                d.put("initial", Modifier.isStatic(f.getModifiers()) ? null : f.get(fresh));
                fields.add(d);
            }
            Map<String, Object> doc = new LinkedHashMap<>();
            doc.put("javaClass", cls.getName());
            doc.put("fast", FastCodesHeader.class.isAssignableFrom(cls));
            doc.put("fields", fields);
            kind.add(cls.getSimpleName(), doc, new byte[0]);
        }
        kind.close();
    }

    /** A deterministic value of the field's type, valid for the classes that check their fields. */
    private static Object sample(Field f, int salt) {
        String n = f.getName();
        Class<?> t = f.getType();
        if (n.equals("commitOrRollback")) {
            return 8;
        }
        if (n.equals("topicFilterType")) {
            return "SINGLE_TAG";
        }
        int h = Math.abs(n.hashCode() % 1000) + salt;
        if (t == String.class) {
            return n + "-" + salt + (h % 2 == 0 ? "-値\u0001" : "");
        }
        if (t == Integer.class || t == int.class) {
            return h % 3 == 0 ? -h : h;
        }
        if (t == Long.class || t == long.class) {
            return 1700000000000L * (h % 2 == 0 ? 1 : -1) + h;
        }
        if (t == Boolean.class || t == boolean.class) {
            return h % 2 == 0;
        }
        throw new IllegalStateException("no sample for " + t);
    }

    private static void headerVectors(Vectors.Sink sink) throws Exception {
        Vectors.Kind kind = sink.kind("header_ext_fields",
            "createRequestCommand(code, header) / response with writeCustomHeader, fastEncodeHeader; "
                + "values = decodeCommandCustomHeader of the bytes");
        int opaque = 100;
        for (String name : HEADERS) {
            Class<? extends CommandCustomHeader> cls = headerClass(name.substring(name.lastIndexOf('.') + 1));
            boolean response = cls.getSimpleName().endsWith("ResponseHeader");
            for (String variant : new String[] {"full", "required"}) {
                for (SerializeType type : SerializeType.values()) {
                    CommandCustomHeader header = cls.getDeclaredConstructor().newInstance();
                    for (Field f : fields(cls)) {
                        if (Modifier.isStatic(f.getModifiers())) {
                            continue;
                        }
                        boolean required = f.getAnnotation(CFNotNull.class) != null;
                        if (variant.equals("full") || required) {
                            f.set(header, sample(f, variant.equals("full") ? 1 : 2));
                        }
                    }
                    RemotingCommand cmd;
                    if (response) {
                        cmd = RemotingCommand.createResponseCommand(RemotingSysResponseCode.SUCCESS, null);
                        cmd.writeCustomHeader(header);
                    } else {
                        cmd = RemotingCommand.createRequestCommand(1000, header);
                    }
                    prepare(cmd, type, opaque++);
                    byte[] bytes = wire(cmd);
                    RemotingCommand decoded = decodeFrame(bytes);
                    Map<String, Object> fields = new LinkedHashMap<>();
                    fields.put("class", cls.getSimpleName());
                    fields.put("command", commandFields(decoded));
                    fields.put("values", headerValues(decoded.decodeCommandCustomHeader(cls)));
                    kind.add(cls.getSimpleName() + "_" + variant + "_" + type.name().toLowerCase(), fields, bytes);
                }
            }
        }
        kind.close();
    }

    private static Map<String, Object> intConstants(Class<?> cls) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Field f : cls.getFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class) {
                out.put(f.getName(), f.getInt(null));
            }
        }
        return out;
    }

    /** The code tables: RequestCode, ResponseCode (+ RemotingSysResponseCode), LanguageCode, MQVersion. */
    private static void versions(Vectors.Sink sink) throws Exception {
        Vectors.Kind kind = sink.kind("frame_codes",
            "public int constants of RequestCode/ResponseCode, LanguageCode and MQVersion.Version values of 4.9.8");
        List<String> names = new ArrayList<>();
        for (MQVersion.Version v : MQVersion.Version.values()) {
            names.add(v.name());
        }
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("currentVersion", MQVersion.CURRENT_VERSION);
        fields.put("names", names);
        Map<String, Object> codes = new HashMap<>();
        for (LanguageCode code : LanguageCode.values()) {
            codes.put(code.name(), (int) code.getCode());
        }
        fields.put("languageCodes", codes);
        fields.put("requestCodes", intConstants(RequestCode.class));
        Map<String, Object> responses = intConstants(org.apache.rocketmq.common.protocol.ResponseCode.class);
        responses.putAll(intConstants(RemotingSysResponseCode.class));
        fields.put("responseCodes", responses);
        kind.add("codes", fields, new byte[0]);
        kind.close();
    }
}
