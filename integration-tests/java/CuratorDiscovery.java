// curator-x-discovery (Debian's libcurator-discovery-java, Curator 5.4) for the cross-library
// discovery test (integration-tests/tests/members/discovery.rs).
//
// Runs with Java's single-file source launcher:
//   java -cp curator-recipes.jar:curator-x-discovery.jar:jackson-*.jar:slf4j-nop.jar \
//        CuratorDiscovery.java <connect[/chroot]> <basePath>
//
// The payload class is java.util.Map (default JsonInstanceSerializer, compatible mode).
// Prints READY, then answers one line per command read from stdin:
//   register <name> <id> <address> <port> <sslPort> -> "REGISTERED" (payload {zone: java, weight: 3},
//                                                     uriSpec {scheme}://{address}:{port}, DYNAMIC)
//   names                 -> "NAMES a,b"
//   instances <name>      -> "INSTANCES <n>", then n lines: each instance re-serialized, sorted by id
//   cache-start <name>    -> "STARTED" (a ServiceCache)
//   cache <name>          -> "CACHE id,id" (the cache's instances, sorted)
//   cache-json <name> <id> -> "JSON <instance re-serialized>" or "JSON none"
//   close                 -> "CLOSED", then exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceType;
import org.apache.curator.x.discovery.UriSpec;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;

public class CuratorDiscovery {
    @SuppressWarnings({"rawtypes", "unchecked"})
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], 10000, 5000, new RetryOneTime(100));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.out.println("ERROR not connected");
            System.exit(2);
        }
        JsonInstanceSerializer<Map> serializer = new JsonInstanceSerializer<>(Map.class);
        ServiceDiscovery<Map> discovery = ServiceDiscoveryBuilder.builder(Map.class)
            .client(client).basePath(args[1]).serializer(serializer).build();
        discovery.start();
        Map<String, ServiceCache<Map>> caches = new HashMap<>();
        System.out.println("READY");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split(" ");
            switch (cmd[0]) {
                case "register": {
                    Map<String, Object> payload = new LinkedHashMap<>();
                    payload.put("zone", "java");
                    payload.put("weight", 3);
                    ServiceInstance<Map> instance = ServiceInstance.<Map>builder()
                        .name(cmd[1]).id(cmd[2]).address(cmd[3])
                        .port(Integer.parseInt(cmd[4])).sslPort(Integer.parseInt(cmd[5]))
                        .payload(payload).uriSpec(new UriSpec("{scheme}://{address}:{port}"))
                        .serviceType(ServiceType.DYNAMIC).build();
                    discovery.registerService(instance);
                    System.out.println("REGISTERED");
                    break;
                }
                case "names":
                    System.out.println("NAMES " + String.join(",", new TreeMap<String, String>() {{
                        for (String n : discovery.queryForNames()) put(n, n);
                    }}.keySet()));
                    break;
                case "instances": {
                    TreeMap<String, String> sorted = new TreeMap<>();
                    for (ServiceInstance<Map> i : discovery.queryForInstances(cmd[1])) {
                        sorted.put(i.getId(), new String(serializer.serialize(i), StandardCharsets.UTF_8));
                    }
                    System.out.println("INSTANCES " + sorted.size());
                    for (String json : sorted.values()) {
                        System.out.println(json);
                    }
                    break;
                }
                case "cache-start": {
                    ServiceCache<Map> cache = discovery.serviceCacheBuilder().name(cmd[1]).build();
                    cache.start();
                    caches.put(cmd[1], cache);
                    System.out.println("STARTED");
                    break;
                }
                case "cache": {
                    List<String> ids = new ArrayList<>();
                    for (ServiceInstance<Map> i : caches.get(cmd[1]).getInstances()) {
                        ids.add(i.getId());
                    }
                    ids.sort(null);
                    System.out.println("CACHE " + String.join(",", ids));
                    break;
                }
                case "cache-json": {
                    String out = "none";
                    for (ServiceInstance<Map> i : caches.get(cmd[1]).getInstances()) {
                        if (i.getId().equals(cmd[2])) {
                            out = new String(serializer.serialize(i), StandardCharsets.UTF_8);
                        }
                    }
                    System.out.println("JSON " + out);
                    break;
                }
                case "close":
                    for (ServiceCache<Map> c : caches.values()) {
                        c.close();
                    }
                    discovery.close();
                    client.close();
                    System.out.println("CLOSED");
                    System.out.flush();
                    return;
                default:
                    System.out.println("ERROR unknown command " + line);
            }
            System.out.flush();
        }
        discovery.close();
        client.close();
    }
}
