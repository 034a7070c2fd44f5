// A Curator contender that queues on a lock and holds it until its standard input closes
// (zkrs/tests/locks_interop.rs). Java's single-file source launcher, Debian's Curator 5 jars:
//   java -cp /usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//        CuratorHold.java <connect[/chroot]> <lockPath> <mutex|read|write>
// Prints READY before it asks for the lock and HELD once it has it; gives up after 120 s.
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryOneTime;

public class CuratorHold {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: CuratorHold <connect> <lockPath> <mutex|read|write>");
            System.exit(64);
        }
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 10000, 5000, new RetryOneTime(100));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.out.println("ERROR not connected");
            System.exit(2);
        }
        InterProcessLock lock;
        if (args[2].equals("mutex")) {
            lock = new InterProcessMutex(client, args[1]);
        } else if (args[2].equals("write")) {
            lock = new InterProcessReadWriteLock(client, args[1]).writeLock();
        } else {
            lock = new InterProcessReadWriteLock(client, args[1]).readLock();
        }
        // Ends the process when the test closes our stdin, even while acquire blocks.
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) { }
            } catch (Exception e) { }
            System.exit(0);
        });
        stdin.setDaemon(true);
        stdin.start();
        System.out.println("READY");
        if (!lock.acquire(120, TimeUnit.SECONDS)) {
            System.out.println("ERROR acquire timed out");
            System.exit(3);
        }
        System.out.println("HELD");
        Thread.sleep(120_000);
        System.exit(4);
    }
}
