package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import dev.levee.s3.S3Request;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A client stopped while its checks are still connecting to a limiter: every check still gets a decision
 * and nothing is thrown on the event loop. Before: the checks waiting to be batched were never answered
 * (the closed Vert.x client threw {@code IllegalStateException} from {@code request()} inside the
 * completion handler), and the connect timer that {@code RequestOptions.setTimeout} arms fired after the
 * pool was closed ({@code NullPointerException} in Vert.x 5.1's {@code SharedHttpClientConnectionGroup},
 * the same race as its "Promise already completed").
 */
class StopUnderLoadTest {

    @Test
    void clientStoppedWhileChecksAreConnectingAnswersThemAllAndThrowsNothing() throws Exception {
        Vertx vertx = Vertx.vertx();
        ConcurrentLinkedQueue<Throwable> unhandled = new ConcurrentLinkedQueue<>();
        vertx.exceptionHandler(unhandled::add);
        List<Socket> fillers = new ArrayList<>();
        // a limiter whose accept queue is full: connections to it hang in the handshake
        try (ServerSocket stuck = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            for (int i = 0; i < 4; i++) {
                Socket s = new Socket();
                try {
                    s.connect(stuck.getLocalSocketAddress(), 200);
                    fillers.add(s);
                } catch (java.io.IOException e) {
                    s.close();
                    break; // the queue is full
                }
            }
            String list = "{\"revision\":1,\"factor\":1,\"limiters\":[{\"id\":\"stuck\",\"address\":\"127.0.0.1:"
                    + stuck.getLocalPort() + "\"}]}";
            HttpServer observer = vertx.createHttpServer().requestHandler(req -> req.response()
                    .putHeader("Content-Type", "application/json").end(list)).listen(0, "127.0.0.1")
                    .await(10, TimeUnit.SECONDS);
            LeveeClient client = LeveeClient.start(vertx,
                    LeveeClient.Options.builder(new HostPort("127.0.0.1", observer.actualPort()))
                            .refresh(Duration.ofHours(1)).checkTimeout(Duration.ofMillis(300))
                            .backoff(Duration.ofSeconds(30)).build(),
                    SystemTicker.INSTANCE, Metrics.newRegistry()).await(10, TimeUnit.SECONDS);
            List<Future<ClientDecision>> checks = new ArrayList<>();
            io.vertx.core.Promise<Void> sent = io.vertx.core.Promise.promise();
            vertx.runOnContext(v -> {
                for (int i = 0; i < 16; i++) { // 4 sent (--limiter-in-flight), 12 waiting to be batched
                    checks.add(client.check(S3Request.fromRequestUri("GET", "127.0.0.1", "/b/k" + i, null)));
                }
                vertx.setTimer(50, t -> client.stop().onComplete(ar -> sent.complete()));
            });
            sent.future().await(10, TimeUnit.SECONDS);
            for (Future<ClientDecision> f : checks) {
                assertThat(f.await(10, TimeUnit.SECONDS).result()).isEqualTo(ClientDecision.Result.FAILED);
            }
            // past every request's timeout
            vertx.timer(800).await(10, TimeUnit.SECONDS);
            assertThat(unhandled).as("exceptions thrown on the event loop").isEmpty();
        } finally {
            for (Socket s : fillers) {
                s.close();
            }
            vertx.close().await(10, TimeUnit.SECONDS);
        }
    }
}
