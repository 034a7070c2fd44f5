// Curator's EnsembleTracker in the ensemble-tracking scenario (integration-tests/tests/ensemble/tracking.rs):
// a CuratorFramework with the tracker on (Curator's default) and a namespace, reporting the
// connection string it uses as the ensemble changes.
//
//   java -cp /usr/share/java/curator-framework.jar:/usr/share/java/slf4j-nop.jar \
//        CuratorEnsembleTracker.java <connect> <namespace>
//
// Prints "CONN <connection string>" at start and whenever it changes (polled every 50 ms),
// "SESSION <id>" once connected. Commands on stdin, one a line:
//   WRITE <name>   creates the ephemeral node /<name> through the namespaced client; prints
//                  "WROTE <path>" (the path on the server) or "ERROR <exception>"
//   CLOSE          closes the client; prints "DONE" and exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;

public class CuratorEnsembleTracker {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: CuratorEnsembleTracker <connect> <namespace>");
            System.exit(64);
        }
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(args[0])
                .namespace(args[1])
                .ensembleTracker(true)
                .sessionTimeoutMs(10000)
                .connectionTimeoutMs(5000)
                .retryPolicy(new RetryNTimes(50, 200))
                .build();
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.out.println("ERROR not connected");
            System.exit(2);
        }
        System.out.println("SESSION " + client.getZookeeperClient().getZooKeeper().getSessionId());
        Thread watcher = new Thread(() -> {
            String last = null;
            while (true) {
                String now = client.getZookeeperClient().getCurrentConnectionString();
                if (now != null && !now.equals(last)) {
                    System.out.println("CONN " + now);
                    System.out.flush();
                    last = now;
                }
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        watcher.setDaemon(true);
        watcher.start();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith("WRITE ")) {
                String name = "/" + line.substring(6).trim();
                try {
                    client.create().withMode(CreateMode.EPHEMERAL).forPath(name);
                    System.out.println("WROTE " + (client.getNamespace().isEmpty() ? "" : "/" + client.getNamespace()) + name);
                } catch (Exception e) {
                    System.out.println("ERROR " + e);
                }
                System.out.flush();
            } else if (line.equals("CLOSE")) {
                client.close();
                System.out.println("DONE");
                System.out.flush();
                return;
            }
        }
    }
}
