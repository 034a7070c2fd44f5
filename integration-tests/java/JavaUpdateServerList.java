// The Java client's side of the rebalancing comparison (integration-tests/tests/ensemble_rebalance.rs):
// N sessions with ZooKeeper's own client, then `ZooKeeper.updateServerList` on each.
//
//   java -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-nop.jar \
//        JavaUpdateServerList.java <connect> <sessions>
//
// Prints "SESSIONS <id> <id> ..." (decimal) once every session is connected, then reads
// commands from stdin, one a line:
//   UPDATE <connect>   updateServerList on every session; prints "UPDATED" (the moves happen
//                      in the background: count them with `cons`)
//   CLOSE              closes every session; prints "DONE" and exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.ZooKeeper;

public class JavaUpdateServerList {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: JavaUpdateServerList <connect> <sessions>");
            System.exit(64);
        }
        int n = Integer.parseInt(args[1]);
        CountDownLatch connected = new CountDownLatch(n);
        List<ZooKeeper> sessions = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            final boolean[] seen = {false};
            sessions.add(new ZooKeeper(args[0], 20000, event -> {
                synchronized (seen) {
                    if (event.getState() == org.apache.zookeeper.Watcher.Event.KeeperState.SyncConnected && !seen[0]) {
                        seen[0] = true;
                        connected.countDown();
                    }
                }
            }));
        }
        if (!connected.await(60, TimeUnit.SECONDS)) {
            System.out.println("ERROR not all connected");
            System.exit(2);
        }
        StringBuilder ids = new StringBuilder("SESSIONS");
        for (ZooKeeper zk : sessions) {
            ids.append(' ').append(zk.getSessionId());
        }
        System.out.println(ids);
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith("UPDATE ")) {
                for (ZooKeeper zk : sessions) {
                    zk.updateServerList(line.substring(7).trim());
                }
                System.out.println("UPDATED");
                System.out.flush();
            } else if (line.equals("CLOSE")) {
                for (ZooKeeper zk : sessions) {
                    zk.close();
                }
                System.out.println("DONE");
                System.out.flush();
                return;
            }
        }
    }
}
