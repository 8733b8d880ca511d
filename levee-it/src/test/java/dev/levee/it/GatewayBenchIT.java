package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.gateway.GatewayOptions;
import dev.levee.gateway.GatewayService;
import dev.levee.gateway.GovernanceSettings;
import dev.levee.gateway.PrincipalDirectory;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import dev.levee.stack.EmbeddedS3;
import io.vertx.core.Vertx;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Throughput of the gateway against going direct to the backend, and the gateway's CPU per GiB,
 * for 1 and 16 concurrent transfers of 64 MiB objects (issue 6). Not a test: it runs only with
 * {@code -Dlevee.bench=true} and prints a table for docs/BENCHMARKS.md.
 *
 * <p>Modes: {@code direct} (SDK → S3Proxy), {@code proxy} (gateway, governance off), {@code
 * governed, no limits} (every body through the governors and admission, all rates 0), {@code
 * shaped} (direction rate {@value #SHAPED_MIB} MiB/s). The gateway's CPU is the CPU time of its
 * Vert.x event-loop threads and the governors' timer thread (one JVM also runs S3Proxy and the
 * SDK); the process CPU is given beside it.
 */
@EnabledIfSystemProperty(named = "levee.bench", matches = "true")
class GatewayBenchIT {

    static final long MiB = 1L << 20;
    static final int SIZE = 64 << 20;
    static final long SHAPED_MIB = 256;
    static final int ROUNDS = Integer.getInteger("levee.bench.rounds", 3);
    static final int WARMUP_ROUNDS = Integer.getInteger("levee.bench.warmup", 3);
    static final String KEY = "AKIABENCH";
    static final List<String> DIRECTIONS = List.of(System.getProperty("levee.bench.directions", "download,upload").split(","));
    /** CPU of the proxy under test: the gateway's threads, or the NGINX worker (reference mode). */
    static java.util.function.LongSupplier proxyCpu = GatewayBenchIT::gatewayCpuNanos;

    record Row(String mode, String direction, int concurrency, double mibPerSecond, double gatewayCpuMsPerGiB,
               double processCpuMsPerGiB) {
    }

    @Test
    void throughputAndCpuPerGiB() throws Exception {
        Logging.configure(new LogTarget("file", null, 0, Stack.LOG.toAbsolutePath()), "levee-bench", "WARN");
        List<Row> rows = new ArrayList<>();
        try (EmbeddedS3 s3 = EmbeddedS3.start(Map.of(KEY, "secret-bench"))) {
            S3Client direct = GatewayGovernanceIT.client(URI.create("http://127.0.0.1:" + s3.port()), KEY, "secret-bench");
            direct.createBucket(b -> b.bucket("bench"));
            byte[] data = new byte[SIZE];
            new Random(1).nextBytes(data);
            direct.putObject(b -> b.bucket("bench").key("obj"), RequestBody.fromBytes(data));
            measure(rows, "direct", direct, data);
            PrincipalDirectory principals = new PrincipalDirectory(List.of(PrincipalDirectory.Account.of("svc-bench", KEY)));
            Map<String, GovernanceSettings> modes = new java.util.LinkedHashMap<>();
            modes.put("gateway, governance off", GovernanceSettings.off());
            modes.put("gateway, governed, no limits", GovernanceSettings.builder().principals(principals)
                    .admission(new dev.levee.governor.AdmissionConfig(16, 16, 64, TimeUnit.SECONDS.toNanos(60))).build());
            modes.put("gateway, shaped " + SHAPED_MIB + " MiB/s", GovernanceSettings.builder().principals(principals)
                    .uploadRate(SHAPED_MIB * MiB).downloadRate(SHAPED_MIB * MiB)
                    .admission(new dev.levee.governor.AdmissionConfig(16, 16, 64, TimeUnit.SECONDS.toNanos(60))).build());
            boolean warm = false;
            for (Map.Entry<String, GovernanceSettings> m : modes.entrySet()) {
                Vertx vertx = dev.levee.runtime.Http.vertx();
                HostPort any = new HostPort("127.0.0.1", 0);
                GatewayService g = GatewayService.start(vertx, GatewayOptions.builder(new HostPort("127.0.0.1", s3.port()))
                                .listen(any).admin(any).enforce(false).governance(m.getValue()).build(),
                                null, SystemTicker.INSTANCE, Clock.systemUTC(), Metrics.newRegistry())
                        .toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
                try (S3Client via = GatewayGovernanceIT.client(URI.create("http://127.0.0.1:" + g.port()), KEY, "secret-bench")) {
                    if (!warm) {
                        // the first gateway mode would otherwise pay for the JIT compiling the proxy path
                        // (C2 shares the two cores): a few unrecorded transfers of each kind first
                        for (int i = 0; i < WARMUP_ROUNDS; i++) {
                            for (String direction : DIRECTIONS) {
                                run(via, direction, 1, data);
                                run(via, direction, 16, data);
                            }
                        }
                        warm = true;
                    }
                    measure(rows, m.getKey(), via, data);
                } finally {
                    g.stop(Duration.ofSeconds(5)).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
                    vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
                }
            }
            java.util.Optional<java.nio.file.Path> nginx = dev.levee.stack.EmbeddedNginx.binary();
            if (nginx.isPresent()) {
                referenceNginx(rows, nginx.get(), s3.port(), data);
            } else {
                System.out.println("nginx not installed: no reference row");
            }
            direct.close();
        }
        System.out.println();
        System.out.println("| mode | direction | concurrent | MiB/s (median of " + ROUNDS + ") | gateway CPU ms/GiB | process CPU ms/GiB |");
        System.out.println("|---|---|---:|---:|---:|---:|");
        for (Row r : rows) {
            System.out.printf("| %s | %s | %d | %.0f | %s | %.0f |%n", r.mode(), r.direction(), r.concurrency(), r.mibPerSecond(),
                    r.mode().equals("direct") ? "—" : String.format("%.0f", r.gatewayCpuMsPerGiB()), r.processCpuMsPerGiB());
        }
        assertThat(rows).isNotEmpty();
    }

    /**
     * The same transfers through a plain NGINX reverse proxy ({@code proxy_pass} over keep-alive,
     * request and response buffering off, one worker): what a mature C proxy costs on this machine,
     * beside the gateway. Its CPU is the NGINX worker's.
     */
    private static void referenceNginx(List<Row> rows, java.nio.file.Path bin, int s3Port, byte[] data) throws Exception {
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("levee-bench-nginx");
        java.nio.file.Files.createDirectories(dir.resolve("logs"));
        int port = RoleProcess.freePort();
        java.nio.file.Files.writeString(dir.resolve("nginx.conf"), """
                worker_processes 1;
                pid logs/nginx.pid;
                error_log logs/error.log warn;
                events { worker_connections 1024; }
                http {
                    access_log off;
                    client_body_temp_path logs/body;
                    proxy_temp_path logs/proxy;
                    fastcgi_temp_path logs/fastcgi;
                    uwsgi_temp_path logs/uwsgi;
                    scgi_temp_path logs/scgi;
                    upstream s3 { server 127.0.0.1:%d; keepalive 32; }
                    server {
                        listen 127.0.0.1:%d;
                        client_max_body_size 0;
                        proxy_request_buffering off;
                        proxy_buffering off;
                        proxy_http_version 1.1;
                        proxy_set_header Connection "";
                        proxy_set_header Host $http_host;
                        location / { proxy_pass http://s3; }
                    }
                }
                """.formatted(s3Port, port));
        Process p = new ProcessBuilder(bin.toString(), "-p", dir + "/", "-c", dir.resolve("nginx.conf").toString(), "-g",
                "daemon off;").redirectErrorStream(true).redirectOutput(dir.resolve("logs/stdout").toFile()).start();
        try {
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> {
                new java.net.Socket("127.0.0.1", port).close();
                return true;
            });
            proxyCpu = () -> treeCpuNanos(p.pid());
            try (S3Client via = GatewayGovernanceIT.client(URI.create("http://127.0.0.1:" + port), KEY, "secret-bench")) {
                measure(rows, "reference: nginx proxy_pass", via, data);
            }
        } finally {
            proxyCpu = GatewayBenchIT::gatewayCpuNanos;
            p.destroy();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** CPU time of a process and its children (NGINX master and worker) from /proc, in ns. */
    private static long treeCpuNanos(long pid) {
        long ticks = 0;
        List<Long> pids = new ArrayList<>(List.of(pid));
        ProcessHandle.of(pid).ifPresent(h -> h.children().forEach(c -> pids.add(c.pid())));
        for (long id : pids) {
            try {
                String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/" + id + "/stat"));
                String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                ticks += Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime, stime (fields 14, 15)
            } catch (java.io.IOException | RuntimeException e) {
                // the process ended: its time is gone with it
            }
        }
        return ticks * 10_000_000L; // USER_HZ = 100 on Linux
    }

    private static void measure(List<Row> rows, String mode, S3Client client, byte[] data) throws Exception {
        for (String direction : DIRECTIONS) {
            for (int concurrency : new int[] {1, 16}) {
                run(client, direction, concurrency, data); // warm-up
                double[] rates = new double[ROUNDS];
                double gatewayCpu = 0;
                double processCpu = 0;
                for (int i = 0; i < ROUNDS; i++) {
                    long cpu0 = proxyCpu.getAsLong();
                    long proc0 = processCpuNanos();
                    long t0 = System.nanoTime();
                    long bytes = run(client, direction, concurrency, data);
                    double t = (System.nanoTime() - t0) / 1e9;
                    double gib = bytes / (double) (1L << 30);
                    rates[i] = bytes / t / MiB;
                    gatewayCpu += (proxyCpu.getAsLong() - cpu0) / 1e6 / gib;
                    processCpu += (processCpuNanos() - proc0) / 1e6 / gib;
                }
                Arrays.sort(rates);
                Row row = new Row(mode, direction, concurrency, rates[ROUNDS / 2], gatewayCpu / ROUNDS, processCpu / ROUNDS);
                System.out.println(row);
                rows.add(row);
            }
        }
    }

    private static long run(S3Client client, String direction, int concurrency, byte[] data) throws Exception {
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<Long>> tasks = new ArrayList<>();
            for (int i = 0; i < concurrency; i++) {
                int n = i;
                tasks.add(pool.submit(() -> {
                    if (direction.equals("download")) {
                        long got = 0;
                        byte[] buf = new byte[256 * 1024];
                        try (InputStream in = client.getObject(b -> b.bucket("bench").key("obj"))) {
                            for (int r; (r = in.read(buf)) > 0; ) {
                                got += r;
                            }
                        }
                        return got;
                    }
                    client.putObject(b -> b.bucket("bench").key("up-" + n), RequestBody.fromBytes(data));
                    return (long) data.length;
                }));
            }
            long total = 0;
            for (Future<Long> f : tasks) {
                total += f.get(10, TimeUnit.MINUTES);
            }
            assertThat(total).isEqualTo((long) SIZE * concurrency);
            return total;
        }
    }

    /** CPU of the gateway's threads: Vert.x event loops (only the gateway runs Vert.x here) and the governors' timer. */
    private static long gatewayCpuNanos() {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long sum = 0;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            String name = t.getName();
            if (name.startsWith("vert.x-eventloop-thread") || name.equals("levee-governor-timer")) {
                long c = mx.getThreadCpuTime(t.threadId());
                if (c > 0) {
                    sum += c;
                }
            }
        }
        return sum;
    }

    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }
}
