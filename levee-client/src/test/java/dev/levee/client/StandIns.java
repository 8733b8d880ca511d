package dev.levee.client;

import dev.levee.runtime.HostPort;
import dev.levee.runtime.SystemTicker;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** The stand-in observer and the levee-client the endpoint tests start around their own stand-in limiter. */
final class StandIns {

    private StandIns() {
    }

    /** An observer on {@code vertx} whose list holds one limiter, {@code l1} at 127.0.0.1:{@code limiterPort}. */
    static HttpServer observer(Vertx vertx, int limiterPort) throws Exception {
        String list = new JsonObject().put("revision", 1).put("factor", 1).put("limiters", new JsonArray()
                .add(new JsonObject().put("id", "l1").put("address", "127.0.0.1:" + limiterPort))).encode();
        return vertx.createHttpServer().requestHandler(req -> req.response()
                .putHeader("Content-Type", "application/json").end(list)).listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
    }

    /**
     * A levee-client on {@code vertx} that takes its list from that observer (asked once an hour; limiter timeout
     * 2 s, list grace 30 s), counting into {@code registry}.
     */
    static LeveeClient client(Vertx vertx, HttpServer observer, MeterRegistry registry) throws Exception {
        return LeveeClient.start(vertx, LeveeClient.Options.builder(new HostPort("127.0.0.1", observer.actualPort()))
                .refresh(Duration.ofHours(1)).checkTimeout(Duration.ofSeconds(2)).backoff(Duration.ofSeconds(30))
                .build(), SystemTicker.INSTANCE,
                registry).await(10, TimeUnit.SECONDS);
    }
}
