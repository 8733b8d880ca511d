package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * {@code levee top} on a terminal (issue 26 item 6), run as a user runs it: its own JVM on a pseudo-terminal
 * (util-linux script(1)) against a stand-in observer that holds its first answer. The screen says
 * "connecting" until the answer comes, shows the key hints under the table, and {@code q} quits.
 */
class TopTerminalTest {

    static final String ANSWER = """
            {"membershipRevision": 3, "factor": 2, "answered": 1, "configRevisions": [7],
             "limiters": [{"id": "l1", "address": "127.0.0.1:7100", "answered": true, "revision": 7}],
             "windows": [{"seconds": 10, "coveredSeconds": 10, "offered": 100, "refused": 10, "wouldReject": 0,
                          "endSecondMin": 7, "endSecondMax": 7, "rows": [
               {"resource": "photos", "level": "resource", "offered": 100, "admitted": 90, "refused": 10,
                "wouldReject": 0, "maxError": 0, "offeredPerS": 10, "admittedPerS": 9, "refusedPerS": 1,
                "wouldRejectPerS": 0, "limiters": 1}]}]}
            """;

    @Test
    void showsConnectingThenTheTableWithKeyHintsAndQuitsOnQ() throws Exception {
        Assumptions.assumeTrue(new java.io.File("/usr/bin/script").canExecute(), "script(1) of util-linux makes the pty");
        CountDownLatch answer = new CountDownLatch(1);
        HttpServer observer = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        observer.setExecutor(java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor());
        observer.createContext("/v1/stats", ex -> {
            try {
                answer.await(60, TimeUnit.SECONDS); // held until the test has seen "connecting"
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            byte[] body = ANSWER.getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("Content-Type", "application/json");
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream o = ex.getResponseBody()) {
                o.write(body);
            }
        });
        observer.start();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String top = String.join(" ", List.of(java, "-cp", "'" + System.getProperty("java.class.path") + "'",
                "dev.levee.cli.Main", "top", "--observer", "127.0.0.1:" + observer.getAddress().getPort(),
                "--timeout", "60s", "--interval", "300ms"));
        Process p = new ProcessBuilder("script", "-qfec", top, "/dev/null").redirectErrorStream(true).start();
        StringBuffer screen = new StringBuffer();
        Thread.ofVirtual().start(() -> {
            try (InputStream in = p.getInputStream()) {
                byte[] buf = new byte[8192];
                for (int n; (n = in.read(buf)) >= 0; ) {
                    screen.append(new String(buf, 0, n, StandardCharsets.UTF_8));
                }
            } catch (java.io.IOException e) {
                // the process ended
            }
        });
        try {
            await("the first screen says it is connecting").atMost(Duration.ofSeconds(60))
                    .until(() -> screen.toString().contains("levee top: connecting to 127.0.0.1:"));
            assertThat(screen.toString()).as("no table before the first answer").doesNotContain("RESOURCE / ENTRY")
                    .contains("q quit");
            answer.countDown();
            await("the table with its key hints").atMost(Duration.ofSeconds(30))
                    .until(() -> screen.toString().contains("RESOURCE / ENTRY"));
            String table = screen.substring(screen.lastIndexOf(TopCommand.CLEAR));
            assertThat(table).contains("limiters 1/1 answered").contains("photos")
                    .contains("q quit   sorted by offered (--sort)");
            p.getOutputStream().write('q');
            p.getOutputStream().flush();
            assertThat(p.waitFor(20, TimeUnit.SECONDS)).as("levee top ends on q; screen:\n%s", screen).isTrue();
            assertThat(p.exitValue()).as(screen.toString()).isZero();
        } finally {
            p.destroyForcibly();
            observer.stop(0);
        }
    }
}
