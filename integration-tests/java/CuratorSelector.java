// A Curator LeaderSelector participant for the cross-library selector test
// (integration-tests/tests/interop/leader_curator.rs).
//
//   java -cp /usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//        CuratorSelector.java <connect[/chroot]> <path> <participantId> <rounds> <markerPath>
//
// With autoRequeue, each term: create the EPHEMERAL marker (it must not exist: another leader
// would be working), sleep 50 ms, delete it (it must still be there). In its last counted term
// it records getParticipants() (while it leads, every other participant is queued). Prints
// READY after start, then "DONE rounds=N violations=V participants=id1,id2,...".
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

public class CuratorSelector {
    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: CuratorSelector <connect> <path> <id> <rounds> <markerPath>");
            System.exit(64);
        }
        String path = args[1], id = args[2], marker = args[4];
        int total = Integer.parseInt(args[3]);
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 10000, 5000, new RetryOneTime(100));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.out.println("ERROR not connected");
            System.exit(2);
        }
        AtomicInteger rounds = new AtomicInteger();
        AtomicInteger violations = new AtomicInteger();
        AtomicReference<LeaderSelector> self = new AtomicReference<>();
        AtomicReference<String> participants = new AtomicReference<>("");
        CountDownLatch done = new CountDownLatch(1);
        LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
            @Override
            public void takeLeadership(CuratorFramework c) throws Exception {
                try {
                    c.create().withMode(CreateMode.EPHEMERAL).forPath(marker);
                } catch (KeeperException.NodeExistsException e) {
                    violations.incrementAndGet();
                }
                Thread.sleep(50);
                try {
                    c.delete().forPath(marker);
                } catch (KeeperException.NoNodeException e) {
                    violations.incrementAndGet();
                }
                if (rounds.incrementAndGet() == total) {
                    List<String> ids = new ArrayList<>();
                    for (Participant p : self.get().getParticipants()) {
                        ids.add(p.getId());
                    }
                    participants.set(String.join(",", ids));
                    done.countDown();
                }
            }
        });
        self.set(selector);
        selector.setId(id);
        selector.autoRequeue();
        selector.start();
        System.out.println("READY");
        System.out.flush();
        if (!done.await(120, TimeUnit.SECONDS)) {
            System.out.println("ERROR rounds not done: " + rounds.get());
            System.exit(3);
        }
        selector.close();
        client.close();
        System.out.println("DONE rounds=" + rounds.get() + " violations=" + violations.get()
                + " participants=" + participants.get());
    }
}
