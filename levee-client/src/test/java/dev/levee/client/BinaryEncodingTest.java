package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.runtime.HostPort;
import dev.levee.runtime.Http;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import dev.levee.s3.S3Request;
import dev.levee.wire.BinaryChecks;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The check encoding levee-client speaks to a limiter (issue 12): JSON until the limiter's answer lists the
 * binary type in {@code Accept-Post}, binary from then on; JSON again, for good, when a binary body is
 * refused with an answer that is not binary (the limiter at that address became an older one). With the check wire
 * off: the wire is {@link WireTest}'s.
 */
class BinaryEncodingTest {

    Vertx vertx = Vertx.vertx();
    /** Content-Type of every check request a stand-in limiter got, in order. */
    final List<String> seen = new CopyOnWriteArrayList<>();
    /** Whether the stand-in takes binary bodies (else it reads every body as JSON, as an older limiter). */
    volatile boolean takesBinary = true;

    @AfterEach
    void stop() throws Exception {
        vertx.close().await(10, TimeUnit.SECONDS);
    }

    HttpServer limiter(boolean advertises) throws Exception {
        return vertx.createHttpServer().requestHandler(req -> req.body().onSuccess(b -> {
            String type = req.getHeader("Content-Type");
            seen.add(type);
            if (BinaryChecks.isBinary(type) && takesBinary) {
                BinaryChecks.Checks in = BinaryChecks.readChecks(b.getBytes());
                var out = BinaryChecks.start(in.count(), 64);
                for (int i = 0; i < in.count(); i++) {
                    BinaryChecks.writeDecision(out, true, "default", "default:" + in.resources()[i], 7, 0);
                }
                req.response().putHeader("Content-Type", BinaryChecks.CONTENT_TYPE).end(Http.buffer(out));
                return;
            }
            JsonObject body;
            try {
                body = b.toJsonObject();
            } catch (RuntimeException e) {
                req.response().setStatusCode(400).putHeader("Content-Type", "application/json")
                        .end("{\"error\":\"malformed JSON at line 1, column 1\"}");
                return;
            }
            JsonObject d = new JsonObject().put("result", "accepted").put("level", "default")
                    .put("limitKey", "default:" + body.getString("resource", "batch")).put("remaining", 7)
                    .put("retryAfter", 0).put("limiter", "stub");
            if (advertises) {
                req.response().putHeader("Accept-Post", BinaryChecks.ACCEPT_POST);
            }
            req.response().putHeader("Content-Type", "application/json").end(req.path().equals("/v1/checks")
                    ? new JsonObject().put("decisions", new JsonArray(java.util.Collections.nCopies(
                            body.getJsonArray("checks").size(), d))).encode() : d.encode());
        })).listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
    }

    LeveeClient client(HttpServer limiter) throws Exception {
        String list = new JsonObject().put("revision", 1).put("factor", 1).put("limiters", new JsonArray()
                .add(new JsonObject().put("id", "l1").put("address", "127.0.0.1:" + limiter.actualPort()))).encode();
        HttpServer observer = vertx.createHttpServer().requestHandler(req -> req.response()
                .putHeader("Content-Type", "application/json").end(list)).listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
        return LeveeClient.start(vertx, LeveeClient.Options.builder(new HostPort("127.0.0.1", observer.actualPort()))
                .refresh(Duration.ofHours(1)).checkTimeout(Duration.ofSeconds(2)).backoff(Duration.ofSeconds(30))
                .wire(false).build(),
                SystemTicker.INSTANCE, Metrics.newRegistry()).await(10, TimeUnit.SECONDS);
    }

    ClientDecision check(LeveeClient c, int k) throws Exception {
        return c.check(S3Request.fromRequestUri("GET", "127.0.0.1", "/bkt/k" + k, null)).await(10, TimeUnit.SECONDS);
    }

    @Test
    void switchesToBinaryOnceTheLimiterSaysItTakesIt() throws Exception {
        LeveeClient c = client(limiter(true));
        for (int k = 0; k < 5; k++) {
            ClientDecision d = check(c, k);
            assertThat(d.result()).isEqualTo(ClientDecision.Result.ACCEPTED);
            assertThat(d.remaining()).isEqualTo(7);
            assertThat(d.level()).isEqualTo("default");
            assertThat(d.limitKey()).isEqualTo("default:bkt");
        }
        assertThat(seen.get(0)).isEqualTo("application/json");
        assertThat(seen.subList(1, seen.size())).hasSize(4).allMatch(BinaryChecks::isBinary);
    }

    @Test
    void aLimiterThatDoesNotSayItTakesBinaryIsAskedInJson() throws Exception {
        LeveeClient c = client(limiter(false));
        for (int k = 0; k < 5; k++) {
            assertThat(check(c, k).result()).isEqualTo(ClientDecision.Result.ACCEPTED);
        }
        assertThat(seen).hasSize(5).containsOnly("application/json");
    }

    @Test
    void aBinaryBodyRefusedInJsonSendsTheCheckAgainInJsonForGood() throws Exception {
        LeveeClient c = client(limiter(true));
        assertThat(check(c, 0).result()).isEqualTo(ClientDecision.Result.ACCEPTED); // JSON, learns binary
        takesBinary = false; // the limiter at that address is now an older version
        ClientDecision d = check(c, 1);
        assertThat(d.result()).isEqualTo(ClientDecision.Result.ACCEPTED);
        assertThat(d.attempts()).isEqualTo(1); // sent again to the same limiter, not failed over
        assertThat(check(c, 2).result()).isEqualTo(ClientDecision.Result.ACCEPTED);
        assertThat(seen).hasSize(4);
        assertThat(BinaryChecks.isBinary(seen.get(1))).isTrue();
        assertThat(seen.subList(2, 4)).containsOnly("application/json"); // and JSON from then on, though advertised
    }
}
