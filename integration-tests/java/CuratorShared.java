// Curator's shared values for the cross-library tests (integration-tests/tests/members/shared.rs).
//
// Runs with Java's single-file source launcher against Debian's Curator 5 jars:
//   java -cp /usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//        CuratorShared.java <connect[/chroot]>
//
// Prints READY once connected, then answers one line per command read from stdin:
//   atomic-inc <path> <lockPath> <n>  -> "DONE ok=<n succeeded> failed=<m>" after n increments of a
//                                       DistributedAtomicLong promoted to a lock at lockPath
//   atomic-get <path>                 -> "VALUE <long>"
//   count-inc <path> <n>              -> "DONE ok=<n>" after n trySetCount increments of a SharedCount
//   count-get <path>                  -> "VALUE <int>" (a SharedCount's getCount after start)
//   count-set <path> <v>              -> "SET" (SharedCount.setCount)
//   value-get <path>                  -> "VALUE <utf-8 text>" (SharedValue.getValue)
//   close                             -> "CLOSED", then exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.SharedValue;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryOneTime;

public class CuratorShared {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 10000, 5000, new RetryOneTime(100));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.out.println("ERROR not connected");
            System.exit(2);
        }
        System.out.println("READY");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split(" ");
            switch (cmd[0]) {
                case "atomic-inc": {
                    PromotedToLock promoted = PromotedToLock.builder().lockPath(cmd[2])
                        .retryPolicy(new ExponentialBackoffRetry(5, 5)).build();
                    DistributedAtomicLong counter = new DistributedAtomicLong(client, cmd[1],
                        new ExponentialBackoffRetry(2, 3), promoted);
                    int n = Integer.parseInt(cmd[3]);
                    int ok = 0;
                    int failed = 0;
                    for (int i = 0; i < n; i++) {
                        // Until it succeeds: every call that reports success counted once.
                        while (true) {
                            AtomicValue<Long> v = counter.increment();
                            if (v.succeeded()) {
                                ok++;
                                break;
                            }
                            failed++;
                        }
                    }
                    System.out.println("DONE ok=" + ok + " failed=" + failed);
                    break;
                }
                case "atomic-get": {
                    DistributedAtomicLong counter = new DistributedAtomicLong(client, cmd[1], new RetryOneTime(10));
                    System.out.println("VALUE " + counter.get().postValue());
                    break;
                }
                case "count-inc": {
                    SharedCount count = new SharedCount(client, cmd[1], 0);
                    count.start();
                    int n = Integer.parseInt(cmd[2]);
                    for (int i = 0; i < n; i++) {
                        while (true) {
                            VersionedValue<Integer> v = count.getVersionedValue();
                            if (count.trySetCount(v, v.getValue() + 1)) {
                                break;
                            }
                        }
                    }
                    count.close();
                    System.out.println("DONE ok=" + n);
                    break;
                }
                case "count-get": {
                    SharedCount count = new SharedCount(client, cmd[1], 0);
                    count.start();
                    System.out.println("VALUE " + count.getCount());
                    count.close();
                    break;
                }
                case "count-set": {
                    SharedCount count = new SharedCount(client, cmd[1], 0);
                    count.start();
                    count.setCount(Integer.parseInt(cmd[2]));
                    count.close();
                    System.out.println("SET");
                    break;
                }
                case "value-get": {
                    SharedValue value = new SharedValue(client, cmd[1], new byte[0]);
                    value.start();
                    System.out.println("VALUE " + new String(value.getValue(), StandardCharsets.UTF_8));
                    value.close();
                    break;
                }
                case "close":
                    client.close();
                    System.out.println("CLOSED");
                    System.out.flush();
                    return;
                default:
                    System.out.println("ERROR unknown command " + line);
            }
            System.out.flush();
        }
        client.close();
    }
}
