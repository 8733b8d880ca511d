package dev.levee.it;

import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.levee.stack.EmbeddedEtcd;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/**
 * A multi-member etcd cluster on loopback for integration tests: each member is its own {@code etcd}
 * process (Debian's etcd 3.4, {@link EmbeddedEtcd#binary()}) with its own data directory in one
 * temporary directory, free loopback client and peer ports, and short Raft timings
 * ({@link #HEARTBEAT_MS} / {@link #ELECTION_MS}, etcd's defaults, stated; extra arguments such as
 * {@code --election-timeout 500} come later on the command line and win) so that a killed leader is
 * replaced in one to three seconds.
 * A member can be killed (SIGKILL, as a crash), stopped (SIGSTOP) and started again on the same ports
 * and data, where it rejoins as a follower ({@code --initial-cluster-state existing}).
 *
 * <p>Members are numbered {@code 0 … n-1}; the leader is found by asking each running member for its
 * status over etcd's HTTP gateway ({@code POST /v3/maintenance/status}), whose {@code header.member_id}
 * names the member and {@code leader} the member it follows. Each member's output goes to
 * {@code member-<i>.log} in {@link #dir()} (deleted by {@link #close()}; {@link #log(int)} returns it for
 * failure messages).
 *
 * <pre>{@code
 * try (EtcdCluster etcd = EtcdCluster.start(3);
 *      Client c = Etcd.client(etcd.endpointList())) { ... etcd.kill9(etcd.leaderIndex()); ... }
 * }</pre>
 */
final class EtcdCluster implements AutoCloseable {

    /** Raft heartbeat interval given to every member, in milliseconds (etcd's default is 100). */
    static final int HEARTBEAT_MS = 100;
    /** Raft election timeout given to every member, in milliseconds (etcd's default is 1000). */
    static final int ELECTION_MS = 1000;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(500)).build();

    private final Path dir;
    private final int[] clientPorts;
    private final int[] peerPorts;
    private final long[] memberIds;
    private final Process[] processes;
    private final List<String> extraArgs;
    private final String token;

    private EtcdCluster(Path dir, int members, List<String> extraArgs) {
        this.dir = dir;
        this.extraArgs = List.copyOf(extraArgs);
        this.clientPorts = new int[members];
        this.peerPorts = new int[members];
        this.memberIds = new long[members];
        this.processes = new Process[members];
        this.token = "levee-it-" + dir.getFileName();
        int[] ports = freePorts(2 * members);
        for (int i = 0; i < members; i++) {
            clientPorts[i] = ports[2 * i];
            peerPorts[i] = ports[2 * i + 1];
        }
    }

    /**
     * Starts {@code members} etcd processes as one new cluster and waits (up to 30 s) until every member
     * is healthy and one is the leader.
     *
     * @param members number of members, 1 to 7 (3 for the site tests)
     * @return the running cluster (close it)
     * @throws IllegalArgumentException when {@code members} is out of range
     * @throws IllegalStateException    when etcd is not installed or the cluster does not become healthy
     */
    static EtcdCluster start(int members) {
        return start(members, List.of());
    }

    /**
     * Starts a cluster like {@link #start(int)} with extra flags on every member's command line (for
     * example {@code --max-request-bytes 8388608}).
     *
     * @param members   number of members, 1 to 7
     * @param extraArgs flags appended to each member's command line
     * @return the running cluster (close it)
     * @throws IllegalArgumentException when {@code members} is out of range
     * @throws IllegalStateException    when etcd is not installed or the cluster does not become healthy
     */
    static EtcdCluster start(int members, List<String> extraArgs) {
        if (members < 1 || members > 7) {
            throw new IllegalArgumentException("etcd cluster size must be 1 to 7 members, got " + members);
        }
        if (EmbeddedEtcd.binary() == null) {
            throw new IllegalStateException("etcd is not installed: apt-get install -y etcd-server");
        }
        Path dir;
        try {
            dir = Files.createTempDirectory("levee-etcd-cluster-");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the etcd cluster's directory", e);
        }
        EtcdCluster c = new EtcdCluster(dir, members, extraArgs);
        try {
            for (int i = 0; i < members; i++) {
                c.launch(i, "new");
            }
            c.awaitHealthy(Duration.ofSeconds(30));
            for (int i = 0; i < members; i++) {
                c.memberId(i);
            }
            return c;
        } catch (RuntimeException | Error e) {
            String logs = IntStream.range(0, members).mapToObj(i -> "member " + i + ":\n" + tail(c.log(i), 2000))
                    .collect(Collectors.joining("\n"));
            c.close();
            throw new IllegalStateException("etcd cluster of " + members + " did not start: " + e.getMessage() + "\n" + logs, e);
        }
    }

    /** Returns the number of members (running or not). */
    int size() {
        return processes.length;
    }

    /** Returns every member's client endpoint, comma-separated ({@code http://127.0.0.1:P0,http://127.0.0.1:P1,…}), as {@code --etcd} takes them. */
    String endpoints() {
        return String.join(",", endpointList());
    }

    /** Returns every member's client endpoint, in member order. */
    List<String> endpointList() {
        return IntStream.range(0, size()).mapToObj(this::clientEndpoint).toList();
    }

    /** Returns member {@code i}'s client endpoint, {@code http://127.0.0.1:PORT}. */
    String clientEndpoint(int i) {
        return "http://127.0.0.1:" + clientPort(i);
    }

    /** Returns member {@code i}'s client port (for a {@link TcpProxy} in front of it). */
    int clientPort(int i) {
        check(i);
        return clientPorts[i];
    }

    /** Returns member {@code i}'s peer port. */
    int peerPort(int i) {
        check(i);
        return peerPorts[i];
    }

    /** Returns whether member {@code i}'s process is running (a SIGSTOPped member counts as running). */
    synchronized boolean running(int i) {
        check(i);
        return processes[i] != null && processes[i].isAlive();
    }

    /** Returns member {@code i}'s process id. @throws IllegalStateException when it is not running */
    synchronized long pid(int i) {
        if (!running(i)) {
            throw new IllegalStateException("etcd member " + i + " is not running");
        }
        return processes[i].pid();
    }

    /**
     * Returns member {@code i}'s Raft member id (as in {@code header.member_id}), asking it once if not yet known.
     *
     * @throws IllegalStateException when it is not known and the member does not answer
     */
    synchronized long memberId(int i) {
        check(i);
        if (memberIds[i] == 0) {
            JsonNode s = status(i);
            if (s == null) {
                throw new IllegalStateException("etcd member " + i + " does not answer its status");
            }
            memberIds[i] = Long.parseUnsignedLong(s.path("header").path("member_id").asText());
        }
        return memberIds[i];
    }

    /**
     * Returns the index of the current leader: the member that a majority of the members answering
     * their status name as leader, when that member is itself running; -1 when there is none (an
     * election under way, no quorum).
     */
    synchronized int leaderIndex() {
        int n = size();
        long[] votes = new long[n];
        int answering = 0;
        for (int i = 0; i < n; i++) {
            if (!running(i)) {
                continue;
            }
            JsonNode s = status(i);
            if (s == null) {
                continue;
            }
            answering++;
            long leader = Long.parseUnsignedLong(s.path("leader").asText("0"));
            for (int j = 0; j < n; j++) {
                if (memberIds[j] != 0 && memberIds[j] == leader) {
                    votes[j]++;
                }
            }
        }
        for (int j = 0; j < n; j++) {
            if (votes[j] > n / 2 && votes[j] * 2 > answering && running(j)) {
                return j;
            }
        }
        return -1;
    }

    /**
     * Waits until a member is leader and returns its index.
     *
     * @param timeout how long to wait
     * @return the leader's index
     * @throws org.awaitility.core.ConditionTimeoutException when no leader is seen in time
     */
    int awaitLeader(Duration timeout) {
        int[] leader = {-1};
        await("an etcd leader").atMost(timeout).pollInterval(Duration.ofMillis(20)).until(() -> {
            leader[0] = leaderIndex();
            return leader[0] >= 0;
        });
        return leader[0];
    }

    /**
     * Returns the Raft term that member {@code i} reports in its status, or empty when it does not answer.
     * etcd 3.4 reports the term of the last entry it applied: a new leader's term shows once its first
     * entry is applied, which on a loaded machine can be a while after it is named leader (seen in
     * {@code EtcdClusterIT}: equal terms just after the election).
     */
    OptionalLong raftTerm(int i) {
        JsonNode s = running(i) ? status(i) : null;
        return s == null ? OptionalLong.empty() : OptionalLong.of(s.path("raftTerm").asLong(s.path("header").path("raft_term").asLong()));
    }

    /** Waits up to 30 s until every running member answers {@code /health} and a leader is elected. */
    void awaitHealthy() {
        awaitHealthy(Duration.ofSeconds(30));
    }

    /**
     * Waits until every running member answers {@code GET /health} with 200 (it has a leader and the
     * cluster a quorum) and {@link #leaderIndex()} names a leader.
     *
     * @param timeout how long to wait
     * @throws IllegalStateException when a member's process exits meanwhile
     * @throws org.awaitility.core.ConditionTimeoutException when not healthy in time
     */
    void awaitHealthy(Duration timeout) {
        await("etcd cluster healthy").atMost(timeout).pollInterval(Duration.ofMillis(50)).until(() -> {
            boolean all = true;
            for (int i = 0; i < size(); i++) {
                Process p = process(i);
                if (p == null) {
                    continue;
                }
                if (!p.isAlive()) {
                    throw new IllegalStateException("etcd member " + i + " exited with " + p.exitValue() + ":\n" + tail(log(i), 2000));
                }
                all &= healthy(i);
            }
            return all && knownIds() && leaderIndex() >= 0;
        });
    }

    /** Returns whether member {@code i} answers {@code GET /health} with 200. */
    boolean healthy(int i) {
        try {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(clientEndpoint(i) + "/health"))
                    .timeout(Duration.ofMillis(500)).build(), HttpResponse.BodyHandlers.ofString());
            return r.statusCode() == 200 && r.body().contains("true");
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Kills member {@code i} at once (SIGKILL), as a crash would; its data and ports are kept for {@link #restart(int)}. */
    void kill9(int i) {
        Process p = process(i);
        if (p == null || !p.isAlive()) {
            throw new IllegalStateException("etcd member " + i + " is not running");
        }
        p.destroyForcibly(); // SIGKILL on Linux
        try {
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("etcd member " + i + " did not die on SIGKILL");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Sends a signal by name ({@code STOP}, {@code CONT}, {@code TERM}) to member {@code i}. */
    void signal(int i, String sig) {
        long pid = pid(i);
        try {
            new ProcessBuilder("kill", "-" + sig, Long.toString(pid)).start().waitFor(5, TimeUnit.SECONDS);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Starts member {@code i} again on its ports and data directory ({@code --initial-cluster-state
     * existing}) and waits (up to 30 s) until it answers {@code /health}, that is, it has rejoined and
     * knows the leader.
     *
     * @throws IllegalStateException when it is still running or does not become healthy
     */
    void restart(int i) {
        if (running(i)) {
            throw new IllegalStateException("etcd member " + i + " is still running");
        }
        launch(i, "existing");
        try {
            await("etcd member " + i + " rejoined").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).until(() -> {
                Process p = process(i);
                if (!p.isAlive()) {
                    throw new IllegalStateException("etcd member " + i + " exited with " + p.exitValue() + ":\n" + tail(log(i), 2000));
                }
                return healthy(i);
            });
        } catch (RuntimeException e) {
            throw new IllegalStateException("etcd member " + i + " did not rejoin: " + e.getMessage() + "\n" + tail(log(i), 2000), e);
        }
    }

    /** Returns the directory holding the members' data directories and logs. */
    Path dir() {
        return dir;
    }

    /** Returns what member {@code i} has logged so far ("" when nothing). */
    String log(int i) {
        try {
            return Files.readString(logFile(i), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    /** Kills every member (SIGCONT first, for a stopped one, then SIGKILL) and deletes the directory. */
    @Override
    public void close() {
        for (int i = 0; i < size(); i++) {
            Process p = process(i);
            if (p != null && p.isAlive()) {
                try {
                    signal(i, "CONT");
                } catch (RuntimeException e) {
                    // it is killed below anyway
                }
                p.destroyForcibly();
            }
        }
        for (int i = 0; i < size(); i++) {
            Process p = process(i);
            if (p != null) {
                try {
                    p.waitFor(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // temporary directory: best effort
        }
    }

    // ---------------------------------------------------------------- internals

    private synchronized void launch(int i, String clusterState) {
        String client = clientEndpoint(i);
        String peer = "http://127.0.0.1:" + peerPorts[i];
        String initialCluster = IntStream.range(0, size()).mapToObj(j -> name(j) + "=http://127.0.0.1:" + peerPorts[j])
                .collect(Collectors.joining(","));
        List<String> cmd = new ArrayList<>(List.of(EmbeddedEtcd.binary().toString(),
                "--name", name(i), "--data-dir", dir.resolve(name(i)).toString(),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", initialCluster, "--initial-cluster-state", clusterState,
                "--initial-cluster-token", token,
                "--heartbeat-interval", Integer.toString(HEARTBEAT_MS), "--election-timeout", Integer.toString(ELECTION_MS),
                "--auto-compaction-retention", "0"));
        cmd.addAll(extraArgs);
        try {
            processes[i] = new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile(i).toFile())).start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start etcd member " + i, e);
        }
    }

    private synchronized Process process(int i) {
        check(i);
        return processes[i];
    }

    private synchronized boolean knownIds() {
        for (int i = 0; i < size(); i++) {
            if (memberIds[i] == 0) {
                JsonNode s = status(i);
                if (s == null) {
                    return false;
                }
                memberIds[i] = Long.parseUnsignedLong(s.path("header").path("member_id").asText());
            }
        }
        return true;
    }

    /** Member {@code i}'s {@code /v3/maintenance/status}, or null when it does not answer in 500 ms. */
    private JsonNode status(int i) {
        try {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(clientEndpoint(i) + "/v3/maintenance/status"))
                    .timeout(Duration.ofMillis(500)).POST(HttpRequest.BodyPublishers.ofString("{}")).build(),
                    HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                return null;
            }
            JsonNode n = JSON.readTree(r.body());
            return n.path("header").hasNonNull("member_id") ? n : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private Path logFile(int i) {
        return dir.resolve("member-" + i + ".log");
    }

    private static String name(int i) {
        return "m" + i;
    }

    private void check(int i) {
        if (i < 0 || i >= processes.length) {
            throw new IllegalArgumentException("etcd member index must be 0 to " + (processes.length - 1) + ", got " + i);
        }
    }

    /** Returns {@code n} distinct loopback ports that were free a moment ago (see {@link dev.levee.stack.LoopbackPorts}). */
    static int[] freePorts(int n) {
        return dev.levee.stack.LoopbackPorts.free(n);
    }

    private static String tail(String s, int chars) {
        return s.length() <= chars ? s : "…" + s.substring(s.length() - chars);
    }
}
