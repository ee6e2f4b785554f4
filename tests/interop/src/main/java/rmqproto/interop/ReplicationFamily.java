package rmqproto.interop;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import io.openmessaging.storage.dledger.entry.DLedgerEntry;
import io.openmessaging.storage.dledger.entry.DLedgerEntryCoder;
import io.openmessaging.storage.dledger.protocol.AppendEntryRequest;
import io.openmessaging.storage.dledger.protocol.AppendEntryResponse;
import io.openmessaging.storage.dledger.protocol.BatchAppendEntryRequest;
import io.openmessaging.storage.dledger.protocol.DLedgerResponseCode;
import io.openmessaging.storage.dledger.protocol.GetEntriesRequest;
import io.openmessaging.storage.dledger.protocol.GetEntriesResponse;
import io.openmessaging.storage.dledger.protocol.HeartBeatRequest;
import io.openmessaging.storage.dledger.protocol.HeartBeatResponse;
import io.openmessaging.storage.dledger.protocol.LeadershipTransferRequest;
import io.openmessaging.storage.dledger.protocol.LeadershipTransferResponse;
import io.openmessaging.storage.dledger.protocol.MetadataRequest;
import io.openmessaging.storage.dledger.protocol.MetadataResponse;
import io.openmessaging.storage.dledger.protocol.PullEntriesRequest;
import io.openmessaging.storage.dledger.protocol.PullEntriesResponse;
import io.openmessaging.storage.dledger.protocol.PushEntryRequest;
import io.openmessaging.storage.dledger.protocol.PushEntryResponse;
import io.openmessaging.storage.dledger.protocol.RequestOrResponse;
import io.openmessaging.storage.dledger.protocol.VoteRequest;
import io.openmessaging.storage.dledger.protocol.VoteResponse;
import io.openmessaging.storage.dledger.store.file.MmapFileList;
import io.openmessaging.storage.dledger.utils.DLedgerUtils;
import io.openmessaging.storage.dledger.utils.IOUtils;
import java.beans.Introspector;
import java.beans.PropertyDescriptor;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * Vectors and decoders of the replication formats: the classic and auto-switch HA stream
 * headers, the DLedger store formats and the DLedger RPC bodies.
 *
 * <p>No RocketMQ class encodes the HA headers on its own: HAConnection, HAService.HAClient,
 * AutoSwitchHAConnection and AutoSwitchHAClient fill a ByteBuffer inline. The HA vectors are
 * therefore written with ByteBuffer in the same order and widths as those classes. DLedger
 * formats use the real classes: DLedgerEntryCoder, MmapFileList (blank), DLedgerUtils
 * (file names), IOUtils (property files) and fastjson's JSON.toJSONBytes / JSON.parseObject
 * exactly as DLedgerRpcNettyService calls them.
 */
final class ReplicationFamily implements Main.Family {
    private static final String STORE = "rocketmq-store 4.9.8 ";
    private static final String STORE5 = "rocketmq-store 5.x ";
    private static final String DLEDGER = "dledger 0.3.1.2 ";

    /** RPC vector kinds and the DLedger classes they hold. */
    private static final Map<String, Class<?>> RPC = new LinkedHashMap<>();

    static {
        RPC.put("dledger_rpc_vote_request", VoteRequest.class);
        RPC.put("dledger_rpc_vote_response", VoteResponse.class);
        RPC.put("dledger_rpc_heartbeat_request", HeartBeatRequest.class);
        RPC.put("dledger_rpc_heartbeat_response", HeartBeatResponse.class);
        RPC.put("dledger_rpc_push_request", PushEntryRequest.class);
        RPC.put("dledger_rpc_push_response", PushEntryResponse.class);
        RPC.put("dledger_rpc_append_request", AppendEntryRequest.class);
        RPC.put("dledger_rpc_batch_append_request", BatchAppendEntryRequest.class);
        RPC.put("dledger_rpc_append_response", AppendEntryResponse.class);
        RPC.put("dledger_rpc_get_request", GetEntriesRequest.class);
        RPC.put("dledger_rpc_get_response", GetEntriesResponse.class);
        RPC.put("dledger_rpc_metadata_request", MetadataRequest.class);
        RPC.put("dledger_rpc_metadata_response", MetadataResponse.class);
        RPC.put("dledger_rpc_pull_request", PullEntriesRequest.class);
        RPC.put("dledger_rpc_pull_response", PullEntriesResponse.class);
        RPC.put("dledger_rpc_leadership_transfer_request", LeadershipTransferRequest.class);
        RPC.put("dledger_rpc_leadership_transfer_response", LeadershipTransferResponse.class);
    }

    @Override
    public void register(Map<String, Main.Decoder> decoders) {
        decoders.put("ha_slave_report", (b, r) -> fields("maxOffset", exact(b, 8).getLong()));
        decoders.put("ha_transfer", (b, r) -> {
            ByteBuffer buf = ByteBuffer.wrap(b);
            long offset = buf.getLong();
            int size = buf.getInt();
            return fields("offset", offset, "bodySize", size, "body", Vectors.hex(rest(buf, size)));
        });
        decoders.put("ha_autoswitch_slave_handshake", (b, r) -> {
            ByteBuffer buf = exact(b, 16);
            return fields("state", buf.getInt(), "isSyncFromLastFile", buf.getShort(),
                "isAsyncLearner", buf.getShort(), "brokerId", buf.getLong());
        });
        decoders.put("ha_autoswitch_slave_report", (b, r) -> {
            ByteBuffer buf = exact(b, 12);
            return fields("state", buf.getInt(), "maxOffset", buf.getLong());
        });
        decoders.put("ha_autoswitch_master_handshake", (b, r) -> {
            ByteBuffer buf = ByteBuffer.wrap(b);
            Map<String, Object> f = fields("state", buf.getInt(), "bodySize", buf.getInt(),
                "maxOffset", buf.getLong(), "lastEpoch", buf.getInt());
            int size = (Integer) f.get("bodySize");
            if (size % 12 != 0 || buf.remaining() != size) {
                throw new IllegalArgumentException("bad epoch body size " + size);
            }
            List<Object> epochs = new ArrayList<>();
            while (buf.hasRemaining()) {
                epochs.add(fields("epoch", buf.getInt(), "startOffset", buf.getLong()));
            }
            f.put("epochs", epochs);
            return f;
        });
        decoders.put("ha_autoswitch_master_transfer", (b, r) -> {
            ByteBuffer buf = ByteBuffer.wrap(b);
            Map<String, Object> f = fields("state", buf.getInt(), "bodySize", buf.getInt(),
                "offset", buf.getLong(), "epoch", buf.getInt(), "epochStartOffset", buf.getLong(),
                "confirmOffset", buf.getLong());
            f.put("body", Vectors.hex(rest(buf, (Integer) f.get("bodySize"))));
            return f;
        });

        decoders.put("dledger_entry", (b, r) -> describe(DLedgerEntryCoder.decode(ByteBuffer.wrap(b))));
        decoders.put("dledger_index", (b, r) -> {
            ByteBuffer buf = exact(b, 32);  // read as DLedgerMmapFileStore.recover does
            return fields("magic", buf.getInt(), "pos", buf.getLong(), "size", buf.getInt(),
                "index", buf.getLong(), "term", buf.getLong());
        });
        decoders.put("dledger_blank", (b, r) -> {
            ByteBuffer buf = ByteBuffer.wrap(b);
            return fields("magic", buf.getInt(), "length", buf.getInt());
        });
        decoders.put("dledger_file_name", (b, r) -> fields("offset",
            Long.parseLong(new String(b, StandardCharsets.UTF_8))));
        decoders.put("dledger_checkpoint", (b, r) -> {
            // as DLedgerMmapFileStore.loadCheckPoint and recover read it
            Properties p = IOUtils.string2Properties(new String(b));
            String committed = p.containsKey("committedIndex")
                ? String.valueOf(p.get("committedIndex")).trim() : "";
            return fields("endIndex", p.containsKey("endIndex") ? Long.valueOf(p.getProperty("endIndex")) : null,
                "committedIndex", committed.isEmpty() ? null : Long.valueOf(committed));
        });
        decoders.put("dledger_currterm", (b, r) -> {
            // as MemberState.loadTerm reads it
            Properties p = IOUtils.string2Properties(new String(b));
            long term = p.containsKey("currTerm") ? Long.valueOf(String.valueOf(p.get("currTerm"))) : 0;
            String vote = p.containsKey("voteLeader") ? String.valueOf(p.get("voteLeader")) : null;
            return fields("currTerm", term, "voteLeader", vote == null || vote.isEmpty() ? null : vote);
        });

        for (Map.Entry<String, Class<?>> e : RPC.entrySet()) {
            Class<?> type = e.getValue();
            decoders.put(e.getKey(), (b, r) -> describe(JSON.parseObject(b, type)));
        }
    }

    @Override
    public void generate(Vectors.Sink sink) throws Exception {
        generateHa(sink);
        generateAutoSwitch(sink);
        generateStore(sink);
        generateRpc(sink);
    }

    // ------------------------------------------------------------ classic HA

    private static void generateHa(Vectors.Sink sink) throws Exception {
        try (Vectors.Kind k = sink.kind("ha_slave_report", STORE + "HAService.HAClient#reportSlaveMaxOffset (ByteBuffer.putLong)")) {
            for (long offset : new long[] {0L, 1L, 1073741824L, 123456789012345L, Long.MAX_VALUE}) {
                ByteBuffer buf = ByteBuffer.allocate(8);
                buf.putLong(offset);
                k.add("offset_" + offset, fields("maxOffset", offset), buf.array());
            }
        }
        try (Vectors.Kind k = sink.kind("ha_transfer", STORE + "HAConnection.WriteSocketService (header putLong+putInt, then CommitLog bytes)")) {
            addTransfer(k, "heartbeat", 1073741824L, new byte[0]);
            addTransfer(k, "small", 0L, new byte[] {1, 2, 3, (byte) 0xff});
            addTransfer(k, "one_kib", 4096L, pattern(1024, 7));
            addTransfer(k, "large_offset", 0x7fffffff00000000L, pattern(33, 3));
        }
    }

    private static void addTransfer(Vectors.Kind k, String name, long offset, byte[] body) {
        ByteBuffer header = ByteBuffer.allocate(8 + 4);
        header.putLong(offset);
        header.putInt(body.length);
        header.flip();
        ByteBuffer all = ByteBuffer.allocate(12 + body.length);
        all.put(header).put(body);
        k.add(name, fields("offset", offset, "bodySize", body.length, "body", Vectors.hex(body)), all.array());
    }

    // ------------------------------------------------------------ auto-switch HA

    private static void generateAutoSwitch(Vectors.Sink sink) throws Exception {
        try (Vectors.Kind k = sink.kind("ha_autoswitch_slave_handshake", STORE5 + "AutoSwitchHAClient#sendHandshakeHeader (ByteBuffer)")) {
            for (int[] flags : new int[][] {{0, 0}, {1, 0}, {0, 1}, {1, 1}}) {
                long brokerId = 2L + flags[0] + 2L * flags[1];
                ByteBuffer buf = ByteBuffer.allocate(16);
                buf.putInt(1).putShort((short) flags[0]).putShort((short) flags[1]).putLong(brokerId);
                k.add("flags_" + flags[0] + flags[1], fields("state", 1, "isSyncFromLastFile", (short) flags[0],
                    "isAsyncLearner", (short) flags[1], "brokerId", brokerId), buf.array());
            }
        }
        try (Vectors.Kind k = sink.kind("ha_autoswitch_slave_report", STORE5 + "AutoSwitchHAClient#reportSlaveOffset (ByteBuffer)")) {
            for (long offset : new long[] {0L, 65536L, Long.MAX_VALUE}) {
                ByteBuffer buf = ByteBuffer.allocate(12);
                buf.putInt(2).putLong(offset);
                k.add("offset_" + offset, fields("state", 2, "maxOffset", offset), buf.array());
            }
        }
        try (Vectors.Kind k = sink.kind("ha_autoswitch_master_handshake", STORE5 + "AutoSwitchHAConnection#buildHandshakeBuffer (ByteBuffer)")) {
            addHandshake(k, "no_epochs", -1L, -1, new long[0][]);
            addHandshake(k, "three_epochs", 3145728L, 3,
                new long[][] {{1, 0}, {2, 1048576L}, {3, 2097152L}});
        }
        try (Vectors.Kind k = sink.kind("ha_autoswitch_master_transfer", STORE5 + "AutoSwitchHAConnection#buildTransferHeaderBuffer (ByteBuffer)")) {
            addAutoTransfer(k, "heartbeat", 1048576L, 2, 1048576L, 1048000L, new byte[0]);
            addAutoTransfer(k, "data", 2097152L, 3, 2097152L, 2097000L, pattern(64, 5));
        }
    }

    private static void addHandshake(Vectors.Kind k, String name, long maxOffset, int lastEpoch, long[][] epochs) {
        ByteBuffer buf = ByteBuffer.allocate(20 + 12 * epochs.length);
        buf.putInt(1).putInt(12 * epochs.length).putLong(maxOffset).putInt(lastEpoch);
        List<Object> list = new ArrayList<>();
        for (long[] e : epochs) {
            buf.putInt((int) e[0]).putLong(e[1]);
            list.add(fields("epoch", (int) e[0], "startOffset", e[1]));
        }
        Map<String, Object> f = fields("state", 1, "bodySize", 12 * epochs.length, "maxOffset", maxOffset,
            "lastEpoch", lastEpoch);
        f.put("epochs", list);
        k.add(name, f, buf.array());
    }

    private static void addAutoTransfer(Vectors.Kind k, String name, long offset, int epoch, long epochStart,
                                        long confirm, byte[] body) {
        ByteBuffer buf = ByteBuffer.allocate(36 + body.length);
        buf.putInt(2).putInt(body.length).putLong(offset).putInt(epoch).putLong(epochStart).putLong(confirm).put(body);
        Map<String, Object> f = fields("state", 2, "bodySize", body.length, "offset", offset, "epoch", epoch,
            "epochStartOffset", epochStart, "confirmOffset", confirm);
        f.put("body", Vectors.hex(body));
        k.add(name, f, buf.array());
    }

    // ------------------------------------------------------------ DLedger store

    private static void generateStore(Vectors.Sink sink) throws Exception {
        try (Vectors.Kind k = sink.kind("dledger_entry", DLEDGER + "DLedgerEntryCoder#encode")) {
            addEntry(k, "empty_body", entry(0, 0, 0, new byte[0]));
            addEntry(k, "first", entry(0, 1, 0, "hello".getBytes(StandardCharsets.UTF_8)));
            addEntry(k, "later", entry(41, 7, 1073741872L, pattern(300, 11)));
            DLedgerEntry odd = entry(Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, new byte[] {(byte) 0x80});
            odd.setChannel(-1);
            odd.setChainCrc(Integer.MIN_VALUE);
            odd.setBodyCrc(0x12345678);
            addEntry(k, "extremes", odd);
        }
        try (Vectors.Kind k = sink.kind("dledger_index", DLEDGER + "DLedgerEntryCoder#encodeIndex")) {
            long[][] units = {{0, 53, 1, 0, 1}, {1073741824L, 348, 1, 99, 7}, {Long.MAX_VALUE, Integer.MAX_VALUE, 1, Long.MAX_VALUE, 3}};
            for (long[] u : units) {
                ByteBuffer buf = ByteBuffer.allocate(32);
                DLedgerEntryCoder.encodeIndex(u[0], (int) u[1], (int) u[2], u[3], u[4], buf);
                k.add("index_" + u[3], fields("pos", u[0], "size", (int) u[1], "magic", (int) u[2],
                    "index", u[3], "term", u[4]), Arrays.copyOf(buf.array(), buf.remaining()));
            }
        }
        try (Vectors.Kind k = sink.kind("dledger_blank", DLEDGER + "MmapFileList#preAppend (blank at the end of a segment)")) {
            for (int free : new int[] {8, 9, 40}) {
                k.add("length_" + free, fields("magic", -1, "length", free), blank(free));
            }
        }
        try (Vectors.Kind k = sink.kind("dledger_file_name", DLEDGER + "DLedgerUtils#offset2FileName")) {
            for (long offset : new long[] {0L, 1073741824L, 167772160L, 99999999999999999L}) {
                k.add("offset_" + offset, fields("offset", offset),
                    DLedgerUtils.offset2FileName(offset).getBytes(StandardCharsets.UTF_8));
            }
        }
        try (Vectors.Kind k = sink.kind("dledger_checkpoint", DLEDGER + "DLedgerMmapFileStore#persistCheckPoint (IOUtils.properties2String)")) {
            for (long[] v : new long[][] {{-1, -1}, {0, 0}, {12345, 12340}}) {
                Properties p = new Properties();
                p.put("endIndex", v[0]);
                p.put("committedIndex", v[1]);
                k.add("end_" + v[0], fields("endIndex", v[0], "committedIndex", v[1]),
                    IOUtils.properties2String(p).getBytes(StandardCharsets.UTF_8));
            }
        }
        try (Vectors.Kind k = sink.kind("dledger_currterm", DLEDGER + "MemberState#persistTerm (IOUtils.properties2String)")) {
            Object[][] cases = {{0L, null}, {7L, "n1"}, {123456789L, "n0"}};
            for (Object[] c : cases) {
                Properties p = new Properties();
                p.put("currTerm", c[0]);
                p.put("voteLeader", c[1] == null ? "" : c[1]);
                k.add("term_" + c[0], fields("currTerm", c[0], "voteLeader", c[1]),
                    IOUtils.properties2String(p).getBytes(StandardCharsets.UTF_8));
            }
        }
    }

    private static DLedgerEntry entry(long index, long term, long pos, byte[] body) {
        DLedgerEntry e = new DLedgerEntry();
        e.setMagic(1);
        e.setIndex(index);
        e.setTerm(term);
        e.setPos(pos);
        e.setBody(body);
        e.computeSizeInBytes();
        return e;
    }

    private static void addEntry(Vectors.Kind k, String name, DLedgerEntry e) throws Exception {
        ByteBuffer buf = ByteBuffer.allocate(48 + e.getBody().length);
        DLedgerEntryCoder.encode(e, buf);
        k.add(name, bean(e), Arrays.copyOf(buf.array(), buf.remaining()));
    }

    /** The blank MmapFileList writes when an entry does not fit the last {@code free} bytes. */
    private static byte[] blank(int free) throws Exception {
        Path dir = Files.createTempDirectory("dledger-blank");
        int fileSize = 4096;
        MmapFileList list = new MmapFileList(dir.toString(), fileSize);
        try {
            list.append(new byte[fileSize - free]);
            list.append(new byte[free]);  // does not fit beside the 8-byte minimum blank
            list.flush(0);
            byte[] first = Files.readAllBytes(dir.resolve(DLedgerUtils.offset2FileName(0)));
            return Arrays.copyOfRange(first, fileSize - free, fileSize);
        } finally {
            list.destroy();
            dir.toFile().delete();
        }
    }

    // ------------------------------------------------------------ DLedger RPC

    private static void generateRpc(Vectors.Sink sink) throws Exception {
        Map<String, List<Object[]>> cases = new LinkedHashMap<>();
        for (String kind : RPC.keySet()) {
            cases.put(kind, new ArrayList<>());
        }
        VoteRequest vote = ids(new VoteRequest(), "n1", "n0", "n1");
        vote.setTerm(3);
        vote.setLedgerEndIndex(100);
        vote.setLedgerEndTerm(2);
        add(cases, "dledger_rpc_vote_request", "default", new VoteRequest());
        add(cases, "dledger_rpc_vote_request", "candidate", vote);
        VoteRequest odd = ids(new VoteRequest(), "n\"1\\", "n\u00e9\u2028\u0001", null);
        odd.setGroup("g/\u4e2d\u007f");
        add(cases, "dledger_rpc_vote_request", "escaped_strings", odd);

        add(cases, "dledger_rpc_vote_response", "default", new VoteResponse());
        add(cases, "dledger_rpc_vote_response", "accept", new VoteResponse(vote).voteResult(VoteResponse.RESULT.ACCEPT).term(3));
        VoteResponse notReady = new VoteResponse(vote).voteResult(VoteResponse.RESULT.REJECT_TERM_NOT_READY).term(2);
        add(cases, "dledger_rpc_vote_response", "term_not_ready", notReady);
        add(cases, "dledger_rpc_vote_response", "taking_leadership",
            new VoteResponse(vote).voteResult(VoteResponse.RESULT.REJECT_TAKING_LEADERSHIP));

        HeartBeatRequest hb = ids(new HeartBeatRequest(), "n0", "n2", "n0");
        hb.setTerm(5);
        add(cases, "dledger_rpc_heartbeat_request", "leader", hb);
        HeartBeatResponse hbr = new HeartBeatResponse();
        hbr.copyBaseInfo(hb);
        add(cases, "dledger_rpc_heartbeat_response", "success", hbr);
        add(cases, "dledger_rpc_heartbeat_response", "expired_term",
            new HeartBeatResponse().term(6).code(DLedgerResponseCode.EXPIRED_TERM.getCode()));

        add(cases, "dledger_rpc_push_request", "default", new PushEntryRequest());
        add(cases, "dledger_rpc_push_request", "compare", push(PushEntryRequest.Type.COMPARE, entry(10, 2, 560, pattern(8, 1))));
        add(cases, "dledger_rpc_push_request", "truncate", push(PushEntryRequest.Type.TRUNCATE, entry(9, 2, 512, new byte[0])));
        add(cases, "dledger_rpc_push_request", "append", push(PushEntryRequest.Type.APPEND, entry(11, 3, 616, pattern(5, 9))));
        add(cases, "dledger_rpc_push_request", "commit", push(PushEntryRequest.Type.COMMIT, null));
        PushEntryRequest batch = push(PushEntryRequest.Type.APPEND, null);
        batch.addEntry(entry(12, 3, 669, pattern(3, 2)));
        batch.addEntry(entry(13, 3, 720, pattern(1, 4)));
        batch.addEntry(entry(14, 3, 769, new byte[] {(byte) 0xfb, (byte) 0xff, (byte) 0xbf}));
        add(cases, "dledger_rpc_push_request", "batch", batch);

        PushEntryResponse pr = new PushEntryResponse();
        pr.copyBaseInfo(hb);
        pr.setIndex(11L);
        pr.setBeginIndex(0);
        pr.setEndIndex(11);
        add(cases, "dledger_rpc_push_response", "append_success", pr);
        PushEntryResponse commitResp = new PushEntryResponse();
        commitResp.setEndIndex(10);
        add(cases, "dledger_rpc_push_response", "commit", commitResp);
        PushEntryResponse inconsistent = new PushEntryResponse();
        inconsistent.setCode(DLedgerResponseCode.INCONSISTENT_STATE.getCode());
        inconsistent.setIndex(12L);
        inconsistent.setCount(3);
        inconsistent.setBeginIndex(-1);
        inconsistent.setEndIndex(-1);
        add(cases, "dledger_rpc_push_response", "batch_inconsistent", inconsistent);

        for (int n : new int[] {0, 1, 2, 3, 100}) {
            AppendEntryRequest ap = new AppendEntryRequest();
            ap.setGroup("g");
            ap.setRemoteId("n0");
            ap.setBody(pattern(n, 13));
            add(cases, "dledger_rpc_append_request", "body_" + n, ap);
        }
        add(cases, "dledger_rpc_append_request", "no_body", new AppendEntryRequest());
        BatchAppendEntryRequest ba = new BatchAppendEntryRequest();
        ba.setGroup("g");
        ba.setBatchMsgs(Arrays.asList(new byte[] {1}, new byte[0], pattern(4, 250)));
        add(cases, "dledger_rpc_batch_append_request", "three", ba);
        add(cases, "dledger_rpc_batch_append_request", "default", new BatchAppendEntryRequest());

        add(cases, "dledger_rpc_append_response", "default", new AppendEntryResponse());
        AppendEntryResponse ar = new AppendEntryResponse();
        ar.copyBaseInfo(hb);
        ar.setIndex(11);
        ar.setPos(616);
        add(cases, "dledger_rpc_append_response", "success", ar);
        AppendEntryResponse notLeader = new AppendEntryResponse();
        notLeader.setCode(DLedgerResponseCode.NOT_LEADER.getCode());
        add(cases, "dledger_rpc_append_response", "not_leader", notLeader);

        GetEntriesRequest get = ids(new GetEntriesRequest(), "c1", "n0", null);
        get.setBeginIndex(10L);
        add(cases, "dledger_rpc_get_request", "begin", get);
        GetEntriesRequest getList = new GetEntriesRequest();
        getList.setIndexList(Arrays.asList(1L, 5L, Long.MAX_VALUE));
        getList.setMaxSize(4096);
        add(cases, "dledger_rpc_get_request", "index_list", getList);
        GetEntriesResponse getResp = new GetEntriesResponse();
        getResp.getEntries().add(entry(10, 2, 560, pattern(8, 1)));
        add(cases, "dledger_rpc_get_response", "one_entry", getResp);
        add(cases, "dledger_rpc_get_response", "empty", new GetEntriesResponse());

        MetadataRequest meta = ids(new MetadataRequest(), "c1", "n0", null);
        meta.setGroup("g");
        add(cases, "dledger_rpc_metadata_request", "ask", meta);
        add(cases, "dledger_rpc_metadata_response", "three_peers", metadata(3));
        add(cases, "dledger_rpc_metadata_response", "thirteen_peers", metadata(13));

        PullEntriesRequest pull = new PullEntriesRequest();
        pull.setNodeId("n2");
        pull.setBeginIndex(7L);
        add(cases, "dledger_rpc_pull_request", "pull", pull);
        add(cases, "dledger_rpc_pull_response", "empty", new PullEntriesResponse());

        LeadershipTransferRequest lt = ids(new LeadershipTransferRequest(), "n0", "n1", "n0");
        lt.setTransferId("n0");
        lt.setTransfereeId("n1");
        lt.setTakeLeadershipLedgerIndex(1234);
        lt.setTerm(4);
        add(cases, "dledger_rpc_leadership_transfer_request", "transfer", lt);
        add(cases, "dledger_rpc_leadership_transfer_response", "failed",
            new LeadershipTransferResponse().term(4).code(DLedgerResponseCode.TAKE_LEADERSHIP_FAILED.getCode()));
        add(cases, "dledger_rpc_leadership_transfer_response", "default", new LeadershipTransferResponse());

        for (Map.Entry<String, List<Object[]>> e : cases.entrySet()) {
            try (Vectors.Kind k = sink.kind(e.getKey(), DLEDGER + RPC.get(e.getKey()).getSimpleName()
                + " via JSON.toJSONBytes (DLedgerRpcNettyService)")) {
                for (Object[] c : e.getValue()) {
                    k.add((String) c[0], bean(c[1]), JSON.toJSONBytes(c[1]));
                }
            }
        }
    }

    private static void add(Map<String, List<Object[]>> cases, String kind, String name, Object obj) {
        if (RPC.get(kind) != obj.getClass()) {
            throw new IllegalStateException(kind + " holds " + RPC.get(kind) + ", not " + obj.getClass());
        }
        cases.get(kind).add(new Object[] {name, obj});
    }

    private static <T extends RequestOrResponse> T ids(T r, String local, String remote, String leader) {
        r.setGroup("dledger_group");
        r.setIds(local, remote, leader);
        return r;
    }

    private static PushEntryRequest push(PushEntryRequest.Type type, DLedgerEntry e) {
        PushEntryRequest r = ids(new PushEntryRequest(), "n0", "n1", "n0");
        r.setTerm(3);
        r.setType(type);
        r.setEntry(e);
        r.setCommitIndex(9);
        return r;
    }

    /** Peers as MemberState builds them: a HashMap filled in peer-list order. */
    private static MetadataResponse metadata(int peers) {
        MetadataResponse m = ids(new MetadataResponse(), "n0", "c1", "n0");
        Map<String, String> map = new HashMap<>();
        for (int i = 0; i < peers; i++) {
            map.put("n" + i, "10.0.0." + i + ":4091" + i);
        }
        m.setPeers(map);
        m.setTerm(2);
        return m;
    }

    // ------------------------------------------------------------ helpers

    private static byte[] pattern(int length, int seed) {
        byte[] out = new byte[length];
        for (int i = 0; i < length; i++) {
            out[i] = (byte) (seed * 31 + i * 7);
        }
        return out;
    }

    private static ByteBuffer exact(byte[] b, int size) {
        if (b.length != size) {
            throw new IllegalArgumentException("expected " + size + " bytes, got " + b.length);
        }
        return ByteBuffer.wrap(b);
    }

    private static byte[] rest(ByteBuffer buf, int size) {
        if (size < 0 || buf.remaining() != size) {
            throw new IllegalArgumentException("body size " + size + " but " + buf.remaining() + " bytes follow");
        }
        byte[] body = new byte[size];
        buf.get(body);
        return body;
    }

    private static Map<String, Object> fields(Object... keysAndValues) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            m.put((String) keysAndValues[i], keysAndValues[i + 1]);
        }
        return m;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> bean(Object value) throws Exception {
        return (Map<String, Object>) describe(value);
    }

    /** The bean view of a DLedger object: every getter's value, byte[] as hex, enums by name. */
    static Object describe(Object value) throws Exception {
        if (value == null || value instanceof Number || value instanceof String || value instanceof Boolean) {
            return value;
        }
        if (value instanceof byte[]) {
            return Vectors.hex((byte[]) value);
        }
        if (value instanceof Enum) {
            return ((Enum<?>) value).name();
        }
        if (value instanceof List) {
            JSONArray out = new JSONArray();
            for (Object item : (List<?>) value) {
                out.add(describe(item));
            }
            return out;
        }
        if (value instanceof Map) {
            Map<String, Object> out = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) {
                out.put(String.valueOf(e.getKey()), describe(e.getValue()));
            }
            return out;
        }
        JSONObject out = new JSONObject(new LinkedHashMap<>());
        for (PropertyDescriptor pd : Introspector.getBeanInfo(value.getClass(), Object.class).getPropertyDescriptors()) {
            if (pd.getReadMethod() != null) {
                out.put(pd.getName(), describe(pd.getReadMethod().invoke(value)));
            }
        }
        return out;
    }
}
