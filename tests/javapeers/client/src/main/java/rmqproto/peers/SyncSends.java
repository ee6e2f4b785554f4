package rmqproto.peers;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

/**
 * Sends COUNT messages to TOPIC one after the other with DefaultMQProducer.send (no retries),
 * printing one line per send: "&lt;status&gt; &lt;elapsed ms&gt; &lt;offsetMsgId&gt;", or
 * "ERROR &lt;elapsed ms&gt; &lt;exception&gt;". A SYNC_MASTER's SLAVE_NOT_AVAILABLE and
 * FLUSH_SLAVE_TIMEOUT answers arrive as send statuses. With COUNT "-" it sends one message
 * for each line read from standard input (so a test can act between two sends), until EOF.
 *
 * Usage: SyncSends NAMESRV_ADDR TOPIC COUNT|- [BODY_BYTES]
 */
public final class SyncSends {
    private SyncSends() {
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        boolean gated = "-".equals(args[2]);
        int count = gated ? Integer.MAX_VALUE : Integer.parseInt(args[2]);
        BufferedReader gate = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        int bodyBytes = args.length > 3 ? Integer.parseInt(args[3]) : 100;

        DefaultMQProducer producer = new DefaultMQProducer("SyncSendsGroup");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(15000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        producer.start();
        byte[] body = new byte[bodyBytes];
        for (int i = 0; i < count; i++) {
            if (gated && gate.readLine() == null) {
                break;
            }
            byte[] text = ("message " + i + " ").getBytes(StandardCharsets.UTF_8);
            for (int j = 0; j < body.length; j++) {
                body[j] = text[j % text.length];
            }
            Message msg = new Message(topic, "TagA", "key-" + i, body);
            long start = System.currentTimeMillis();
            try {
                SendResult result = producer.send(msg);
                System.out.println(result.getSendStatus() + " " + (System.currentTimeMillis() - start)
                    + " " + result.getOffsetMsgId());
            } catch (Exception e) {
                System.out.println("ERROR " + (System.currentTimeMillis() - start) + " "
                    + e.toString().replace('\n', ' '));
            }
            System.out.flush();
        }
        producer.shutdown();
    }
}
