package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.AfterAll;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Configuration;
import software.amazon.awssdk.services.s3.presigner.S3Presigner;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code levee gateway --tcp-notsent-lowat}: how much of a response the gateway hands the kernel for a
 * client that does not read (issue 22, item 2: a 5 MiB/s client's gateway sent 5.6–6 MiB/s for seconds
 * while megabytes of kernel send buffer filled, and its share followed). Two gateway JVMs from the command
 * line, one with the default (128 KiB) and one with {@code 0} (the kernel's own: unlimited), in front of
 * S3Proxy (with a key; the GET is presigned) through a {@link TcpProxy} that counts what the backend sent; a raw client asks each for a 32 MiB
 * object with a 64 KiB receive buffer and reads nothing. What the gateway took from the backend once it
 * stops is the client's buffer, the kernel's send buffer, the gateway's own queue (Netty's high-water
 * mark, Vert.x's pipe), its backend connection's receive buffer and the proxy's 2 × 256 KiB: the
 * difference between the two gateways is what the kernel's send buffer parked (4.4 MiB on 2026-12-04:
 * 3.75 MiB taken with the default, 8.13 with 0).
 */
class GatewayNotSentIT {

    static final Path DIR = Path.of("target", "it-logs", "gateway-notsent").toAbsolutePath();
    static final long MiB = 1L << 20;
    static final int SIZE = 32 << 20;

    static final String KEY = "AKIANOTSENT";
    static final String SECRET = "secret-of-notsent";
    static S3Backend backend;
    static final List<RoleProcess> gateways = new ArrayList<>();
    static final List<Integer> ports = new ArrayList<>();
    static final List<TcpProxy> proxies = new ArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        Files.createDirectories(DIR);
        Logging.configure(new LogTarget("file", null, 0, DIR.resolve("test-jvm.log")), "levee-it", "WARN");
        backend = S3Backend.start(java.util.Map.of(KEY, SECRET));
        backend.putRandom("notsent", "big", SIZE, 5);
        int port = backend.port();
        for (String lowat : List.of("default", "0")) {
            TcpProxy p = TcpProxy.start(port);
            proxies.add(p);
            int listen = RoleProcess.freePort();
            ports.add(listen);
            List<String> args = new ArrayList<>(List.of("gateway", "--listen", "127.0.0.1:" + listen,
                    "--admin", "127.0.0.1:" + RoleProcess.freePort(), "--backend", p.address(), "--no-enforce",
                    "--log-target", "file:" + DIR.resolve("gateway-" + lowat + ".log")));
            if (!lowat.equals("default")) {
                args.addAll(List.of("--tcp-notsent-lowat", lowat));
            }
            gateways.add(RoleProcess.start(DIR, "gateway-" + lowat, args));
        }
        for (RoleProcess g : gateways) {
            g.awaitOutput("levee gateway listening", Duration.ofSeconds(60));
        }
    }

    @AfterAll
    static void stop() throws Exception {
        for (RoleProcess g : gateways) {
            g.close();
        }
        for (TcpProxy p : proxies) {
            p.close();
        }
        if (backend != null) {
            backend.close();
        }
    }

    @Test
    void theDefaultKeepsMegabytesOfAResponseOutOfTheKernelForAClientThatDoesNotRead() throws Exception {
        long[] taken = new long[2];
        for (int i = 0; i < 2; i++) {
            taken[i] = takenForAStalledClient(ports.get(i), proxies.get(i));
        }
        System.out.printf(Locale.ROOT, "GatewayNotSentIT: bytes the gateway took from the backend for a client that reads"
                + " nothing: %.2f MiB with the default --tcp-notsent-lowat (128 KiB), %.2f MiB with 0 (the kernel's)%n",
                taken[0] / (double) MiB, taken[1] / (double) MiB);
        assertThat(taken[1] - taken[0]).as("what the kernel's own setting parks beyond the default's")
                .isGreaterThan(MiB);
    }

    /** Opens a GET that reads nothing and returns the backend's bytes once they stop flowing for 500 ms. */
    static long takenForAStalledClient(int port, TcpProxy backend) throws Exception {
        long before = backend.bytesToClient();
        try (Socket s = new Socket()) {
            s.setReceiveBufferSize(64 * 1024); // before connecting: no autotuning
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 2000);
            OutputStream out = s.getOutputStream();
            java.net.URL url;
            try (S3Presigner p = S3Presigner.builder().endpointOverride(URI.create("http://127.0.0.1:" + port))
                    .region(Region.US_EAST_1).serviceConfiguration(S3Configuration.builder().pathStyleAccessEnabled(true).build())
                    .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(KEY, SECRET))).build()) {
                url = p.presignGetObject(r -> r.signatureDuration(Duration.ofMinutes(5))
                        .getObjectRequest(o -> o.bucket("notsent").key("big"))).url();
            }
            out.write(("GET " + url.getFile() + " HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            // the status line only (a few bytes of what the receive buffer holds): the object, not an error
            java.io.InputStream in = s.getInputStream();
            StringBuilder status = new StringBuilder();
            for (int c = in.read(); c != -1 && c != '\n' && status.length() < 200; c = in.read()) {
                status.append((char) c);
            }
            assertThat(status.toString().trim()).as("the answer's status line").isEqualTo("HTTP/1.1 200 OK");
            long[] last = {-1, System.nanoTime()};
            await("the backend's bytes stop flowing").atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50))
                    .until(() -> {
                        long now = backend.bytesToClient();
                        if (now != last[0]) {
                            last[0] = now;
                            last[1] = System.nanoTime();
                            return false;
                        }
                        return now > before && System.nanoTime() - last[1] >= 500_000_000L;
                    });
            return last[0] - before;
        }
    }
}
