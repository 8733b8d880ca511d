package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.ResourceQuotas;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import dev.levee.s3.S3Request;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A levee-client with the client side of request leases (issue 23 item 2) whose limiter grants no lease (it answers a
 * lease ask with a check's answer: not a grant) still sends every check to the limiter and answers as the limiter did,
 * on hot keys too, while it tells hot keys from cold ones on the client's own clock; without it, nothing of it runs (no
 * lease meters). Admission from leases: {@link LeaseAdmissionTest}.
 */
class RequestLeasesClientTest {

    Vertx vertx;
    HttpServer observer;
    final AtomicInteger decided = new AtomicInteger();

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        HttpServer limiter = vertx.createHttpServer().requestHandler(req -> req.body().onSuccess(b -> {
            if (req.method() != HttpMethod.POST) {
                req.response().setStatusCode(405).end(); // no check wire: the client keeps to POST
                return;
            }
            JsonObject body = b.toJsonObject();
            List<?> checks = req.path().equals("/v1/checks") ? body.getJsonArray("checks").getList() : List.of(body);
            JsonArray answers = new JsonArray();
            for (int i = 0; i < checks.size(); i++) {
                if (!req.path().equals(dev.levee.lease.RequestLeaseWire.PATH)) { // a lease ask is not a check
                    decided.incrementAndGet();
                }
                answers.add(new JsonObject().put("result", "rejected").put("level", "resource")
                        .put("limitKey", "resource:hot").put("remaining", 0).put("retryAfter", 1).put("limiter", "l1"));
            }
            req.response().putHeader("Content-Type", "application/json").end(req.path().equals("/v1/checks")
                    ? new JsonObject().put("decisions", answers).encode() : answers.getJsonObject(0).encode());
        })).listen(0, "127.0.0.1").await(10, TimeUnit.SECONDS);
        observer = StandIns.observer(vertx, limiter.actualPort());
    }

    @AfterEach
    void stop() throws Exception {
        vertx.close().await(10, TimeUnit.SECONDS);
    }

    LeveeClient client(MeterRegistry registry, RequestLeases leases, AtomicLong clock) throws Exception {
        return LeveeClient.start(vertx, LeveeClient.Options.builder(new HostPort("127.0.0.1", observer.actualPort()))
                .refresh(Duration.ofHours(1)).checkTimeout(Duration.ofSeconds(2)).backoff(Duration.ofSeconds(30)).build(),
                clock::get, registry, leases).await(10, TimeUnit.SECONDS);
    }

    @Test
    void withoutAGrantEveryCheckOnAHotKeyIsStillDecidedByTheLimiter() throws Exception {
        MeterRegistry registry = Metrics.newRegistry();
        QuotaConfig cfg = QuotaConfig.builder().defaultQuota(new Quota(1000, 100))
                .resource("hot", new ResourceQuotas(new Quota(5000, 500), List.of())).build();
        RequestLeases leases = new RequestLeases(new RequestLeases.Settings(100, Duration.ofSeconds(1)), () -> cfg,
                registry);
        AtomicLong clock = new AtomicLong(7_000_000_000L);
        LeveeClient c = client(registry, leases, clock);
        for (int i = 0; i < 400; i++) { // 400 checks at 1 ms: about 330/s by the estimate at the end
            ClientDecision d = c.check(S3Request.fromRequestUri("GET", null, "/hot/k" + i, null)).await(10, TimeUnit.SECONDS);
            assertThat(d.result()).isEqualTo(ClientDecision.Result.REJECTED);
            clock.addAndGet(1_000_000L);
        }
        assertThat(decided.get()).as("no check answered at the client").isEqualTo(400);
        assertThat(leases.hotKeys().isHot("resource:hot", clock.get())).isTrue();
        double hot = registry.get("levee_client_lease_checks_total").tag("key", "hot").counter().count();
        double cold = registry.get("levee_client_lease_checks_total").tag("key", "cold").counter().count();
        assertThat(hot + cold).isEqualTo(400);
        assertThat(hot).isGreaterThan(250);
        assertThat(registry.get("levee_client_lease_asks_total").tag("result", "malformed").counter().count())
                .as("one ask a second at most after a malformed answer").isBetween(1.0, 2.0);
        assertThat(registry.get("levee_client_lease_admissions_total").tag("result", "admitted").counter().count()).isZero();
    }

    @Test
    void withLeasesOffNothingOfItRuns() throws Exception {
        MeterRegistry registry = Metrics.newRegistry();
        LeveeClient c = client(registry, null, new AtomicLong());
        assertThat(c.check(S3Request.fromRequestUri("GET", null, "/hot/k", null)).await(10, TimeUnit.SECONDS).result())
                .isEqualTo(ClientDecision.Result.REJECTED);
        assertThat(registry.find("levee_client_lease_checks_total").meters()).isEmpty();
        assertThat(registry.find("levee_client_lease_keys").meters()).isEmpty();
    }
}
