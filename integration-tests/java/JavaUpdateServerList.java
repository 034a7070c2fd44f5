// The Java client's side of the rebalancing comparison (integration-tests/tests/ensemble/rebalance.rs):
// N sessions with ZooKeeper's own client, then `ZooKeeper.updateServerList` on each.
//
//   java -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-nop.jar \
//        JavaUpdateServerList.java <connect> <sessions>
//
// Prints "SESSIONS <id> <id> ..." (decimal) once every session is connected, then reads
// commands from stdin, one a line:
//   UPDATE <connect>   updateServerList on every session; prints "UPDATED moved=<n> on={...}"
//                      twice, 3 s and 10 s after: the sessions whose server changed and where
//                      each is, as the client itself sees it
//   CLOSE              closes every session; prints "DONE" and exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.ZooKeeper;

public class JavaUpdateServerList {
    /** A session that tells the server it is connected to (the client's own view). */
    static class Zk extends ZooKeeper {
        Zk(String connect, org.apache.zookeeper.Watcher watcher) throws java.io.IOException {
            super(connect, 20000, watcher);
        }

        SocketAddress remote() {
            return testableRemoteSocketAddress();
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: JavaUpdateServerList <connect> <sessions>");
            System.exit(64);
        }
        int n = Integer.parseInt(args[1]);
        CountDownLatch connected = new CountDownLatch(n);
        List<Zk> sessions = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            final boolean[] seen = {false};
            sessions.add(new Zk(args[0], event -> {
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
                List<SocketAddress> before = new ArrayList<>();
                for (Zk zk : sessions) {
                    before.add(zk.remote());
                    zk.updateServerList(line.substring(7).trim());
                }
                // The movers drop their connection and connect elsewhere in the background: where
                // every session is (the client's own view) 3 s and 10 s later.
                StringBuilder report = new StringBuilder("UPDATED");
                for (int wait : new int[] {3000, 7000}) {
                    Thread.sleep(wait);
                    int moved = 0;
                    java.util.TreeMap<String, Integer> on = new java.util.TreeMap<>();
                    for (int i = 0; i < sessions.size(); i++) {
                        SocketAddress now = sessions.get(i).remote();
                        if (now == null || !now.equals(before.get(i))) {
                            moved++;
                        }
                        on.merge(String.valueOf(now), 1, Integer::sum);
                    }
                    report.append(" moved=").append(moved).append(" on=").append(on);
                }
                System.out.println(report);
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
