package org.opensearchrouted.testbed;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.opensearch.Version;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;
import org.opensearch.plugins.PluginInfo;

/**
 * Starts one real OpenSearch node in this JVM, configured from command-line
 * flags, and prints exactly one line starting with {@code OSR-READY} on
 * standard output once the node's HTTP and transport ports are bound (or one
 * line starting with {@code OSR-FAILED} before exiting with status 1).
 *
 * <p>Flags (all {@code --name=value}):
 * <pre>
 *   --name                    node name (required)
 *   --cluster-name            cluster name (default osr-test)
 *   --home                    path.home (required); data, logs and config live below it unless given
 *   --data                    path.data (default HOME/data)
 *   --http-port               HTTP port on 127.0.0.1 (required)
 *   --transport-port          transport port on 127.0.0.1 (required)
 *   --http-publish-port       http.publish_port (optional: a proxy in front of the node)
 *   --transport-publish-port  transport.publish_port (optional)
 *   --seed-hosts              comma-separated host:port list (discovery.seed_hosts)
 *   --initial-managers        comma-separated node names (cluster.initial_cluster_manager_nodes);
 *                             empty with no seed hosts: single-node discovery
 *   --zone                    node.attr.zone
 *   --awareness               "zone" to set cluster.routing.allocation.awareness.attributes
 *   --write-threads           thread_pool.write.size (0: server default)
 *   --write-queue             thread_pool.write.queue_size (0: server default)
 *   --setting                 extra key=value setting (repeatable); a value [a,b] is a list,
 *                             [] the empty one (node.roles=[]: a coordinating-only node)
 *   --plugin                  class name of a plugin on the classpath to load, e.g.
 *                             org.opensearch.security.OpenSearchSecurityPlugin (repeatable)
 *   --watch-parent            true (default): exit when stdin reaches EOF or the parent process changes
 * </pre>
 * The heap is the JVM's own flag ({@code -Xmx}); the Go package testbed/cluster sets it.
 */
public final class Launcher {
    static final String READY = "OSR-READY";
    static final String FAILED = "OSR-FAILED";

    private Launcher() {}

    /** The Netty4 module's plugin class: 3.x renamed it. */
    static final String[] NETTY_PLUGINS = {
        "org.opensearch.transport.Netty4ModulePlugin", // 3.x
        "org.opensearch.transport.Netty4Plugin", // 2.x
    };

    /**
     * Builds a node with classpath plugins through Node's protected
     * constructor (Environment, Collection, boolean). Its collection holds
     * plugin classes in 2.x and PluginInfo records in 3.x: the generic
     * parameter type tells which.
     */
    static Node newNode(Environment env, List<Class<? extends Plugin>> plugins) throws Exception {
        Constructor<Node> ctor = Node.class.getDeclaredConstructor(Environment.class, Collection.class, boolean.class);
        ctor.setAccessible(true);
        Type param = ctor.getGenericParameterTypes()[1];
        Collection<Object> arg = new ArrayList<>();
        if (param.getTypeName().contains("PluginInfo")) {
            String javaVersion = System.getProperty("java.specification.version");
            for (Class<? extends Plugin> p : plugins) {
                arg.add(new PluginInfo(p.getName(), "classpath plugin", "NA", Version.CURRENT, javaVersion, p.getName(),
                    Collections.emptyList(), false));
            }
        } else {
            arg.addAll(plugins);
        }
        try {
            return ctor.newInstance(env, arg, true);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception) {
                throw (Exception) cause;
            }
            throw e;
        }
    }

    @SuppressWarnings("unchecked")
    static Class<? extends Plugin> nettyPlugin() throws ClassNotFoundException {
        for (String name : NETTY_PLUGINS) {
            try {
                return (Class<? extends Plugin>) Class.forName(name);
            } catch (ClassNotFoundException e) {
                // try the next name
            }
        }
        throw new ClassNotFoundException("no Netty4 plugin class on the classpath: " + String.join(", ", NETTY_PLUGINS));
    }

    public static void main(String[] args) {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        Map<String, List<String>> flags;
        try {
            flags = parse(args);
        } catch (IllegalArgumentException e) {
            out.println(FAILED + " bad flags: " + e.getMessage());
            System.exit(2);
            return;
        }
        // Before the node starts: Node.start() can block for a long time
        // (discovery.initial_state_timeout) and an orphan must exit anyway.
        if (Boolean.parseBoolean(one(flags, "watch-parent", "true"))) {
            watchParent();
        }
        Node node;
        try {
            node = start(flags);
        } catch (Throwable e) {
            StringBuilder why = new StringBuilder(String.valueOf(e));
            for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
                why.append(" | caused by: ").append(c);
            }
            out.println(FAILED + " " + why);
            e.printStackTrace(System.err);
            Runtime.getRuntime().halt(1);
            return;
        }
        final Node started = node;
        // The node's own threads are daemons: this one keeps the JVM alive
        // until shutdown (SIGTERM, System.exit), like OpenSearch's Bootstrap.
        CountDownLatch stop = new CountDownLatch(1);
        Thread keepAlive = new Thread(() -> {
            try {
                stop.await();
            } catch (InterruptedException e) {
                // exit
            }
        }, "osr-keepalive");
        keepAlive.setDaemon(false);
        keepAlive.start();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            closeQuietly(started);
            stop.countDown();
        }, "osr-shutdown"));
        out.println(READY + " name=" + one(flags, "name", "") + " http=127.0.0.1:" + one(flags, "http-port", "")
            + " transport=127.0.0.1:" + one(flags, "transport-port", "") + " pid=" + ProcessHandle.current().pid());
    }

    static Node start(Map<String, List<String>> flags) throws Exception {
        String name = required(flags, "name");
        Path home = Paths.get(required(flags, "home")).toAbsolutePath();
        Path data = Paths.get(one(flags, "data", home.resolve("data").toString())).toAbsolutePath();
        Path logs = home.resolve("logs");
        Path config = home.resolve("config");
        Files.createDirectories(data);
        Files.createDirectories(logs);
        Files.createDirectories(config);

        Settings.Builder b = Settings.builder()
            .put("cluster.name", one(flags, "cluster-name", "osr-test"))
            .put("node.name", name)
            .put("path.home", home.toString())
            .put("path.data", data.toString())
            .put("path.logs", logs.toString())
            .put("network.host", "127.0.0.1")
            .put("http.port", port(flags, "http-port"))
            .put("transport.port", port(flags, "transport-port"))
            // Test disks are shared and often fuller than the 85 % watermark.
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("action.auto_create_index", true);

        List<String> seeds = list(flags, "seed-hosts");
        List<String> managers = list(flags, "initial-managers");
        if (seeds.isEmpty() && managers.isEmpty()) {
            b.put("discovery.type", "single-node");
        } else {
            b.putList("discovery.seed_hosts", seeds);
            b.putList("cluster.initial_cluster_manager_nodes", managers);
        }
        putIfSet(b, flags, "http-publish-port", "http.publish_port");
        putIfSet(b, flags, "transport-publish-port", "transport.publish_port");
        putIfSet(b, flags, "zone", "node.attr.zone");
        putIfSet(b, flags, "awareness", "cluster.routing.allocation.awareness.attributes");
        putPositive(b, flags, "write-threads", "thread_pool.write.size");
        putPositive(b, flags, "write-queue", "thread_pool.write.queue_size");
        for (String kv : flags.getOrDefault("setting", Collections.emptyList())) {
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("--setting wants key=value, got " + kv);
            }
            String key = kv.substring(0, eq), value = kv.substring(eq + 1);
            if (value.startsWith("[") && value.endsWith("]")) {
                List<String> items = new ArrayList<>();
                for (String s : value.substring(1, value.length() - 1).split(",")) {
                    if (!s.isBlank()) {
                        items.add(s.trim());
                    }
                }
                b.putList(key, items);
            } else {
                b.put(key, value);
            }
        }

        Environment env = InternalSettingsPreparer.prepareEnvironment(b.build(), Collections.emptyMap(), config, () -> name);
        List<Class<? extends Plugin>> plugins = new ArrayList<>();
        plugins.add(nettyPlugin());
        for (String cls : flags.getOrDefault("plugin", Collections.emptyList())) {
            plugins.add(Class.forName(cls).asSubclass(Plugin.class));
        }
        Node node = newNode(env, plugins);
        node.start();
        return node;
    }

    /**
     * Exits the JVM when the process that started it goes away: stdin reaches
     * EOF (the parent's pipe closed) or the parent pid changes (reparented).
     * System.exit runs the shutdown hook (closing the node, once started); a
     * halt follows after 5 s in case closing hangs.
     */
    static void watchParent() {
        long parent = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
        Thread stdin = new Thread(() -> {
            InputStream in = System.in;
            byte[] buf = new byte[256];
            try {
                while (in.read(buf) >= 0) {
                    // The parent writes nothing; any input is ignored.
                }
            } catch (IOException e) {
                // Treated like EOF.
            }
            die("stdin closed");
        }, "osr-stdin-watch");
        stdin.setDaemon(true);
        stdin.start();
        Thread ppid = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
                long now = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
                if (now != parent) {
                    die("parent " + parent + " gone");
                }
            }
        }, "osr-parent-watch");
        ppid.setDaemon(true);
        ppid.start();
    }

    static void die(String why) {
        System.err.println("osr launcher: " + why + ", exiting");
        Thread halt = new Thread(() -> {
            try {
                Thread.sleep(5000);
            } catch (InterruptedException e) {
                // fall through
            }
            Runtime.getRuntime().halt(3);
        }, "osr-halt");
        halt.setDaemon(true);
        halt.start();
        System.exit(3);
    }

    static void closeQuietly(Node node) {
        try {
            node.close();
            node.awaitClose(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            System.err.println("osr launcher: close failed: " + e);
        }
    }

    static Map<String, List<String>> parse(String[] args) {
        Map<String, List<String>> m = new LinkedHashMap<>();
        for (String a : args) {
            if (!a.startsWith("--") || a.indexOf('=') < 0) {
                throw new IllegalArgumentException("want --name=value, got " + a);
            }
            int eq = a.indexOf('=');
            m.computeIfAbsent(a.substring(2, eq), k -> new ArrayList<>()).add(a.substring(eq + 1));
        }
        return m;
    }

    static String one(Map<String, List<String>> flags, String name, String def) {
        List<String> v = flags.get(name);
        return v == null || v.isEmpty() ? def : v.get(v.size() - 1);
    }

    static String required(Map<String, List<String>> flags, String name) {
        String v = one(flags, name, "");
        if (v.isEmpty()) {
            throw new IllegalArgumentException("--" + name + " is required");
        }
        return v;
    }

    static int port(Map<String, List<String>> flags, String name) {
        String v = required(flags, name);
        int p;
        try {
            p = Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " is not a port: " + v);
        }
        if (p < 1 || p > 65535) {
            throw new IllegalArgumentException("--" + name + " out of range: " + v);
        }
        return p;
    }

    static List<String> list(Map<String, List<String>> flags, String name) {
        String v = one(flags, name, "");
        List<String> out = new ArrayList<>();
        for (String s : v.split(",")) {
            if (!s.isBlank()) {
                out.add(s.trim());
            }
        }
        return out;
    }

    static void putIfSet(Settings.Builder b, Map<String, List<String>> flags, String flag, String key) {
        String v = one(flags, flag, "");
        if (!v.isEmpty()) {
            b.put(key, v);
        }
    }

    static void putPositive(Settings.Builder b, Map<String, List<String>> flags, String flag, String key) {
        String v = one(flags, flag, "0");
        int n;
        try {
            n = Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + flag + " is not an integer: " + v);
        }
        if (n < 0) {
            throw new IllegalArgumentException("--" + flag + " must be >= 0: " + v);
        }
        if (n > 0) {
            b.put(key, n);
        }
    }
}
