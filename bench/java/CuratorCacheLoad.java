// The Java side of bench's `cache` workload (bench/src/workloads/cache.rs): loads a subtree
// with Curator's CuratorCache (Debian's Curator 5.4) and reports time, CPU and memory.
//
//   java -XX:+UseSerialGC -Xmx1g -cp /usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//        CuratorCacheLoad.java <connect> <path> <expected nodes>
//
// First load: from start() until every node is cached (initialized() can come earlier: on a
// loaded machine 5.4 sent it with a third of 100,000 nodes still missing; the count at
// initialized() is reported too). Memory: the heap in use after a full GC with the cache,
// minus the same after close() (which clears the storage), per node; and the RSS growth of the
// load. Then a second, warm load is timed with the process CPU it used. Prints one line:
//   CACHE <first ms> <second ms> <second cpu ms> <heap bytes per node> <rss KiB per node> <nodes>
//         <nodes cached at the first initialized()>
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.retry.RetryOneTime;

public class CuratorCacheLoad {
    static long heapAfterGc() throws InterruptedException {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(100);
        }
        return rt.totalMemory() - rt.freeMemory();
    }

    static long rssKib() throws Exception {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.substring(6).trim().split("\\s+")[0]);
            }
        }
        return -1;
    }

    static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    static long atInitialized;

    static CuratorCache load(CuratorFramework client, String path, long expected) throws Exception {
        CuratorCache cache = CuratorCache.build(client, path);
        CountDownLatch initialized = new CountDownLatch(1);
        cache.listenable().addListener(CuratorCacheListener.builder().forInitialized(initialized::countDown).build());
        cache.start();
        if (!initialized.await(600, TimeUnit.SECONDS)) {
            System.out.println("ERROR not initialized");
            System.exit(3);
        }
        atInitialized = cache.size();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        long report = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (cache.size() < expected && System.nanoTime() < end) {
            Thread.sleep(1);
            if (System.nanoTime() > report) {
                System.err.println("CuratorCacheLoad: " + cache.size() + " of " + expected + " cached, "
                        + "connected " + client.getZookeeperClient().isConnected());
                report = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            }
        }
        return cache;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: CuratorCacheLoad <connect> <path> <expected nodes>");
            System.exit(64);
        }
        long expected = Long.parseLong(args[2]);
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 30000, 10000, new RetryOneTime(100));
        client.start();
        if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) {
            System.out.println("ERROR not connected");
            System.exit(2);
        }
        heapAfterGc();
        long rssBefore = rssKib();
        long t0 = System.nanoTime();
        CuratorCache first = load(client, args[1], expected);
        long firstMs = (System.nanoTime() - t0) / 1_000_000;
        long firstInitialized = atInitialized;
        long nodes = first.size();
        long heapWith = heapAfterGc();
        long rssAfter = rssKib();
        if (nodes != expected) {
            // Reported as incomplete by the Rust side (the <nodes> field).
            System.out.printf("CACHE %d %d %d %.1f %.3f %d %d%n", firstMs, -1, -1, -1.0, -1.0, nodes,
                    firstInitialized);
            return;
        }
        first.close();
        long heapWithout = heapAfterGc();
        long c0 = cpuNanos();
        long t1 = System.nanoTime();
        CuratorCache second = load(client, args[1], expected);
        long secondMs = (System.nanoTime() - t1) / 1_000_000;
        long cpuMs = (cpuNanos() - c0) / 1_000_000;
        second.close();
        client.close();
        System.out.printf("CACHE %d %d %d %.1f %.3f %d %d%n", firstMs, secondMs, cpuMs,
                (double) (heapWith - heapWithout) / nodes, (double) (rssAfter - rssBefore) / nodes, nodes,
                firstInitialized);
    }
}
