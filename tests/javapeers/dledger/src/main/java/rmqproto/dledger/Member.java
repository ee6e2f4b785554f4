package rmqproto.dledger;

import io.openmessaging.storage.dledger.DLedgerConfig;
import io.openmessaging.storage.dledger.DLedgerServer;
import java.lang.reflect.Method;

/**
 * One real DLedger 0.3.1.2 member, as DLedger's own ServerCommand starts one.
 *
 * Usage: Member GROUP SELF_ID PEERS STORE_BASE_DIR [property=value ...]
 * Each property is a DLedgerConfig setter (heartBeatTimeIntervalMs=300 calls
 * setHeartBeatTimeIntervalMs). Runs until killed.
 */
public final class Member {
    private Member() {
    }

    public static void main(String[] args) throws Exception {
        DLedgerConfig config = new DLedgerConfig();
        config.setGroup(args[0]);
        config.setSelfId(args[1]);
        config.setPeers(args[2]);
        config.setStoreBaseDir(args[3]);
        for (int i = 4; i < args.length; i++) {
            String[] pair = args[i].split("=", 2);
            set(config, pair[0], pair[1]);
        }
        DLedgerServer server = new DLedgerServer(config);
        server.startup();
        System.out.println("STARTED " + args[1]);
        Thread.currentThread().join();
    }

    private static void set(DLedgerConfig config, String name, String value) throws Exception {
        String setter = "set" + Character.toUpperCase(name.charAt(0)) + name.substring(1);
        for (Method method : DLedgerConfig.class.getMethods()) {
            if (method.getName().equals(setter) && method.getParameterCount() == 1) {
                Class<?> type = method.getParameterTypes()[0];
                Object arg = type == int.class ? Integer.valueOf(value)
                    : type == long.class ? Long.valueOf(value)
                    : type == boolean.class ? Boolean.valueOf(value)
                    : type == float.class ? Float.valueOf(value) : value;
                method.invoke(config, arg);
                return;
            }
        }
        throw new IllegalArgumentException("no DLedgerConfig setting " + name);
    }
}
