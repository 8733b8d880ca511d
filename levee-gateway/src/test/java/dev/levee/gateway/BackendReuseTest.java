package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.runtime.HostPort;
import dev.levee.runtime.SystemTicker;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A backend that closes a keep-alive connection as the gateway reuses it (what S3Proxy/Jetty does
 * after some 400s, and any backend at its idle timeout): an idempotent bodiless request is sent once
 * more on a fresh connection instead of failing with 502; a request with a body is not resent.
 */
class BackendReuseTest {

    /**
     * Raw backend: on each connection, answers the first request with 200 keep-alive, then reads the
     * next request line and closes without answering. Records every request line it read.
     */
    static final class ClosingBackend implements AutoCloseable {
        final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        final List<String> lines = new CopyOnWriteArrayList<>();
        final Thread acceptor;

        ClosingBackend() throws Exception {
            acceptor = Thread.ofVirtual().start(() -> {
                while (!server.isClosed()) {
                    try {
                        Socket s = server.accept();
                        Thread.ofVirtual().start(() -> serve(s));
                    } catch (Exception e) {
                        return;
                    }
                }
            });
        }

        private void serve(Socket s) {
            try (s) {
                BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1));
                OutputStream out = s.getOutputStream();
                String line = readHead(in);
                if (line == null) {
                    return;
                }
                lines.add(line);
                out.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
                        .getBytes(StandardCharsets.ISO_8859_1));
                out.flush();
                String next = readHead(in); // the connection is reused: read the request, then drop it unanswered
                if (next != null) {
                    lines.add(next);
                }
            } catch (Exception e) {
                // the peer went away
            }
        }

        /** Reads a request head (line and headers, no body); returns the request line or null at EOF. */
        private static String readHead(BufferedReader in) throws Exception {
            String first = in.readLine();
            if (first == null) {
                return null;
            }
            for (String h; (h = in.readLine()) != null && !h.isEmpty(); ) {
                // headers are not needed
            }
            return first;
        }

        int port() {
            return server.getLocalPort();
        }

        @Override
        public void close() throws java.io.IOException {
            server.close();
        }
    }

    @Test
    void anIdempotentRequestOnAConnectionTheBackendClosedIsSentOnceMore() throws Exception {
        Vertx vertx = Vertx.vertx();
        try (ClosingBackend backend = new ClosingBackend()) {
            HostPort any = new HostPort("127.0.0.1", 0);
            GatewayService g = GatewayService.start(vertx, GatewayOptions.builder(new HostPort("127.0.0.1", backend.port()))
                            .listen(any).admin(any).enforce(false).backendTimeout(Duration.ofSeconds(30)).maxConnections(1)
                            .build(), null, SystemTicker.INSTANCE, Clock.systemUTC(), new SimpleMeterRegistry())
                    .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
            HttpClient http = HttpClient.newHttpClient();
            List<Integer> statuses = new ArrayList<>();
            for (String path : List.of("/b/first", "/b/second", "/b/third")) {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + g.port() + path))
                        .GET().build(), HttpResponse.BodyHandlers.ofString());
                statuses.add(r.statusCode());
            }
            assertThat(statuses).containsExactly(200, 200, 200);
            // each later request met a closing connection first, then went out again on a new one
            assertThat(backend.lines).containsExactly("GET /b/first HTTP/1.1", "GET /b/second HTTP/1.1",
                    "GET /b/second HTTP/1.1", "GET /b/third HTTP/1.1", "GET /b/third HTTP/1.1");

            HttpResponse<String> put = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + g.port() + "/b/put"))
                    .PUT(HttpRequest.BodyPublishers.ofString("data")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(put.statusCode()).as("a request with a body is never sent twice").isEqualTo(502);
            assertThat(backend.lines.stream().filter(l -> l.startsWith("PUT")).count()).isEqualTo(1);
            g.stop(Duration.ofSeconds(1)).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        } finally {
            vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }
}
