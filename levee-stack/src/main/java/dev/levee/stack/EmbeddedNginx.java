package dev.levee.stack;

import dev.levee.nginx.NginxConfig;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.SystemTicker;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A real NGINX with Levee's configuration on free loopback ports, for {@code levee demo --nginx}
 * and the integration tests: {@code nginx -p PREFIX -c PREFIX/nginx.conf -g 'daemon off;'} as a
 * child process, with rate.lua and every log under PREFIX.
 *
 * <p>The configuration is {@link NginxConfig.Part#FULL} of the given settings with the S3 listener,
 * the status listener, the Lua directory and the logs replaced by PREFIX-local ones (the logs may
 * go to a directory of the caller's instead). PREFIX is a new temporary directory, deleted on close. Extra
 * http-level text may ask for more free ports with {@code {{port:NAME}}} ({@link #port(String)}).
 * A port taken between choosing and binding makes NGINX exit; the start is then retried with new
 * ports (5 attempts).
 */
public final class EmbeddedNginx implements AutoCloseable {

    private static final Pattern PORT = Pattern.compile("\\{\\{port:([a-z0-9_]+)}}");
    private static final long START_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(15);

    private final Process process;
    private final Path prefix;
    private final Path logs;
    private final Map<String, Integer> ports;
    private final NginxConfig config;

    private EmbeddedNginx(Process process, Path prefix, Path logs, Map<String, Integer> ports, NginxConfig config) {
        this.process = process;
        this.prefix = prefix;
        this.logs = logs;
        this.ports = ports;
        this.config = config;
    }

    /**
     * Finds the nginx binary: {@code LEVEE_NGINX}, then {@code nginx} and {@code openresty} on the
     * PATH, then the usual install locations.
     *
     * @return the binary, or empty when none is installed
     */
    public static Optional<Path> binary() {
        List<Path> candidates = new ArrayList<>();
        String env = System.getenv("LEVEE_NGINX");
        if (env != null && !env.isBlank()) {
            candidates.add(Path.of(env));
        }
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(File.pathSeparator)) {
                if (!dir.isEmpty()) {
                    candidates.add(Path.of(dir, "nginx"));
                    candidates.add(Path.of(dir, "openresty"));
                }
            }
        }
        candidates.add(Path.of("/usr/sbin/nginx"));
        candidates.add(Path.of("/usr/local/openresty/nginx/sbin/nginx"));
        candidates.add(Path.of("/usr/local/openresty/bin/openresty"));
        return candidates.stream().filter(Files::isExecutable).findFirst();
    }

    /**
     * Says why NGINX with the lua module cannot run here.
     *
     * @return the reason, or empty when nginx and its lua module are installed
     */
    public static Optional<String> unavailable() {
        Optional<Path> bin = binary();
        if (bin.isEmpty()) {
            return Optional.of("nginx is not installed (Debian/Ubuntu: apt-get install nginx libnginx-mod-http-lua)");
        }
        if (!NginxConfig.detectLuaModules().isEmpty()) {
            return Optional.empty();
        }
        // OpenResty and custom builds carry the module inside the binary: nginx -V names it
        try {
            Process p = new ProcessBuilder(bin.get().toString(), "-V").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor(10, TimeUnit.SECONDS);
            if (out.contains("lua-nginx-module") || out.contains("ngx_lua") || out.contains("openresty")) {
                return Optional.empty();
            }
        } catch (IOException e) {
            return Optional.of("cannot run " + bin.get() + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.of("interrupted while asking nginx for its modules");
        }
        return Optional.of("the NGINX lua module is not installed (Debian/Ubuntu: apt-get install libnginx-mod-http-lua;"
                + " or use OpenResty)");
    }

    /**
     * Starts NGINX in a new temporary prefix, deleted again by {@link #close()}.
     *
     * @param settings backend, levee-client, on_failure, timeout and any extra http text; listeners,
     *                 Lua directory and logs are replaced
     * @return the running NGINX, accepting connections on {@link #port()}
     * @throws IllegalStateException when NGINX is missing or does not start (with its error log)
     */
    public static EmbeddedNginx start(NginxConfig.Builder settings) {
        try {
            return start(settings, Files.createTempDirectory("levee-nginx-"), null);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Starts NGINX in a new temporary prefix with its logs in {@code logDir}, which outlives
     * {@link #close()}. The prefix stays under the temporary directory because NGINX's workers,
     * unprivileged when started by root, must reach rate.lua; the logs are opened by the master.
     *
     * @param settings see {@link #start(NginxConfig.Builder)}
     * @param logDir   directory for access.log, error.log and stdout.log (created when missing)
     * @return the running NGINX
     * @throws IllegalStateException when NGINX is missing or does not start (with its error log)
     */
    public static EmbeddedNginx start(NginxConfig.Builder settings, Path logDir) {
        try {
            Path dir = Files.createTempDirectory("levee-nginx-");
            Files.createDirectories(logDir);
            return start(settings, dir, logDir.toAbsolutePath());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static EmbeddedNginx start(NginxConfig.Builder settings, Path prefix, Path logDir) {
        Path bin = binary().orElseThrow(() -> new IllegalStateException(unavailable().orElse("nginx not found")));
        Path dir = prefix.toAbsolutePath();
        Path logs = logDir == null ? dir.resolve("logs") : logDir;
        try {
            prepare(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare NGINX prefix " + dir, e);
        }
        String failure = "";
        for (int attempt = 1; attempt <= 5; attempt++) {
            Map<String, Integer> ports = new LinkedHashMap<>();
            ports.put("s3", LoopbackPorts.free());
            ports.put("status", LoopbackPorts.free());
            NginxConfig.Builder b = settings.copy()
                    .listen(new HostPort("127.0.0.1", ports.get("s3")))
                    .statusListen(new HostPort("127.0.0.1", ports.get("status")))
                    .luaDir(dir.resolve("lua"))
                    .accessLog(logs.resolve("access.log").toString())
                    .errorLog(logs.resolve("error.log").toString())
                    .extraHttp(withPorts(settings.extraHttpText(), ports));
            NginxConfig cfg = b.build();
            Path conf = dir.resolve("nginx.conf");
            Path out = logs.resolve("stdout.log");
            try {
                Files.writeString(conf, cfg.render(NginxConfig.Part.FULL), StandardCharsets.UTF_8);
                Files.deleteIfExists(dir.resolve("logs/nginx.pid"));
                Process p = new ProcessBuilder(bin.toString(), "-p", dir + "/", "-c", conf.toString(),
                        "-g", "daemon off;")
                        .redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.appendTo(out.toFile()))
                        .start();
                if (awaitListening(p, ports.get("s3"), dir)) {
                    return new EmbeddedNginx(p, dir, logs, Map.copyOf(ports), cfg);
                }
                stop(p);
                failure = tail(out) + tail(logs.resolve("error.log"));
                if (!failure.contains("Address already in use")) {
                    break;
                }
            } catch (IOException e) {
                failure = e.toString();
                break;
            }
        }
        deleteTree(dir);
        throw new IllegalStateException("NGINX did not start: " + failure.strip());
    }

    private static void prepare(Path dir) throws IOException {
        // when run as root, NGINX's workers run as an unprivileged user: they must reach rate.lua
        var open = PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x"));
        for (String sub : new String[] {"", "lua", "logs", "tmp"}) {
            Path d = dir.resolve(sub);
            Files.createDirectories(d, open);
            Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
        Path lua = dir.resolve("lua/rate.lua");
        Files.writeString(lua, NginxConfig.rateLua(), StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(lua, PosixFilePermissions.fromString("rw-r--r--"));
    }

    private static String withPorts(String text, Map<String, Integer> ports) {
        Matcher m = PORT.matcher(text);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            int port = ports.computeIfAbsent(m.group(1), k -> LoopbackPorts.free());
            m.appendReplacement(out, Integer.toString(port));
        }
        m.appendTail(out);
        return out.toString();
    }

    private static boolean awaitListening(Process p, int port, Path dir) {
        long deadline = SystemTicker.INSTANCE.read() + START_TIMEOUT_NS;
        while (SystemTicker.INSTANCE.read() - deadline < 0) {
            if (!p.isAlive()) {
                return false;
            }
            if (Files.exists(dir.resolve("logs/nginx.pid")) && accepts(port)) {
                return true;
            }
            try {
                Thread.sleep(20); // NGINX signals readiness only by listening; bounded by the deadline
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return false;
    }

    private static boolean accepts(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 200);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static String tail(Path file) {
        try {
            if (!Files.exists(file)) {
                return "";
            }
            List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size())) + "\n";
        } catch (IOException e) {
            return "";
        }
    }

    private static void stop(Process p) {
        // SIGTERM: NGINX's master stops its workers and exits
        p.destroy();
        try {
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException e) {
            // a leftover temporary directory is harmless
        }
    }

    /** Returns the S3 listener's port on 127.0.0.1. */
    public int port() {
        return ports.get("s3");
    }

    /** Returns the port of the status listener ({@code GET /levee/stats}) on 127.0.0.1. */
    public int statusPort() {
        return ports.get("status");
    }

    /**
     * Returns a port asked for with {@code {{port:NAME}}} in the extra http text.
     *
     * @throws IllegalArgumentException when no such port was asked for
     */
    public int port(String name) {
        Integer p = ports.get(name);
        if (p == null) {
            throw new IllegalArgumentException("no port named " + name);
        }
        return p;
    }

    /** Returns the prefix directory. */
    public Path prefix() {
        return prefix;
    }

    /** Returns the S3 server's access log (format {@code levee}). */
    public Path accessLog() {
        return logs.resolve("access.log");
    }

    /** Returns NGINX's error log. */
    public Path errorLog() {
        return logs.resolve("error.log");
    }

    /** Returns the configuration NGINX runs with. */
    public NginxConfig config() {
        return config;
    }

    /** Returns whether the NGINX master process is running. */
    public boolean isAlive() {
        return process.isAlive();
    }

    /** Stops NGINX (SIGTERM, then SIGKILL after 10 s) and deletes its temporary prefix. */
    @Override
    public void close() {
        stop(process);
        deleteTree(prefix);
    }
}
