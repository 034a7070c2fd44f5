// A Curator CuratorCache on a subtree, for the cache comparison test
// (integration-tests/tests/members/cache_faults.rs).
//
// Runs with Java's single-file source launcher against Debian's Curator 5 jars:
//   java -cp /usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//        CuratorCacheDump.java <connect[/chroot]> <path>
//
// Starts CuratorCache.build(client, path), waits for initialized(), prints READY, then
// answers one command per line read from stdin:
//   wait <markerPath> <value> -> waits (up to 120 s) until the cached marker holds <value>,
//                                then prints one line per cached node,
//                                "NODE <path> <version> <czxid> <hex data or ->", then "END"
//                                ("TIMEOUT" instead when the marker never arrives)
//   close                     -> "CLOSED", then exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.retry.RetryNTimes;

public class CuratorCacheDump {
    static String hex(byte[] data) {
        if (data == null || data.length == 0) {
            return "-";
        }
        StringBuilder sb = new StringBuilder();
        for (byte b : data) {
            sb.append(String.format("%02x", b));
        }
        return sb.toString();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: CuratorCacheDump <connect> <path>");
            System.exit(64);
        }
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 10000, 5000, new RetryNTimes(50, 200));
        client.start();
        if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) {
            System.out.println("ERROR not connected");
            System.exit(2);
        }
        CuratorCache cache = CuratorCache.build(client, args[1]);
        CountDownLatch initialized = new CountDownLatch(1);
        cache.listenable().addListener(CuratorCacheListener.builder().forInitialized(initialized::countDown).build());
        cache.start();
        if (!initialized.await(120, TimeUnit.SECONDS)) {
            System.out.println("ERROR not initialized");
            System.exit(3);
        }
        System.out.println("READY");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split(" ");
            if (cmd[0].equals("wait") && cmd.length == 3) {
                byte[] want = cmd[2].getBytes(StandardCharsets.UTF_8);
                long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
                boolean there = false;
                while (System.nanoTime() < end) {
                    Optional<ChildData> marker = cache.get(cmd[1]);
                    if (marker.isPresent() && Arrays.equals(marker.get().getData(), want)) {
                        there = true;
                        break;
                    }
                    Thread.sleep(10);
                }
                if (!there) {
                    System.out.println("TIMEOUT");
                } else {
                    Map<String, ChildData> sorted = new TreeMap<>();
                    cache.stream().forEach(c -> sorted.put(c.getPath(), c));
                    for (ChildData c : sorted.values()) {
                        System.out.println("NODE " + c.getPath() + " " + c.getStat().getVersion() + " "
                                + c.getStat().getCzxid() + " " + hex(c.getData()));
                    }
                    System.out.println("END");
                }
            } else if (cmd[0].equals("close")) {
                cache.close();
                client.close();
                System.out.println("CLOSED");
                System.out.flush();
                return;
            } else {
                System.out.println("ERROR unknown command " + line);
            }
            System.out.flush();
        }
    }
}
