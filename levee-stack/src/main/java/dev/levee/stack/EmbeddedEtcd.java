package dev.levee.stack;

import dev.levee.runtime.SystemTicker;
import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Runs a single-node etcd (Debian's {@code etcd-server} package or any {@code etcd} on the PATH) as a
 * child process on free loopback ports with a temporary data directory: for {@code levee demo --etcd}
 * and the integration tests. It can be stopped and started again on the same ports and data.
 */
public final class EmbeddedEtcd implements AutoCloseable {

    private final Path dataDir;
    private final int clientPort;
    private final int peerPort;
    private final Path logFile;
    private final List<String> extraArgs;
    private Process process;

    private EmbeddedEtcd(Path dataDir, int clientPort, int peerPort, List<String> extraArgs) {
        this.extraArgs = List.copyOf(extraArgs);
        this.dataDir = dataDir;
        this.clientPort = clientPort;
        this.peerPort = peerPort;
        this.logFile = dataDir.resolveSibling(dataDir.getFileName() + ".log");
    }

    /** Returns the etcd binary found on the PATH or in /usr/bin, or null. */
    public static Path binary() {
        for (String dir : (System.getenv().getOrDefault("PATH", "") + ":/usr/bin:/usr/local/bin").split(":")) {
            if (!dir.isEmpty()) {
                Path p = Path.of(dir, "etcd");
                if (Files.isExecutable(p)) {
                    return p;
                }
            }
        }
        return null;
    }

    /**
     * Starts etcd and waits until it answers on its client port.
     *
     * @return the running etcd
     * @throws IllegalStateException when etcd is not installed or does not become healthy in 20 s
     */
    public static EmbeddedEtcd start() {
        return start(List.of());
    }

    /**
     * Starts etcd with extra command-line flags (for example {@code --max-request-bytes 8388608}) and
     * waits until it answers on its client port.
     *
     * @param extraArgs flags appended to etcd's command line
     * @return the running etcd
     * @throws IllegalStateException when etcd is not installed or does not become healthy in 20 s
     */
    public static EmbeddedEtcd start(List<String> extraArgs) {
        if (binary() == null) {
            throw new IllegalStateException("etcd is not installed: apt-get install -y etcd-server");
        }
        try {
            Path dir = Files.createTempDirectory("levee-etcd-");
            EmbeddedEtcd e = new EmbeddedEtcd(dir.resolve("data"), LoopbackPorts.free(), LoopbackPorts.free(), extraArgs);
            e.launch();
            return e;
        } catch (IOException ex) {
            throw new IllegalStateException("cannot create etcd data directory", ex);
        }
    }

    /** Starts the process again on the same ports and data (after {@link #stop()}). */
    public synchronized void launch() {
        if (process != null && process.isAlive()) {
            return;
        }
        String client = "http://127.0.0.1:" + clientPort;
        String peer = "http://127.0.0.1:" + peerPort;
        List<String> cmd = new java.util.ArrayList<>(List.of(binary().toString(), "--name", "levee", "--data-dir", dataDir.toString(),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", "levee=" + peer, "--initial-cluster-state", "new",
                "--auto-compaction-retention", "0"));
        cmd.addAll(extraArgs);
        try {
            process = new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile())).start();
        } catch (IOException ex) {
            throw new IllegalStateException("cannot start etcd: " + ex.getMessage(), ex);
        }
        long deadline = SystemTicker.INSTANCE.read() + TimeUnit.SECONDS.toNanos(20);
        while (!healthy()) {
            if (!process.isAlive() || SystemTicker.INSTANCE.read() - deadline > 0) {
                throw new IllegalStateException("etcd did not become healthy; see " + logFile);
            }
            try {
                TimeUnit.MILLISECONDS.sleep(50); // polling a child process's health endpoint, bounded by the deadline
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted");
            }
        }
    }

    private boolean healthy() {
        try {
            HttpURLConnection c = (HttpURLConnection) URI.create(endpoint() + "/health").toURL().openConnection();
            c.setConnectTimeout(200);
            c.setReadTimeout(500);
            return c.getResponseCode() == 200;
        } catch (IOException e) {
            return false;
        }
    }

    /** Stops the process (SIGTERM, then SIGKILL after 5 s); data and ports are kept. */
    public synchronized void stop() {
        if (process == null) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Returns the process id of the running etcd, for fault tests that signal it (SIGSTOP, SIGKILL). */
    public synchronized long pid() {
        if (process == null || !process.isAlive()) {
            throw new IllegalStateException("etcd is not running");
        }
        return process.pid();
    }

    /** Kills the process at once (SIGKILL), as a crash would; data and ports are kept for {@link #launch()}. */
    public synchronized void kill() {
        if (process == null) {
            return;
        }
        process.destroyForcibly();
        try {
            process.waitFor(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Returns the client endpoint, {@code http://127.0.0.1:PORT}. */
    public String endpoint() {
        return "http://127.0.0.1:" + clientPort;
    }

    /** Stops etcd and deletes its data directory. */
    @Override
    public void close() {
        stop();
        try (Stream<Path> files = Files.walk(dataDir.getParent())) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // temporary directory: best effort
        }
    }
}
