// Drives the real ZooKeeper 3.8 Java client through every client operation, so that
// recorder.py can log what goes over the wire. Each step is announced on the recorder's
// control port ("mark family/step") before it runs, so the log can be cut into named frames.
//
// Usage: java -cp <zookeeper.jar:slf4j binding:.> Capture <proxyPort> <controlPort>
// Every wait below is bounded; the program exits non-zero if a step does not complete.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs.Ids;
import org.apache.zookeeper.ZooDefs.Perms;
import org.apache.zookeeper.admin.ZooKeeperAdmin;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;

public class Capture {
    static PrintWriter ctlOut;
    static BufferedReader ctlIn;
    static final BlockingQueue<WatchedEvent> events = new LinkedBlockingQueue<>();

    static void control(String line) throws Exception {
        ctlOut.println(line);
        ctlOut.flush();
        if (!"ok".equals(ctlIn.readLine())) {
            throw new IllegalStateException("recorder did not answer " + line);
        }
    }

    static void mark(String label) throws Exception {
        // Let stray replies of the previous step land first.
        Thread.sleep(150);
        control("mark " + label);
        System.err.println("step " + label);
    }

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static WatchedEvent awaitEvent(Watcher.Event.EventType type, Watcher.Event.KeeperState state)
            throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            WatchedEvent e = events.poll(100, TimeUnit.MILLISECONDS);
            if (e != null && e.getType() == type && e.getState() == state) {
                return e;
            }
        }
        throw new IllegalStateException("no event " + type + "/" + state);
    }

    static void reconnect() throws Exception {
        events.clear();
        control("cut");
        awaitEvent(Watcher.Event.EventType.None, Watcher.Event.KeeperState.Disconnected);
        awaitEvent(Watcher.Event.EventType.None, Watcher.Event.KeeperState.SyncConnected);
    }

    public static void main(String[] args) throws Exception {
        String hosts = "127.0.0.1:" + args[0];
        try (Socket ctl = new Socket("127.0.0.1", Integer.parseInt(args[1]))) {
            ctl.setSoTimeout(10_000);
            ctlOut = new PrintWriter(ctl.getOutputStream());
            ctlIn = new BufferedReader(new InputStreamReader(ctl.getInputStream()));
            run(hosts);
        }
        System.err.println("capture done");
    }

    static void run(String hosts) throws Exception {
        List<ACL> open = Ids.OPEN_ACL_UNSAFE;
        Stat stat = new Stat();

        mark("connect/new");
        // canBeReadOnly = true so that the ConnectRequest carries readOnly = 1.
        ZooKeeperAdmin zk = new ZooKeeperAdmin(hosts, 4000, events::add, true);
        awaitEvent(Watcher.Event.EventType.None, Watcher.Event.KeeperState.SyncConnected);

        mark("node/create.persistent");
        zk.create("/zkcap", b("root"), open, CreateMode.PERSISTENT);
        mark("node/create.ephemeral");
        zk.create("/zkcap/eph", b("e"), open, CreateMode.EPHEMERAL);
        mark("node/create.persistent_sequential");
        zk.create("/zkcap/seq-", b("s"), open, CreateMode.PERSISTENT_SEQUENTIAL);
        mark("node/create.ephemeral_sequential");
        zk.create("/zkcap/eseq-", new byte[0], open, CreateMode.EPHEMERAL_SEQUENTIAL);
        mark("node/create.null_data");
        zk.create("/zkcap/nulldata", null, open, CreateMode.PERSISTENT);
        mark("node/create.node_exists");
        try {
            zk.create("/zkcap", b("again"), open, CreateMode.PERSISTENT);
            throw new IllegalStateException("expected NodeExists");
        } catch (KeeperException.NodeExistsException expected) {
            // the error reply is what we want on the wire
        }
        mark("node/create2");
        zk.create("/zkcap/c2", b("two"), open, CreateMode.PERSISTENT, stat);
        mark("node/create.container");
        zk.create("/zkcap/cont", b("box"), open, CreateMode.CONTAINER);
        mark("node/create.ttl");
        zk.create("/zkcap/ttl", b("ttl"), open, CreateMode.PERSISTENT_WITH_TTL, stat, 60_000L);
        mark("node/exists.hit");
        zk.exists("/zkcap", false);
        mark("node/exists.no_node_watch");
        zk.exists("/zkcap/missing", true);
        mark("node/get_data");
        zk.getData("/zkcap", false, stat);
        mark("node/get_data.null");
        zk.getData("/zkcap/nulldata", false, stat);
        mark("node/get_data.watch");
        zk.create("/zkcap/w", b("v1"), open, CreateMode.PERSISTENT);
        zk.getData("/zkcap/w", true, stat);
        mark("node/set_data.fires_watch");
        zk.setData("/zkcap/w", b("v2"), -1);
        awaitEvent(Watcher.Event.EventType.NodeDataChanged, Watcher.Event.KeeperState.SyncConnected);
        mark("node/sync");
        CountDownLatch synced = new CountDownLatch(1);
        zk.sync("/zkcap", (rc, path, ctx) -> synced.countDown(), null);
        if (!synced.await(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException("sync timed out");
        }

        mark("acl/get_acl");
        zk.getACL("/zkcap", stat);
        mark("acl/set_acl");
        zk.create("/zkcap/acl", b("a"), open, CreateMode.PERSISTENT);
        zk.setACL("/zkcap/acl", Arrays.asList(
                new ACL(Perms.ALL, Ids.ANYONE_ID_UNSAFE),
                new ACL(Perms.READ | Perms.WRITE, new Id("ip", "127.0.0.1"))), -1);

        mark("children/get_children");
        zk.create("/zkcap/kids", null, open, CreateMode.PERSISTENT);
        zk.create("/zkcap/kids/a", b("1"), open, CreateMode.PERSISTENT);
        zk.create("/zkcap/kids/b", b("2"), open, CreateMode.PERSISTENT);
        zk.getChildren("/zkcap/kids", false);
        mark("children/get_children.watch");
        zk.getChildren("/zkcap/kids", true);
        mark("children/get_children2");
        zk.getChildren("/zkcap/kids", false, stat);
        mark("children/get_ephemerals");
        zk.getEphemerals("/zkcap");
        mark("children/get_all_children_number");
        zk.getAllChildrenNumber("/zkcap");

        mark("multi/multi.ok");
        zk.multi(Arrays.asList(
                Op.create("/zkcap/m1", b("m1"), open, CreateMode.PERSISTENT),
                Op.create("/zkcap/mc", b("mc"), open, CreateMode.CONTAINER),
                Op.create("/zkcap/mt", b("mt"), open, CreateMode.PERSISTENT_WITH_TTL, 60_000L),
                Op.setData("/zkcap/m1", b("m1b"), 0),
                Op.check("/zkcap/m1", 1),
                Op.delete("/zkcap/mt", -1)));
        mark("multi/multi.fail");
        try {
            zk.multi(Arrays.asList(
                    Op.create("/zkcap/m2", b("m2"), open, CreateMode.PERSISTENT),
                    Op.check("/zkcap", 99),
                    Op.delete("/zkcap/m1", -1)));
            throw new IllegalStateException("expected BadVersion");
        } catch (KeeperException.BadVersionException expected) {
            // the error results are what we want on the wire
        }
        mark("multi/multi_read");
        List<OpResult> read = zk.multi(Arrays.asList(
                Op.getData("/zkcap/m1"),
                Op.getChildren("/zkcap/kids"),
                Op.getData("/zkcap/missing")));
        if (read.size() != 3) {
            throw new IllegalStateException("multiRead results: " + read.size());
        }

        // One-shot watches held now: data on /zkcap/w2, exist on /zkcap/missing, child on
        // /zkcap/kids. Dropping the connection makes the client resume the session and send
        // SetWatches (no persistent watches yet).
        mark("watch/one_shot_watches");
        zk.create("/zkcap/w2", b("w2"), open, CreateMode.PERSISTENT);
        zk.getData("/zkcap/w2", true, stat);
        mark("watch/reconnect.set_watches");
        reconnect();

        mark("watch/add_watch.persistent");
        zk.create("/zkcap/p", b("p"), open, CreateMode.PERSISTENT);
        zk.addWatch("/zkcap/p", AddWatchMode.PERSISTENT);
        mark("watch/add_watch.persistent_recursive");
        zk.create("/zkcap/r", b("r"), open, CreateMode.PERSISTENT);
        zk.addWatch("/zkcap/r", AddWatchMode.PERSISTENT_RECURSIVE);
        mark("watch/event.persistent_data_changed");
        zk.setData("/zkcap/p", b("p2"), -1);
        awaitEvent(Watcher.Event.EventType.NodeDataChanged, Watcher.Event.KeeperState.SyncConnected);
        mark("watch/event.recursive_node_created");
        zk.create("/zkcap/r/child", b("c"), open, CreateMode.PERSISTENT);
        awaitEvent(Watcher.Event.EventType.NodeCreated, Watcher.Event.KeeperState.SyncConnected);
        mark("watch/reconnect.set_watches2");
        reconnect();

        mark("watch/check_watches");
        Watcher mine = e -> { };
        zk.getData("/zkcap/w", mine, stat);
        zk.removeWatches("/zkcap/w", mine, Watcher.WatcherType.Data, false);
        mark("watch/remove_watches");
        zk.removeAllWatches("/zkcap/kids", Watcher.WatcherType.Children, false);

        mark("auth/add_auth");
        zk.addAuthInfo("digest", b("user:secret"));
        zk.exists("/zkcap", false); // ordered after the auth reply
        mark("auth/who_am_i");
        zk.whoAmI();
        mark("acl/create_creator_all");
        zk.create("/zkcap/mine", b("m"), Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
        zk.getACL("/zkcap/mine", stat);

        mark("config/get_config");
        zk.getConfig(false, stat);
        mark("config/reconfig.disabled");
        try {
            zk.reconfigure("server.2=127.0.0.1:2888:3888;2182", null, null, -1, stat);
        } catch (KeeperException expected) {
            // reconfig is disabled on a standalone server; the request is still on the wire
        }

        mark("node/delete.not_empty");
        try {
            zk.delete("/zkcap", -1);
            throw new IllegalStateException("expected NotEmpty");
        } catch (KeeperException.NotEmptyException expected) {
            // error reply
        }
        mark("node/delete");
        zk.delete("/zkcap/m1", 1);

        mark("session/ping");
        // Idle for longer than half the read timeout (2/3 of 4000 ms): the client pings.
        Thread.sleep(3000);
        mark("session/close");
        zk.close();
        Thread.sleep(300);
        mark("end");
    }
}
