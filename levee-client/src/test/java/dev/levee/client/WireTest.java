package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import dev.levee.s3.S3Request;
import dev.levee.wire.BinaryChecks;
import dev.levee.wire.CheckWire;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.NetSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * levee-client's end of the check wire ({@link dev.levee.wire.WireConnection}, {@link CheckWire}) against stand-in limiters that
 * speak it the way the test tells them to: answers matched to their checks, the checks of one turn in one frame,
 * HTTP for a limiter that does not take the wire, and every way a connection can fail — a stalled limiter, an
 * ERROR frame, answers that do not match, GOAWAY — ending with each check decided by another limiter or again.
 */
class WireTest {

    /** How a stand-in behaves on the wire. */
    enum Mode { ANSWER, STALL, ERROR, WRONG_COUNT, NO_UPGRADE, GOAWAY_AFTER_FIRST_FRAME, DRIBBLE }

    final Vertx vertx = Vertx.vertx();
    final MeterRegistry registry = Metrics.newRegistry();
    LeveeClient client;

    @AfterEach
    void stop() throws Exception {
        if (client != null) {
            client.stop();
        }
        vertx.close().await(10, TimeUnit.SECONDS);
    }

    /** A stand-in limiter: the wire (as its mode says) and the JSON HTTP checks. */
    final class Stub {
        final String id;
        volatile Mode mode;
        final AtomicInteger upgrades = new AtomicInteger();
        final AtomicInteger httpChecks = new AtomicInteger();
        /** Checks per CHECKS frame received, in order. */
        final List<Integer> frames = new CopyOnWriteArrayList<>();
        HttpServer server;

        Stub(String id, Mode mode) throws Exception {
            this.id = id;
            this.mode = mode;
            server = vertx.createHttpServer().requestHandler(req -> {
                if (req.path().equals(CheckWire.PATH) && "GET".equals(req.method().name())) {
                    upgrades.incrementAndGet();
                    if (this.mode == Mode.NO_UPGRADE) {
                        req.response().setStatusCode(405).end("{\"error\":\"method GET not allowed\"}");
                        return;
                    }
                    req.response().putHeader("Upgrade", CheckWire.PROTOCOL).putHeader("Connection", "Upgrade");
                    req.toNetSocket().onSuccess(this::wire);
                    return;
                }
                req.body().onSuccess(b -> {
                    httpChecks.incrementAndGet();
                    JsonObject body = b.toJsonObject();
                    List<JsonObject> checks = new ArrayList<>();
                    if (req.path().equals("/v1/checks")) {
                        body.getJsonArray("checks").forEach(o -> checks.add((JsonObject) o));
                    } else {
                        checks.add(body);
                    }
                    JsonArray answers = new JsonArray();
                    for (JsonObject c : checks) {
                        answers.add(new JsonObject().put("result", "accepted").put("level", "default")
                                .put("limitKey", id + ":" + c.getString("resource")).put("remaining", 3)
                                .put("retryAfter", 0).put("limiter", id));
                    }
                    req.response().putHeader("Content-Type", "application/json").end(req.path().equals("/v1/checks")
                            ? new JsonObject().put("decisions", answers).encode() : answers.getJsonObject(0).encode());
                });
            }).listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
        }

        void wire(NetSocket so) {
            Buffer[] acc = {Buffer.buffer()};
            so.handler(chunk -> {
                acc[0].appendBuffer(chunk);
                while (acc[0].length() >= 4 && acc[0].length() >= 4 + acc[0].getInt(0)) {
                    int len = acc[0].getInt(0);
                    ByteBuf f = Unpooled.wrappedBuffer(acc[0].getBytes(4, 4 + len));
                    acc[0] = acc[0].getBuffer(4 + len, acc[0].length());
                    frame(so, f);
                }
            });
        }

        void frame(NetSocket so, ByteBuf f) {
            byte type = f.readByte();
            int id = f.readInt();
            assertThat(type).isEqualTo(CheckWire.CHECKS);
            BinaryChecks.CheckCursor in = new BinaryChecks.CheckCursor();
            int n = in.validate(f);
            frames.add(n);
            ByteBuf out = Unpooled.buffer();
            switch (mode) {
                case STALL -> {
                    return;
                }
                case ERROR -> {
                    CheckWire.writeError(out, id, "frame type 9 is not CHECKS (1)");
                    so.write(bytes(out));
                    return;
                }
                default -> {
                }
            }
            int start = CheckWire.startFrame(out, CheckWire.ANSWERS, id);
            int answers = mode == Mode.WRONG_COUNT ? n + 1 : n;
            out.writeByte(BinaryChecks.VERSION);
            out.writeShort(answers);
            for (int i = 0; i < answers; i++) {
                if (i < n) {
                    in.next();
                }
                BinaryChecks.writeDecision(out, BinaryChecks.VERSION, true, "default", this.id + ":" + in.resource, 5, 0,
                        BinaryChecks.SHADOW_NONE, 10, 2, 1);
            }
            CheckWire.endFrame(out, start);
            if (mode == Mode.GOAWAY_AFTER_FIRST_FRAME) {
                CheckWire.writeGoAway(out);
            }
            if (mode == Mode.DRIBBLE) {
                for (byte b : bytes(out).getBytes()) {
                    so.write(Buffer.buffer(new byte[] {b})); // a frame split across many reads
                }
                return;
            }
            so.write(bytes(out));
        }
    }

    static Buffer bytes(ByteBuf b) {
        byte[] a = new byte[b.readableBytes()];
        b.getBytes(b.readerIndex(), a);
        return Buffer.buffer(a);
    }

    LeveeClient client(int factor, Duration timeout, Stub... stubs) throws Exception {
        JsonArray members = new JsonArray();
        for (Stub s : stubs) {
            members.add(new JsonObject().put("id", s.id).put("address", "127.0.0.1:" + s.server.actualPort()));
        }
        String list = new JsonObject().put("revision", 1).put("factor", factor).put("limiters", members).encode();
        HttpServer observer = vertx.createHttpServer().requestHandler(req -> req.response()
                .putHeader("Content-Type", "application/json").end(list)).listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
        client = LeveeClient.start(vertx, LeveeClient.Options.builder(new HostPort("127.0.0.1", observer.actualPort()))
                .refresh(Duration.ofHours(1)).checkTimeout(timeout).backoff(Duration.ofSeconds(30)).build(),
                SystemTicker.INSTANCE, registry).await(10, TimeUnit.SECONDS);
        return client;
    }

    ClientDecision check(String bucket) throws Exception {
        return client.check(S3Request.fromRequestUri("GET", "127.0.0.1", "/" + bucket + "/k", null))
                .await(10, TimeUnit.SECONDS);
    }

    /** Checks made together from the client's own event loop, as an endpoint's requests of one turn are. */
    List<ClientDecision> together(int n, String bucket) throws Exception {
        io.vertx.core.Promise<List<ClientDecision>> all = io.vertx.core.Promise.promise();
        vertx.getOrCreateContext().runOnContext(v -> {
            List<Future<ClientDecision>> fs = new ArrayList<>();
            for (int k = 0; k < n; k++) {
                fs.add(client.check(S3Request.fromRequestUri("GET", "127.0.0.1", "/" + bucket + "/k" + k, null)));
            }
            Future.all(fs).map(cf -> cf.<ClientDecision>list()).onComplete(all);
        });
        return all.future().await(10, TimeUnit.SECONDS);
    }

    double count(String result) {
        Counter c = registry.find("levee_client_results_total").tag("result", result).counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void checksOfOneTurnGoInOneFrameAndEachGetsItsOwnAnswer() throws Exception {
        Stub l1 = new Stub("l1", Mode.ANSWER);
        client(1, Duration.ofSeconds(2), l1);
        ClientDecision first = check("bkt"); // over HTTP while the wire comes up
        assertThat(first.result()).isEqualTo(ClientDecision.Result.ACCEPTED);
        await().atMost(Duration.ofSeconds(5)).until(() -> {
            check("bkt");
            return !l1.frames.isEmpty();
        });
        int http = l1.httpChecks.get();
        int framesBefore = l1.frames.size();
        List<ClientDecision> ds = together(50, "photos");
        assertThat(ds).extracting(ClientDecision::result).containsOnly(ClientDecision.Result.ACCEPTED);
        assertThat(ds).extracting(ClientDecision::limitKey).containsOnly("l1:photos");
        assertThat(ds).extracting(ClientDecision::remaining).containsOnly(5L);
        assertThat(ds).extracting(ClientDecision::burst).containsOnly(2);
        assertThat(l1.httpChecks.get()).as("no HTTP check once the wire is up").isEqualTo(http);
        assertThat(l1.frames.subList(framesBefore, l1.frames.size())).as("checks per frame")
                .containsExactly(50);
        assertThat(l1.upgrades.get()).isEqualTo(1);
    }

    @Test
    void aLimiterThatRefusesTheUpgradeIsAskedOverHttpForGood() throws Exception {
        Stub old = new Stub("old", Mode.NO_UPGRADE);
        client(1, Duration.ofSeconds(2), old);
        for (int k = 0; k < 5; k++) {
            assertThat(check("bkt").result()).isEqualTo(ClientDecision.Result.ACCEPTED);
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> old.upgrades.get() == 1);
        for (int k = 0; k < 5; k++) {
            assertThat(check("bkt").limitKey()).isEqualTo("old:bkt");
        }
        assertThat(old.upgrades.get()).as("asked once").isEqualTo(1);
        assertThat(old.httpChecks.get()).isEqualTo(10);
    }

    /** Waits until every stub has decided a check that came over the wire. */
    void wireUp(Stub... stubs) {
        await().atMost(Duration.ofSeconds(5)).until(() -> {
            check("bkt");
            for (Stub s : stubs) {
                if (s.frames.isEmpty()) {
                    return false;
                }
            }
            return true;
        });
    }

    @Test
    void aStalledLimiterIsLeftAfterTheCheckTimeoutAndItsChecksDecidedByTheOther() throws Exception {
        Stub a = new Stub("a", Mode.ANSWER);
        Stub b = new Stub("b", Mode.ANSWER);
        client(2, Duration.ofMillis(300), a, b);
        wireUp(a, b);
        a.mode = Mode.STALL;
        int stalledFrames = a.frames.size();
        long t0 = System.nanoTime();
        List<ClientDecision> ds = together(20, "bkt");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertThat(ds).extracting(ClientDecision::result).containsOnly(ClientDecision.Result.ACCEPTED);
        assertThat(ds).extracting(ClientDecision::limitKey).containsOnly("b:bkt");
        assertThat(ms).as("decided within the timeout and one check period of it").isLessThan(2_000);
        assertThat(count("limiter_failure")).isPositive();
        assertThat(a.frames).as("the stalled limiter was asked").hasSizeGreaterThan(stalledFrames);
    }

    @Test
    void anErrorFrameFailsTheChecksOverToAnotherLimiter() throws Exception {
        Stub a = new Stub("a", Mode.ANSWER);
        Stub b = new Stub("b", Mode.ANSWER);
        client(2, Duration.ofSeconds(2), a, b);
        wireUp(a, b);
        a.mode = Mode.ERROR;
        List<ClientDecision> ds = together(10, "bkt");
        assertThat(ds).extracting(ClientDecision::result).containsOnly(ClientDecision.Result.ACCEPTED);
        assertThat(ds).extracting(ClientDecision::limitKey).containsOnly("b:bkt");
    }

    @Test
    void answersThatDoNotMatchTheFrameFailTheChecksOver() throws Exception {
        Stub a = new Stub("a", Mode.ANSWER);
        Stub b = new Stub("b", Mode.ANSWER);
        client(2, Duration.ofSeconds(2), a, b);
        wireUp(a, b);
        a.mode = Mode.WRONG_COUNT;
        List<ClientDecision> ds = together(10, "bkt");
        assertThat(ds).extracting(ClientDecision::result).containsOnly(ClientDecision.Result.ACCEPTED);
        assertThat(ds).extracting(ClientDecision::limitKey).containsOnly("b:bkt");
    }

    @Test
    void answersThatArriveAByteAtATimeAreEachMatchedToTheirCheck() throws Exception {
        Stub a = new Stub("a", Mode.ANSWER);
        client(1, Duration.ofSeconds(2), a);
        wireUp(a);
        a.mode = Mode.DRIBBLE;
        for (int round = 0; round < 3; round++) {
            List<ClientDecision> ds = together(5, "b" + round);
            assertThat(ds).extracting(ClientDecision::result).containsOnly(ClientDecision.Result.ACCEPTED);
            assertThat(ds).extracting(ClientDecision::limitKey).containsOnly("a:b" + round);
        }
        assertThat(count("limiter_failure")).isZero();
    }

    @Test
    void goAwayAnswersWhatWasSentThenTheClientClosesAndComesBack() throws Exception {
        Stub a = new Stub("a", Mode.ANSWER);
        client(1, Duration.ofSeconds(2), a);
        wireUp(a);
        a.mode = Mode.GOAWAY_AFTER_FIRST_FRAME;
        List<ClientDecision> ds = together(10, "bkt");
        assertThat(ds).extracting(ClientDecision::result).containsOnly(ClientDecision.Result.ACCEPTED);
        assertThat(ds).extracting(ClientDecision::limitKey).containsOnly("a:bkt");
        a.mode = Mode.ANSWER;
        // the client closed the connection it was told to leave; the next checks bring a new one up
        await().atMost(Duration.ofSeconds(5)).until(() -> {
            check("bkt");
            return a.upgrades.get() >= 2;
        });
        assertThat(count("limiter_failure")).isZero();
        assertThat(count("failed")).isZero();
    }
}
