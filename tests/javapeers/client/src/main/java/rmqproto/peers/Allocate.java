package rmqproto.peers;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByMachineRoom;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Prints the Java client's queue allocation for each case given, so that the Python
 * strategies can be compared with it.
 *
 * Usage: Allocate CASE... where a CASE is STRATEGY/BROKER:COUNT,BROKER:COUNT/CID,CID
 * (STRATEGY: AVG, AVG_BY_CIRCLE, CONSISTENT_HASH or MACHINE_ROOM=ROOM+ROOM).
 * Prints for each case and client "CASE CID BROKER:QID BROKER:QID ...".
 */
public final class Allocate {
    private Allocate() {
    }

    public static void main(String[] args) {
        for (String spec : args) {
            String[] parts = spec.split("/");
            AllocateMessageQueueStrategy strategy;
            if (parts[0].equals("AVG")) {
                strategy = new AllocateMessageQueueAveragely();
            } else if (parts[0].equals("AVG_BY_CIRCLE")) {
                strategy = new AllocateMessageQueueAveragelyByCircle();
            } else if (parts[0].equals("CONSISTENT_HASH")) {
                strategy = new AllocateMessageQueueConsistentHash();
            } else {
                AllocateMessageQueueByMachineRoom room = new AllocateMessageQueueByMachineRoom();
                room.setConsumeridcs(new HashSet<>(Arrays.asList(parts[0].split("=")[1].split("\\+"))));
                strategy = room;
            }
            List<MessageQueue> queues = new ArrayList<>();
            for (String broker : parts[1].split(",")) {
                String[] nameCount = broker.split(":");
                for (int i = 0; i < Integer.parseInt(nameCount[1]); i++) {
                    queues.add(new MessageQueue("T", nameCount[0], i));
                }
            }
            List<String> cids = new ArrayList<>(Arrays.asList(parts[2].split(",")));
            Collections.sort(queues);
            Collections.sort(cids);
            for (String cid : cids) {
                StringBuilder line = new StringBuilder(spec).append(' ').append(cid);
                for (MessageQueue mq : strategy.allocate("G", cid, queues, cids)) {
                    line.append(' ').append(mq.getBrokerName()).append(':').append(mq.getQueueId());
                }
                System.out.println(line);
            }
        }
    }
}
