package dev.levee.it;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One {@code levee gateway} of a site test as its own process ({@link RoleProcess}, started with the
 * command line an operator types), in front of an S3 backend, with a {@link TcpProxy} in front of it
 * that counts the bytes leaving it ({@link #egressBytes()}: issue 11's "bytes are counted where they
 * leave the gateways"). Clients should use {@link #endpoint()} (through the proxy); {@link #directEndpoint()}
 * bypasses it. {@link #restart()} starts a new process (a new incarnation) with the same command line
 * and ports, behind the same proxy, whose counters go on.
 *
 * <p>The command line is {@code gateway --listen 127.0.0.1:P --admin 127.0.0.1:A --backend B --no-enforce
 * --principals FILE --health-token-file FILE --log-target file:DIR/NAME.log --log-level INFO} followed
 * by the caller's extra arguments (budgets, {@code --etcd} with {@link EtcdLinks#endpoints()}, …); a
 * flag given twice takes picocli's last value.
 */
final class SiteGateway implements AutoCloseable {

    /** The bearer token of {@code /health/ready} (written to {@code DIR/health.token}). */
    static final String TOKEN = "site-it-health-token-0123456789";

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path dir;
    private final String name;
    private final List<String> args;
    private final int port;
    private final int admin;
    private final TcpProxy front;
    private volatile RoleProcess process;
    private int incarnation;

    private SiteGateway(Path dir, String name, List<String> args, int port, int admin) {
        this.dir = dir;
        this.name = name;
        this.args = List.copyOf(args);
        this.port = port;
        this.admin = admin;
        this.front = TcpProxy.start(port);
    }

    /**
     * Writes a principals file ({@code accounts: NAME: keys: [KEY]}) for {@code levee gateway --principals}.
     *
     * @param file     where to write it
     * @param accounts account name → access key id, in order
     * @return {@code file}
     */
    static Path writePrincipals(Path file, Map<String, String> accounts) {
        StringBuilder yaml = new StringBuilder("accounts:\n");
        accounts.forEach((a, k) -> yaml.append("  ").append(a).append(":\n    keys: [").append(k).append("]\n"));
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            Files.writeString(file, yaml);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return file;
    }

    /**
     * Starts a gateway process (not yet listening: see {@link #awaitListening()}) and its egress proxy.
     * Start several before awaiting any: JVM starts overlap.
     *
     * @param dir        directory of its output, log and the health token file
     * @param name       short name (output {@code NAME.out}, log {@code NAME.log})
     * @param backend    the S3 backend's {@code host:port}
     * @param principals the principals file ({@link #writePrincipals(Path, Map)})
     * @param extraArgs  arguments appended to the command line
     * @return the starting gateway (close it)
     */
    static SiteGateway start(Path dir, String name, String backend, Path principals, List<String> extraArgs) {
        try {
            Files.createDirectories(dir);
            Files.writeString(dir.resolve("health.token"), TOKEN + "\n");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        int[] ports = EtcdCluster.freePorts(2);
        List<String> args = new ArrayList<>(List.of("gateway",
                "--listen", "127.0.0.1:" + ports[0], "--admin", "127.0.0.1:" + ports[1],
                "--backend", backend, "--no-enforce",
                "--principals", principals.toAbsolutePath().toString(),
                "--health-token-file", dir.resolve("health.token").toAbsolutePath().toString(),
                "--log-target", "file:" + dir.resolve(name + ".log").toAbsolutePath(), "--log-level", "INFO"));
        args.addAll(extraArgs);
        SiteGateway g = new SiteGateway(dir, name, args, ports[0], ports[1]);
        g.launch();
        return g;
    }

    /** Waits (up to 60 s) until the current process prints that it listens. @return this */
    SiteGateway awaitListening() {
        process.awaitOutput("levee gateway listening", Duration.ofSeconds(60));
        return this;
    }

    /** Returns the gateway's name. */
    String name() {
        return name;
    }

    /** Returns the gateway's own S3 port (the proxy forwards to it). */
    int port() {
        return port;
    }

    /** Returns the gateway's admin port ({@code /health/ready}, {@code /metrics}). */
    int adminPort() {
        return admin;
    }

    /** Returns the egress proxy in front of the gateway. */
    TcpProxy front() {
        return front;
    }

    /** Returns the S3 endpoint for clients, through the egress proxy. */
    URI endpoint() {
        return URI.create(front.endpoint());
    }

    /** Returns the gateway's own S3 endpoint (bytes there are not counted). */
    URI directEndpoint() {
        return URI.create("http://127.0.0.1:" + port);
    }

    /** Returns the bytes that left the gateway towards clients through the proxy since it started (all incarnations). */
    long egressBytes() {
        return front.bytesToClient();
    }

    /** Returns the current process. */
    RoleProcess process() {
        return process;
    }

    /** Returns the command line after {@code levee}. */
    List<String> args() {
        return args;
    }

    /**
     * Returns the gateway's {@code GET /health/ready} (with the bearer token) as JSON.
     *
     * @throws IOException when it does not answer in 2 s or the answer is not JSON
     */
    JsonNode ready() throws IOException {
        try {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin + "/health/ready"))
                    .header("Authorization", "Bearer " + TOKEN).timeout(Duration.ofSeconds(2)).build(),
                    HttpResponse.BodyHandlers.ofString());
            return JSON.readTree(r.body());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }

    /**
     * Returns the gateway's {@code GET /metrics} (Prometheus text).
     *
     * @throws IOException when it does not answer in 2 s
     */
    String metrics() throws IOException {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin + "/metrics"))
                    .header("Authorization", "Bearer " + TOKEN).timeout(Duration.ofSeconds(2)).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }

    /** Kills the process at once (SIGKILL) and waits for it to exit. */
    void kill9() {
        process.signal("KILL");
        process.awaitExit(Duration.ofSeconds(10));
    }

    /** Sends a signal by name (TERM, KILL, STOP, CONT) to the current process. */
    void signal(String sig) {
        process.signal(sig);
    }

    /**
     * Starts a new process with the same command line and ports (after {@link #kill9()} or an exit) and
     * waits until it listens. Its output goes to {@code NAME-N.out}.
     *
     * @return this
     * @throws IllegalStateException when the current process is still running
     */
    SiteGateway restart() {
        if (process.alive()) {
            throw new IllegalStateException(name + " is still running");
        }
        launch();
        return awaitListening();
    }

    /** Kills the process and stops the proxy. */
    @Override
    public void close() {
        try {
            if (process != null) {
                process.close();
            }
        } finally {
            front.close();
        }
    }

    private synchronized void launch() {
        String out = incarnation == 0 ? name : name + "-" + incarnation;
        incarnation++;
        process = RoleProcess.start(dir, out, args);
    }
}
