// A Curator LeaderLatch participant for the cross-library election test
// (integration-tests/tests/interop/leader_curator.rs).
//
// Runs with Java's single-file source launcher against Debian's Curator 5 jars:
//   java -cp /usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//        CuratorLatch.java <connect[/chroot]> <latchPath> <participantId>
//
// Starts the latch, prints READY, then answers one line per command read from stdin:
//   leader        -> "LEADER <id of getLeader()>" ("LEADER -" when there is none)
//   has           -> "HAS true|false"             (hasLeadership())
//   await <ms>    -> "AWAIT true|false"           (await(ms, MILLISECONDS))
//   close         -> "CLOSED", then exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.RetryOneTime;

public class CuratorLatch {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: CuratorLatch <connect> <latchPath> <participantId>");
            System.exit(64);
        }
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 10000, 5000, new RetryOneTime(100));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.out.println("ERROR not connected");
            System.exit(2);
        }
        LeaderLatch latch = new LeaderLatch(client, args[1], args[2]);
        latch.start();
        System.out.println("READY");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split(" ");
            if (cmd[0].equals("leader")) {
                Participant leader = latch.getLeader();
                String id = leader.isLeader() ? leader.getId() : "-";
                System.out.println("LEADER " + id);
            } else if (cmd[0].equals("has")) {
                System.out.println("HAS " + latch.hasLeadership());
            } else if (cmd[0].equals("await")) {
                boolean led = latch.await(Long.parseLong(cmd[1]), TimeUnit.MILLISECONDS);
                System.out.println("AWAIT " + led);
            } else if (cmd[0].equals("close")) {
                latch.close();
                client.close();
                System.out.println("CLOSED");
                System.out.flush();
                return;
            } else {
                System.out.println("ERROR unknown command " + line);
            }
            System.out.flush();
        }
        latch.close();
        client.close();
    }
}
