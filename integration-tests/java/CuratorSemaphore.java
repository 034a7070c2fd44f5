// Curator's semaphore, revocation and participant listing, for the cross-library tests in
// integration-tests/tests/interop/curator_semaphore.rs.
//
// Runs with Java's single-file source launcher against Debian's Curator 5 jars:
//   java -cp /usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//        CuratorSemaphore.java <connect[/chroot]> <mode> <args...>
//
// Modes (each prints READY once connected):
//   semaphore <path> <maxLeases> <rounds>  InterProcessSemaphoreV2 (node data "java"); each
//       round: take a lease, add an ephemeral marker under /inside, count /inside's children
//       (more than maxLeases is a violation), remove the marker, return the lease.
//       Prints "DONE rounds=N violations=V most=M".
//   revocable <lockPath>   holds an InterProcessMutex made revocable; prints "HELD <node>",
//       then "REVOKED" when asked (and releases), then "DONE rounds=1 violations=0".
//   revoke <lockPath>      Revoker.attemptRevoke on every participant node; "DONE revoked=K".
//   participants <lockPath>  "ADDR <InetAddress.getLocalHost().getHostAddress()>", then
//       "P <node> <data>" per InterProcessMutex.getParticipantNodes() entry, then "END".
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;

public class CuratorSemaphore {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: CuratorSemaphore <connect> <mode> <path> [args]");
            System.exit(64);
        }
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 10000, 5000, new RetryOneTime(100));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.out.println("ERROR not connected");
            System.exit(2);
        }
        System.out.println("READY");
        String mode = args[1], path = args[2];
        if (mode.equals("semaphore")) {
            semaphore(client, path, Integer.parseInt(args[3]), Integer.parseInt(args[4]));
        } else if (mode.equals("revocable")) {
            revocable(client, path);
        } else if (mode.equals("revoke")) {
            int revoked = 0;
            for (String node : new InterProcessMutex(client, path).getParticipantNodes()) {
                Revoker.attemptRevoke(client, node);
                revoked++;
            }
            System.out.println("DONE revoked=" + revoked);
        } else if (mode.equals("participants")) {
            System.out.println("ADDR " + InetAddress.getLocalHost().getHostAddress());
            for (String node : new InterProcessMutex(client, path).getParticipantNodes()) {
                byte[] data = client.getData().forPath(node);
                System.out.println("P " + node + " " + new String(data, StandardCharsets.UTF_8));
            }
            System.out.println("END");
        } else {
            System.out.println("ERROR unknown mode " + mode);
            System.exit(64);
        }
        client.close();
    }

    static void semaphore(CuratorFramework client, String path, int max, int rounds) throws Exception {
        InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, max);
        semaphore.setNodeData("java".getBytes(StandardCharsets.UTF_8));
        int violations = 0, most = 0;
        for (int i = 0; i < rounds; i++) {
            Lease lease = semaphore.acquire(120, TimeUnit.SECONDS);
            if (lease == null) {
                System.out.println("ERROR acquire timed out in round " + i);
                System.exit(3);
            }
            String marker = client.create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath("/inside/h-");
            int inside = client.getChildren().forPath("/inside").size();
            most = Math.max(most, inside);
            if (inside > max) {
                violations++;
            }
            Thread.sleep(10);
            client.delete().forPath(marker);
            semaphore.returnLease(lease);
        }
        System.out.println("DONE rounds=" + rounds + " violations=" + violations + " most=" + most);
    }

    static void revocable(CuratorFramework client, String path) throws Exception {
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        CountDownLatch asked = new CountDownLatch(1);
        mutex.makeRevocable(forLock -> asked.countDown());
        if (!mutex.acquire(60, TimeUnit.SECONDS)) {
            System.out.println("ERROR acquire timed out");
            System.exit(3);
        }
        String ours = mutex.getParticipantNodes().iterator().next();
        System.out.println("HELD " + ours);
        if (!asked.await(60, TimeUnit.SECONDS)) {
            System.out.println("ERROR never asked to release");
            System.exit(4);
        }
        System.out.println("REVOKED");
        mutex.release();
        System.out.println("DONE rounds=1 violations=0");
    }
}
