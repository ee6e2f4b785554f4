package rmqproto.dledger;

import io.openmessaging.storage.dledger.client.DLedgerClient;
import io.openmessaging.storage.dledger.protocol.AppendEntryResponse;
import io.openmessaging.storage.dledger.protocol.DLedgerResponseCode;
import java.nio.charset.StandardCharsets;

/**
 * DLedger 0.3.1.2's own client: appends COUNT entries "PREFIX i" to the group.
 *
 * Usage: Append GROUP PEERS PREFIX COUNT
 * Prints "APPENDED index" per entry that got SUCCESS (retrying each up to 30 s while the
 * group has no leader), then "DONE n".
 */
public final class Append {
    private Append() {
    }

    public static void main(String[] args) throws Exception {
        DLedgerClient client = new DLedgerClient(args[0], args[1]);
        client.startup();
        int count = Integer.parseInt(args[3]);
        int done = 0;
        for (int i = 0; i < count; i++) {
            byte[] body = (args[2] + " " + i).getBytes(StandardCharsets.UTF_8);
            long deadline = System.currentTimeMillis() + 30000;
            while (System.currentTimeMillis() < deadline) {
                AppendEntryResponse response = client.append(body);
                if (response.getCode() == DLedgerResponseCode.SUCCESS.getCode()) {
                    System.out.println("APPENDED " + response.getIndex());
                    done++;
                    break;
                }
                Thread.sleep(100);
            }
        }
        System.out.println("DONE " + done);
        client.shutdown();
        System.exit(0);
    }
}
