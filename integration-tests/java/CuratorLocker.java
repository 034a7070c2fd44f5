// A Curator contender for the cross-library lock tests (integration-tests/tests/interop/curator.rs).
//
// Runs with Java's single-file source launcher against Debian's Curator 5 jars:
//   java -cp /usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//        CuratorLocker.java <connect[/chroot]> <lockPath> <mutex|read|write> <rounds> <counterPath>
//
// Each round: acquire, then check the critical section's invariants through marker nodes,
// and (writers) increment a counter node read-modify-write, then release. Markers:
//   <counterPath>-writer           ephemeral, exists while a writer is inside
//   <counterPath>-readers/r-       ephemeral sequential, one per reader inside
// A writer that finds the writer marker or any reader marker, or a reader that finds the
// writer marker, counts a violation. Prints one line: "DONE rounds=N violations=V".
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

public class CuratorLocker {
    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: CuratorLocker <connect> <lockPath> <mutex|read|write> <rounds> <counterPath>");
            System.exit(64);
        }
        String connect = args[0], lockPath = args[1], mode = args[2], counter = args[4];
        int rounds = Integer.parseInt(args[3]);
        CuratorFramework client = CuratorFrameworkFactory.newClient(connect, 10000, 5000, new RetryOneTime(100));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.out.println("ERROR not connected");
            System.exit(2);
        }
        InterProcessLock lock;
        if (mode.equals("mutex")) {
            lock = new InterProcessMutex(client, lockPath);
        } else if (mode.equals("write")) {
            lock = new InterProcessReadWriteLock(client, lockPath).writeLock();
        } else {
            lock = new InterProcessReadWriteLock(client, lockPath).readLock();
        }
        boolean writer = !mode.equals("read");
        String writerMarker = counter + "-writer";
        String readers = counter + "-readers";
        int violations = 0;
        System.out.println("READY");
        for (int i = 0; i < rounds; i++) {
            if (!lock.acquire(120, TimeUnit.SECONDS)) {
                System.out.println("ERROR acquire timed out in round " + i);
                System.exit(3);
            }
            try {
                if (writer) {
                    try {
                        client.create().withMode(CreateMode.EPHEMERAL).forPath(writerMarker);
                    } catch (KeeperException.NodeExistsException e) {
                        violations++;
                    }
                    if (!client.getChildren().forPath(readers).isEmpty()) {
                        violations++;
                    }
                    byte[] data = client.getData().forPath(counter);
                    int value = Integer.parseInt(new String(data, StandardCharsets.UTF_8).trim());
                    client.setData().forPath(counter, Integer.toString(value + 1).getBytes(StandardCharsets.UTF_8));
                    try {
                        client.delete().forPath(writerMarker);
                    } catch (KeeperException.NoNodeException e) {
                        violations++;
                    }
                } else {
                    String mine = client.create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(readers + "/r-");
                    if (client.checkExists().forPath(writerMarker) != null) {
                        violations++;
                    }
                    Thread.sleep(2);
                    client.delete().forPath(mine);
                }
            } finally {
                lock.release();
            }
        }
        System.out.println("DONE rounds=" + rounds + " violations=" + violations);
        client.close();
    }
}
