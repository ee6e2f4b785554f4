package rmqproto.interop;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import io.openmessaging.storage.dledger.DLedgerConfig;
import io.openmessaging.storage.dledger.MemberState;
import io.openmessaging.storage.dledger.entry.DLedgerEntry;
import io.openmessaging.storage.dledger.store.file.DLedgerMmapFileStore;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.StandardCharsets;

/**
 * Opens, writes and reads a DLedger 0.3.1.2 file store with the real DLedgerMmapFileStore.
 *
 * <pre>
 * DLedgerStoreServe write BASEDIR SELFID DATASIZE INDEXSIZE   stdin: {"entries": [{"term", "body"}],
 *                                                              "committed": n}; appends them as
 *                                                              leader, term by term
 * DLedgerStoreServe read  BASEDIR SELFID DATASIZE INDEXSIZE   recovers the store
 * </pre>
 * Both print, after a clean shutdown, {"begin", "end", "endTerm", "committed", "committedPos",
 * "writePos", "entries": [{"index", "term", "pos", "size", "body"}]} (bodies in hex).
 */
public final class DLedgerStoreServe {
    private DLedgerStoreServe() {
    }

    public static void main(String[] args) throws Exception {
        DLedgerConfig config = new DLedgerConfig();
        config.setStoreBaseDir(args[1]);
        config.setSelfId(args[2]);
        config.setGroup("g");
        config.setPeers(args[2] + "-127.0.0.1:1");
        config.setMappedFileSizeForEntryData(Integer.parseInt(args[3]));
        config.setMappedFileSizeForEntryIndex(Integer.parseInt(args[4]));
        MemberState member = new MemberState(config);
        DLedgerMmapFileStore store = new DLedgerMmapFileStore(config, member);
        store.setEnableCleanSpaceService(false);
        store.startup();
        if ("write".equals(args[0])) {
            Reader in = new InputStreamReader(System.in, StandardCharsets.UTF_8);
            JSONObject request = JSON.parseObject(new String(readAll(in)));
            write(store, member, request);
        } else if (!"read".equals(args[0])) {
            throw new IllegalArgumentException("mode must be read or write: " + args[0]);
        }
        JSONObject out = describe(store);
        store.shutdown();
        System.out.println(out.toJSONString());
    }

    private static char[] readAll(Reader in) throws Exception {
        StringBuilder text = new StringBuilder();
        char[] buffer = new char[8192];
        for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
            text.append(buffer, 0, n);
        }
        return text.toString().toCharArray();
    }

    private static void write(DLedgerMmapFileStore store, MemberState member, JSONObject request) {
        JSONArray entries = request.getJSONArray("entries");
        for (int i = 0; i < entries.size(); i++) {
            JSONObject item = entries.getJSONObject(i);
            long term = item.getLongValue("term");
            if (!member.isLeader() || member.currTerm() != term) {
                member.changeToCandidate(term);
                while (member.currTerm() < term) {
                    member.nextTerm();
                }
                member.changeToLeader(term);
            }
            DLedgerEntry entry = new DLedgerEntry();
            entry.setBody(Vectors.unhex(item.getString("body")));
            store.appendAsLeader(entry);
        }
        store.updateCommittedIndex(member.currTerm(), request.getLongValue("committed"));
    }

    private static JSONObject describe(DLedgerMmapFileStore store) {
        JSONObject out = new JSONObject(true);
        out.put("begin", store.getLedgerBeginIndex());
        out.put("end", store.getLedgerEndIndex());
        out.put("endTerm", store.getLedgerEndTerm());
        out.put("committed", store.getCommittedIndex());
        out.put("committedPos", store.getCommittedPos());
        out.put("writePos", store.getWritePos());
        JSONArray entries = new JSONArray();
        for (long i = Math.max(store.getLedgerBeginIndex(), 0); i <= store.getLedgerEndIndex(); i++) {
            DLedgerEntry entry = store.get(i);
            JSONObject item = new JSONObject(true);
            item.put("index", entry.getIndex());
            item.put("term", entry.getTerm());
            item.put("pos", entry.getPos());
            item.put("size", entry.getSize());
            item.put("body", Vectors.hex(entry.getBody()));
            entries.add(item);
        }
        out.put("entries", entries);
        return out;
    }
}
