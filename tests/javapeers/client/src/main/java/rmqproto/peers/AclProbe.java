package rmqproto.peers;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;

/**
 * Runs ACL steps with the Java client and AclClientRPCHook, one client per step, and says how
 * the broker answered each.
 *
 * Usage: AclProbe NAMESRV_ADDR BROKER_NAME STEPS_FILE
 * Each line of STEPS_FILE is "LABEL send AK SK TOKEN TOPIC" or "LABEL pull AK SK TOKEN TOPIC
 * GROUP"; AK "-" means no credentials (no hook), TOKEN "-" no security token. Prints one
 * line per step: "LABEL OK", "LABEL REFUSED CODE REMARK" (the broker's answer) or
 * "LABEL ERROR DESCRIPTION".
 */
public final class AclProbe {
    private AclProbe() {
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String brokerName = args[1];
        List<String> lines = Files.readAllLines(Paths.get(args[2]), StandardCharsets.UTF_8);
        for (String line : lines) {
            if (line.trim().isEmpty()) {
                continue;
            }
            String[] step = line.trim().split("\\s+");
            String label = step[0];
            RPCHook hook = hook(step[2], step[3], step[4]);
            try {
                if ("send".equals(step[1])) {
                    send(namesrv, label, hook, step[5]);
                } else {
                    pull(namesrv, label, hook, brokerName, step[5], step[6]);
                }
                System.out.println(label + " OK");
            } catch (Throwable e) {
                System.out.println(label + " " + describe(e));
            }
        }
        System.exit(0);
    }

    static RPCHook hook(String accessKey, String secretKey, String token) {
        if ("-".equals(accessKey)) {
            return null;
        }
        SessionCredentials credentials = "-".equals(token)
            ? new SessionCredentials(accessKey, secretKey)
            : new SessionCredentials(accessKey, secretKey, token);
        return new AclClientRPCHook(credentials);
    }

    static void send(String namesrv, String label, RPCHook hook, String topic) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("acl_probe_producer", hook);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName(label);
        producer.setRetryTimesWhenSendFailed(0);
        producer.start();
        try {
            SendResult result = producer.send(new Message(topic, "TagA", ("acl " + label).getBytes(StandardCharsets.UTF_8)), 10000);
            if (result.getSendStatus() != org.apache.rocketmq.client.producer.SendStatus.SEND_OK) {
                throw new IllegalStateException("send status " + result.getSendStatus());
            }
        } finally {
            producer.shutdown();
        }
    }

    static void pull(String namesrv, String label, RPCHook hook, String brokerName, String topic,
        String group) throws Exception {
        DefaultMQPullConsumer consumer = new DefaultMQPullConsumer(group, hook);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName(label);
        consumer.start();
        try {
            PullResult result = consumer.pull(new MessageQueue(topic, brokerName, 0), "*", 0, 1, 10000);
            if (result.getPullStatus() == null) {
                throw new IllegalStateException("no pull status");
            }
        } finally {
            consumer.shutdown();
        }
    }

    static String describe(Throwable e) {
        for (Throwable cause = e; cause != null; cause = cause.getCause()) {
            if (cause instanceof MQBrokerException) {
                MQBrokerException broker = (MQBrokerException) cause;
                return "REFUSED " + broker.getResponseCode() + " " + broker.getErrorMessage();
            }
        }
        return "ERROR " + e;
    }
}
