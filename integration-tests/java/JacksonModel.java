// A typed node as Curator's x-async modeled framework stores it (JacksonModelSerializer:
// Jackson's ObjectMapper on a data class), for integration-tests/tests/members/models.rs.
// Debian has no curator-x-async jar, so this writes and reads the same bytes with Jackson
// itself, through Curator's framework.
//
//   java -cp <curator-recipes, slf4j-nop, jackson-databind/core/annotations jars> \
//        JacksonModel.java <connect[/chroot]>
//
// Prints READY once connected, then answers one line per command read from stdin:
//   write <path> <name> <replicas> -> "WRITTEN" (create().orSetData().creatingParentsIfNeeded())
//   read <path>                    -> "CONFIG <name> <replicas>" or "ERROR <exception class>"
//   close                          -> "CLOSED", then exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;

public class JacksonModel {
    public static class Config {
        public String name;
        public int replicas;
    }

    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
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
                    case "write":
                        Config c = new Config();
                        c.name = cmd[2];
                        c.replicas = Integer.parseInt(cmd[3]);
                        client.create().orSetData().creatingParentsIfNeeded().forPath(cmd[1], mapper.writeValueAsBytes(c));
                        System.out.println("WRITTEN");
                        break;
                    case "read":
                        Config r = mapper.readValue(client.getData().forPath(cmd[1]), Config.class);
                        System.out.println("CONFIG " + r.name + " " + r.replicas);
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
