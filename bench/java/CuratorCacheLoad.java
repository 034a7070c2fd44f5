// The Java side of bench's `cache` workload (bench/src/workloads/cache.rs): loads a subtree
// with Curator's CuratorCache (Debian's Curator 5.4) and reports time, CPU and memory.
//
//   java -XX:+UseSerialGC -Xmx1g -cp /usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//        CuratorCacheLoad.java <connect> <path> <expected nodes>
//
// First load: from start() to initialized(), then the heap in use after a full GC, minus the
// same before the load, per cached node (and the RSS growth). The cache is closed (which
// clears it) and a second, warm load is timed with the process CPU it used. Prints one line:
//   CACHE <first ms> <second ms> <second cpu ms> <heap bytes per node> <rss KiB per node> <nodes>
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

    static CuratorCache load(CuratorFramework client, String path) throws Exception {
        CuratorCache cache = CuratorCache.build(client, path);
        CountDownLatch initialized = new CountDownLatch(1);
        cache.listenable().addListener(CuratorCacheListener.builder().forInitialized(initialized::countDown).build());
        cache.start();
        if (!initialized.await(600, TimeUnit.SECONDS)) {
            System.out.println("ERROR not initialized");
            System.exit(3);
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
        long heapBefore = heapAfterGc();
        long rssBefore = rssKib();
        long t0 = System.nanoTime();
        CuratorCache first = load(client, args[1]);
        long firstMs = (System.nanoTime() - t0) / 1_000_000;
        long nodes = first.size();
        long heapAfter = heapAfterGc();
        long rssAfter = rssKib();
        if (nodes != expected) {
            System.out.println("ERROR cached " + nodes + " nodes, expected " + expected);
            System.exit(4);
        }
        first.close();
        heapAfterGc();
        long c0 = cpuNanos();
        long t1 = System.nanoTime();
        CuratorCache second = load(client, args[1]);
        long secondMs = (System.nanoTime() - t1) / 1_000_000;
        long cpuMs = (cpuNanos() - c0) / 1_000_000;
        second.close();
        client.close();
        System.out.printf("CACHE %d %d %d %.1f %.3f %d%n", firstMs, secondMs, cpuMs,
                (double) (heapAfter - heapBefore) / nodes, (double) (rssAfter - rssBefore) / nodes, nodes);
    }
}
