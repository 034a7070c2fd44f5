// Curator's view of protected node names, for the safe-writes tests
// (integration-tests/tests/members/writes.rs).
//
// Runs with Java's single-file source launcher against Debian's Curator 5 jars:
//   java -cp /usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//        CuratorProtected.java <connect[/chroot]>
//
// Prints READY once connected, then answers one line per command read from stdin:
//   check <name>           -> "NAME <isProtectedZNode> <extractProtectedId or -> <normalize>"
//   create <path> <mode>   -> "CREATED <path>": create().withProtection().withMode(mode)
//                             .creatingParentContainersIfNeeded() (mode: a CreateMode name)
//   close                  -> "CLOSED", then exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.imps.ProtectedUtils;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;

public class CuratorProtected {
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
            try {
                switch (cmd[0]) {
                    case "check":
                        System.out.println("NAME " + ProtectedUtils.isProtectedZNode(cmd[1]) + " "
                                + ProtectedUtils.extractProtectedId(cmd[1]).orElse("-") + " "
                                + ProtectedUtils.normalize(cmd[1]));
                        break;
                    case "create":
                        String made = client.create().creatingParentContainersIfNeeded().withProtection()
                                .withMode(CreateMode.valueOf(cmd[2])).forPath(cmd[1], new byte[0]);
                        System.out.println("CREATED " + made);
                        break;
                    case "close":
                        client.close();
                        System.out.println("CLOSED");
                        System.out.flush();
                        return;
                    default:
                        System.out.println("ERROR unknown command");
                }
            } catch (Exception e) {
                System.out.println("ERROR " + e.getClass().getSimpleName());
            }
            System.out.flush();
        }
    }
}
