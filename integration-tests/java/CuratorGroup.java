// A Curator GroupMember for the cross-library membership test
// (integration-tests/tests/members/group.rs).
//
// Runs with Java's single-file source launcher against Debian's Curator 5 jars:
//   java -cp /usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//        CuratorGroup.java <connect[/chroot]> <membershipPath> <id> <payload>
//
// Starts the member, prints READY, then answers one line per command read from stdin:
//   members      -> "MEMBERS id=payload,id=payload" (getCurrentMembers, sorted by id, UTF-8)
//   payload <p>  -> "SET" (setThisData)
//   close        -> "CLOSED", then exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.retry.RetryOneTime;

public class CuratorGroup {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 10000, 5000, new RetryOneTime(100));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.out.println("ERROR not connected");
            System.exit(2);
        }
        GroupMember member = new GroupMember(client, args[1], args[2], args[3].getBytes(StandardCharsets.UTF_8));
        member.start();
        System.out.println("READY");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split(" ");
            if (cmd[0].equals("members")) {
                StringBuilder out = new StringBuilder("MEMBERS ");
                boolean first = true;
                for (Map.Entry<String, byte[]> e : new TreeMap<>(member.getCurrentMembers()).entrySet()) {
                    if (!first) {
                        out.append(',');
                    }
                    first = false;
                    out.append(e.getKey()).append('=').append(new String(e.getValue(), StandardCharsets.UTF_8));
                }
                System.out.println(out);
            } else if (cmd[0].equals("payload")) {
                member.setThisData(cmd[1].getBytes(StandardCharsets.UTF_8));
                System.out.println("SET");
            } else if (cmd[0].equals("close")) {
                member.close();
                client.close();
                System.out.println("CLOSED");
                System.out.flush();
                return;
            } else {
                System.out.println("ERROR unknown command " + line);
            }
            System.out.flush();
        }
        member.close();
        client.close();
    }
}
