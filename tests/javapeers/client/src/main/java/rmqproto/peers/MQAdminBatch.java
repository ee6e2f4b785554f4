package rmqproto.peers;

import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * Runs several mqadmin commands in one JVM (one JVM start instead of one per command).
 *
 * Usage: MQAdminBatch COMMAND ARGS... [--next COMMAND ARGS...]...
 * Before each command's output it prints "=== mqadmin " and the command line; a command's
 * error (its stack trace) goes to stdout too, so that each answer stays under its marker.
 */
public final class MQAdminBatch {
    private MQAdminBatch() {
    }

    public static void main(String[] args) {
        System.setErr(System.out);
        List<String> command = new ArrayList<>();
        for (String arg : args) {
            if ("--next".equals(arg)) {
                run(command);
                command.clear();
            } else {
                command.add(arg);
            }
        }
        run(command);
        System.out.flush();
        System.exit(0); // the commands' client threads may linger
    }

    private static void run(List<String> command) {
        if (command.isEmpty()) {
            return;
        }
        System.out.println(); // a command's output may not end its last line
        System.out.println("=== mqadmin " + String.join(" ", command));
        MQAdminStartup.main0(command.toArray(new String[0]), null);
        System.out.flush();
    }
}
