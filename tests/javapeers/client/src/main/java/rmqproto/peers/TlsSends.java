package rmqproto.peers;

import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

/**
 * Sends COUNT messages to TOPIC with a DefaultMQProducer whose ClientConfig#setUseTLS is USE_TLS
 * (its NameServer and broker connections are TLS or plain), printing one line per send:
 * "&lt;status&gt; &lt;offsetMsgId&gt;", or "ERROR &lt;exception&gt;".
 *
 * Usage: TlsSends NAMESRV_ADDR TOPIC true|false COUNT
 */
public final class TlsSends {
    private TlsSends() {
    }

    public static void main(String[] args) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("TlsSendsGroup");
        producer.setNamesrvAddr(args[0]);
        producer.setUseTLS(Boolean.parseBoolean(args[2]));
        producer.setSendMsgTimeout(5000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.start();
        int count = Integer.parseInt(args[3]);
        for (int i = 0; i < count; i++) {
            Message msg = new Message(args[1], "TagA", ("tls " + i).getBytes(StandardCharsets.UTF_8));
            try {
                SendResult result = producer.send(msg);
                System.out.println(result.getSendStatus() + " " + result.getOffsetMsgId());
            } catch (Exception e) {
                System.out.println("ERROR " + e.toString().replace('\n', ' '));
            }
            System.out.flush();
        }
        producer.shutdown();
    }
}
