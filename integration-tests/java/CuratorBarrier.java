// Curator's barriers for the cross-library barrier test (integration-tests/tests/members/barrier.rs).
//
// Runs with Java's single-file source launcher against Debian's Curator 5 jars:
//   java -cp /usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//        CuratorBarrier.java <connect[/chroot]>
//
// Prints READY, then answers one line per command read from stdin:
//   set <path>               -> "SET"            (DistributedBarrier.setBarrier)
//   remove <path>            -> "REMOVED"        (removeBarrier)
//   wait <path> <ms>         -> "WAITED true|false" (waitOnBarrier(ms))
//   enter <path> <qty> <ms>  -> "ENTERED true|false" (a new DistributedDoubleBarrier, enter(ms))
//   leave <path> <ms>        -> "LEFT true|false" (the same object's leave(ms))
//   close                    -> "CLOSED", then exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.retry.RetryOneTime;

public class CuratorBarrier {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 10000, 5000, new RetryOneTime(100));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.out.println("ERROR not connected");
            System.exit(2);
        }
        Map<String, DistributedDoubleBarrier> doubles = new HashMap<>();
        System.out.println("READY");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split(" ");
            switch (cmd[0]) {
                case "set":
                    new DistributedBarrier(client, cmd[1]).setBarrier();
                    System.out.println("SET");
                    break;
                case "remove":
                    new DistributedBarrier(client, cmd[1]).removeBarrier();
                    System.out.println("REMOVED");
                    break;
                case "wait":
                    System.out.println("WAITED " + new DistributedBarrier(client, cmd[1])
                        .waitOnBarrier(Long.parseLong(cmd[2]), TimeUnit.MILLISECONDS));
                    break;
                case "enter": {
                    DistributedDoubleBarrier b = new DistributedDoubleBarrier(client, cmd[1], Integer.parseInt(cmd[2]));
                    doubles.put(cmd[1], b);
                    System.out.println("ENTERED " + b.enter(Long.parseLong(cmd[3]), TimeUnit.MILLISECONDS));
                    break;
                }
                case "leave":
                    System.out.println("LEFT " + doubles.get(cmd[1]).leave(Long.parseLong(cmd[2]), TimeUnit.MILLISECONDS));
                    break;
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
