// Curator's compressed node data for the cross-library tests
// (integration-tests/tests/client/compression.rs).
//
// Runs with Java's single-file source launcher against Debian's Curator 5 jars:
//   java -cp /usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//        CuratorCompression.java <connect[/chroot]>
//
// Prints READY once connected, then answers one line per command read from stdin (data is
// hex, "-" for empty):
//   create <path> <hex>  -> "CREATED" (create().compressed().creatingParentsIfNeeded())
//   set <path> <hex>     -> "SET" (setData().compressed())
//   get <path>           -> "DATA <hex>" (getData().decompressed()) or "ERROR <exception class>"
//   raw <path>           -> "DATA <hex>" (getData(), the stored bytes)
//   close                -> "CLOSED", then exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;

public class CuratorCompression {
    static byte[] unhex(String s) {
        if (s.equals("-")) {
            return new byte[0];
        }
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    static String hex(byte[] b) {
        if (b.length == 0) {
            return "-";
        }
        StringBuilder sb = new StringBuilder();
        for (byte x : b) {
            sb.append(String.format("%02x", x));
        }
        return sb.toString();
    }

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
                    case "create":
                        client.create().compressed().creatingParentsIfNeeded().forPath(cmd[1], unhex(cmd[2]));
                        System.out.println("CREATED");
                        break;
                    case "set":
                        client.setData().compressed().forPath(cmd[1], unhex(cmd[2]));
                        System.out.println("SET");
                        break;
                    case "get":
                        System.out.println("DATA " + hex(client.getData().decompressed().forPath(cmd[1])));
                        break;
                    case "raw":
                        System.out.println("DATA " + hex(client.getData().forPath(cmd[1])));
                        break;
                    case "close":
                        client.close();
                        System.out.println("CLOSED");
                        System.out.flush();
                        return;
                    default:
                        System.out.println("ERROR unknown command " + cmd[0]);
                }
            } catch (Exception e) {
                System.out.println("ERROR " + e.getClass().getName());
            }
            System.out.flush();
        }
    }
}
