package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Whatever a client sends, the gateway logs no ERROR and no stack trace (issue 10, defect 8):
 * malformed requests, bad chunked encoding, connections reset mid-upload and mid-download, garbage
 * bytes. Each is at most one WARN/DEBUG line with its reason, and counted.
 */
class ClientFaultLoggingTest {

    static final String KEY = "AKIAFAULTS";
    static final String AUTH = "AWS4-HMAC-SHA256 Credential=" + KEY + "/20260101/us-east-1/s3/aws4_request,"
            + " SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=0123";

    @TempDir
    Path dir;
    TestGateway rig;

    @AfterEach
    void close() throws Exception {
        if (rig != null) {
            rig.close();
        }
        Logging.configure(new LogTarget("stderr", null, 0, null), "levee-test", "WARN");
    }

    /** Sends {@code raw}, reads what comes back until the gateway closes or 2 s pass; resets when asked. */
    String send(byte[] raw, boolean reset) throws IOException {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), rig.gateway.port())) {
            s.setSoTimeout(2000);
            OutputStream out = s.getOutputStream();
            out.write(raw);
            out.flush();
            if (reset) {
                s.setSoLinger(true, 0); // close sends RST
                return "";
            }
            InputStream in = s.getInputStream();
            byte[] buf = new byte[8192];
            StringBuilder got = new StringBuilder();
            try {
                for (int n; (n = in.read(buf)) > 0; ) {
                    got.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
                    if (got.length() > 64 * 1024) {
                        break;
                    }
                }
            } catch (IOException e) {
                // reset or timed out: what arrived is enough
            }
            return got.toString();
        }
    }

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }

    @Test
    void hostileInputLogsNoErrorAndNoStackTrace() throws Exception {
        Path log = dir.resolve("gateway.log");
        Logging.configure(new LogTarget("file", null, 0, log), "levee-gateway", "DEBUG");
        GovernanceSettings g = GovernanceSettings.builder()
                .principals(new PrincipalDirectory(List.of(PrincipalDirectory.Account.of("svc", KEY))))
                .principalUploadRate(1L << 20)
                .principalDownloadRate(1L << 20)
                .build();
        rig = TestGateway.start(o -> o.governance(g));
        String put = "PUT /bucket/obj HTTP/1.1\r\nHost: x\r\nAuthorization: " + AUTH + "\r\n";

        List<String> answers = List.of(
                send(ascii("GARBAGE\r\n\r\n"), false),
                send(ascii("GET /" + "a".repeat(20_000) + " HTTP/1.1\r\nHost: x\r\n\r\n"), false),
                send(ascii("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + "b".repeat(70_000) + "\r\n\r\n"), false),
                send(ascii("GET / HTTP/1.1\r\nHost: x\r\nbad header line\r\n\r\n"), false),
                send(ascii("\u0000\u0001\u0002\u00ff\u00fe binary junk\r\n\r\n"), false),
                send(ascii("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), false),
                // a chunked body whose chunk size is not hex
                send(ascii(put + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nZZZ\r\nxx\r\n0\r\n\r\n"), false),
                send(ascii("PUT /plain/obj HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nQQ\r\n\r\n"), false),
                // a Content-Length that is not a number, and two that disagree
                send(ascii(put + "Content-Length: abc\r\n\r\nhello"), false),
                send(ascii(put + "Content-Length: 5\r\nContent-Length: 7\r\n\r\nhello"), false));
        assertThat(answers).as("no malformed request is answered 500, 502 or 503 (an HTTP/2 preface gets Vert.x's 501)")
                .noneMatch(a -> a.matches("(?s)HTTP/1\\.[01] 50[023].*"));

        // connections reset in the middle of an upload (governed and not) and of a download
        send(ascii(put + "Content-Length: 1000000\r\n\r\n" + "u".repeat(100_000)), true);
        send(ascii("PUT /plain/obj HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n" + "u".repeat(100_000)), true);
        send(ascii("PUT /plain/obj HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10000\r\n"
                + "c".repeat(30_000)), true);
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), rig.gateway.port())) {
            s.getOutputStream().write(ascii("GET /bucket/big?size=20000000 HTTP/1.1\r\nHost: x\r\nAuthorization: " + AUTH
                    + "\r\n\r\n"));
            s.getInputStream().readNBytes(100_000);
            s.setSoLinger(true, 0);
        }
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), rig.gateway.port())) {
            s.getOutputStream().write(ascii("GET /plain/big?size=20000000 HTTP/1.1\r\nHost: x\r\n\r\n"));
            s.getInputStream().readNBytes(100_000);
            s.setSoLinger(true, 0);
        }
        // a client that sends half a request and closes
        send(ascii("GET /bucket/obj HTTP/1.1\r\nHost: x\r\nAuthor"), true);
        await().atMost(Duration.ofSeconds(10)).until(() -> rig.gateway.inFlight() == 0);

        LoggerFactory.getLogger("levee.test").warn("end-of-test-marker");
        await().atMost(Duration.ofSeconds(10)).until(() -> Files.exists(log) && Files.readString(log).contains("end-of-test-marker"));
        List<String> lines = Files.readAllLines(log);
        List<String> bad = lines.stream()
                .filter(l -> l.startsWith("<131>") || l.startsWith("<130>") || l.startsWith("<129>") || l.startsWith("<128>")
                        || l.contains("\tat ") || l.contains("\\n\tat") || l.contains("Unhandled exception"))
                .toList();
        System.out.printf("log lines: %d, ERROR or stack trace: %d%n", lines.size(), bad.size());
        assertThat(bad).as("no ERROR line and no stack trace in the log").isEmpty();
    }

    /** A presigned URL is a credential until it expires: a failed backend is logged with the path, not the query. */
    @Test
    void aFailedBackendIsLoggedWithThePathNotThePresignedQuery() throws Exception {
        Path log = dir.resolve("gateway.log");
        Logging.configure(new LogTarget("file", null, 0, log), "levee-gateway", "DEBUG");
        int dead;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            dead = s.getLocalPort(); // closed below: nothing listens there
        }
        int deadPort = dead;
        rig = TestGateway.start(o -> o.backend(new dev.levee.runtime.HostPort("127.0.0.1", deadPort)));
        String answer = send(ascii("GET /demo/obj8m?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=levee-demo%2F20261202"
                + "&X-Amz-Signature=bd704bc1secret HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"), false);
        assertThat(answer).startsWith("HTTP/1.1 502");
        await().atMost(Duration.ofSeconds(10)).until(() -> Files.exists(log) && Files.readString(log).contains("failed for"));
        String text = Files.readString(log);
        assertThat(text).contains("failed for GET /demo/obj8m").doesNotContain("X-Amz-Signature").doesNotContain("bd704bc1")
                .doesNotContain("X-Amz-Credential");
    }
}
