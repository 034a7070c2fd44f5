// The Java client's view of a Kerberos session (security_kerberos.rs): connects with the JAAS
// `Client` section given by -Djava.security.auth.login.config (a keytab), prints its
// identities ("ID <scheme> <id>") and the data of a node ("DATA <text>"), then "DONE".
// Usage: java -cp zookeeper.jar:slf4j-nop.jar KerberosWhoAmI.java HOSTS PATH
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ClientInfo;

public class KerberosWhoAmI {
    public static void main(String[] args) throws Exception {
        CountDownLatch authenticated = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(args[0], 10000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SaslAuthenticated) {
                authenticated.countDown();
            }
            if (event.getState() == Watcher.Event.KeeperState.AuthFailed) {
                System.out.println("AUTH_FAILED");
                System.exit(2);
            }
        });
        if (!authenticated.await(60, TimeUnit.SECONDS)) {
            System.out.println("NOT_AUTHENTICATED");
            System.exit(3);
        }
        for (ClientInfo info : zk.whoAmI()) {
            System.out.println("ID " + info.getAuthScheme() + " " + info.getUser());
        }
        byte[] data = zk.getData(args[1], false, null);
        System.out.println("DATA " + new String(data, StandardCharsets.UTF_8));
        zk.close();
        System.out.println("DONE");
    }
}
