package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.client.ClientService;
import dev.levee.client.LeveeClient;
import dev.levee.config.QuotaConfigLoader;
import dev.levee.config.StaticQuotaSource;
import dev.levee.limiter.LimiterService;
import dev.levee.core.Member;
import dev.levee.core.MembershipView;
import dev.levee.observer.ObserverService;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The request-rate stack in one JVM (limiters, observer, levee-client and its {@code /v1/s3check} endpoint, as
 * {@link QuotaAccuracyIT} starts them) and two load generators that measure what fraction of a quota's rate is
 * admitted (issue 22 item 7, issue 26 item 2): a closed loop of many connections (as fast as the stack answers) and
 * open-loop streams paced at a multiple of each quota's rate.
 */
final class BurstAdmission implements AutoCloseable {

    final Vertx vertx = Vertx.vertx();
    final List<LimiterService> limiters = new ArrayList<>();
    ObserverService observer;
    LeveeClient client;
    ClientService endpoint;

    static <T> T done(Future<T> f) throws Exception {
        return f.await(10, TimeUnit.SECONDS);
    }

    /** Starts {@code n} limiters with {@code quotas} (its factor is the group size when ≤ n), an observer, a client. */
    BurstAdmission(int n, String quotas) throws Exception {
        List<Member> members = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            LimiterService l = done(LimiterService.start(vertx, new LimiterService.Options("b" + i,
                            new HostPort("127.0.0.1", 0), null, null, Duration.ofSeconds(1), 10_000),
                    new StaticQuotaSource(QuotaConfigLoader.parse(quotas, "test quotas")), SystemTicker.INSTANCE,
                    Metrics.newRegistry()));
            limiters.add(l);
            members.add(new Member("b" + i, l.address().toString()));
        }
        int factor = QuotaConfigLoader.parse(quotas, "test quotas").factor();
        MembershipView view = new MembershipView(1, factor, members);
        observer = done(ObserverService.start(vertx, new HostPort("127.0.0.1", 0), () -> view, () -> true,
                Metrics.newRegistry()));
        client = done(LeveeClient.start(vertx, LeveeClient.Options.builder(new HostPort("127.0.0.1", observer.port()))
                .refresh(Duration.ofMillis(500)).checkTimeout(Duration.ofMillis(250)).backoff(Duration.ofSeconds(2))
                .build(),
                SystemTicker.INSTANCE, Metrics.newRegistry()));
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> client.view().limiters().size() == n);
        endpoint = done(ClientService.start(vertx, new HostPort("127.0.0.1", 0), client, Metrics.newRegistry()));
    }

    @Override
    public void close() throws java.util.concurrent.TimeoutException {
        // as done(), without its throws Exception: close() throws no InterruptedException (AutoCloseable's advice)
        if (endpoint != null) {
            endpoint.stop().await(10, TimeUnit.SECONDS);
        }
        if (client != null) {
            client.stop().await(10, TimeUnit.SECONDS);
        }
        if (observer != null) {
            observer.stop().await(10, TimeUnit.SECONDS);
        }
        vertx.close().await(20, TimeUnit.SECONDS);
    }

    /** A check as levee-client's endpoint takes it (what NGINX's subrequest sends). */
    RequestOptions viaClient(String bucket, long seq) {
        return new RequestOptions().setMethod(HttpMethod.GET).setHost("127.0.0.1").setPort(endpoint.port())
                .setURI("/v1/s3check").setTimeout(5000).putHeader("X-Levee-Method", "GET")
                .putHeader("X-Levee-Host", "127.0.0.1").putHeader("X-Levee-Uri", "/" + bucket + "/k" + seq);
    }

    /** Accepted, rejected, other, nanoseconds. */
    record Counts(long accepted, long rejected, long other, long nanos) {
        double seconds() {
            return nanos / 1e9;
        }

        double offeredPerSecond() {
            return (accepted + rejected + other) / seconds();
        }
    }

    /**
     * {@code connections} closed-loop senders for {@code seconds} on a Vert.x of their own (one event loop, one
     * keep-alive connection each, the next request sent when the answer is in), through levee-client's endpoint or,
     * with {@code direct}, straight at the first limiter ({@code POST /v1/check}, g = 1).
     */
    Counts closedLoop(String bucket, double seconds, int connections, boolean direct) throws Exception {
        AtomicLong accepted = new AtomicLong();
        AtomicLong rejected = new AtomicLong();
        AtomicLong other = new AtomicLong();
        AtomicLong seq = new AtomicLong();
        Vertx load = Vertx.vertx(new io.vertx.core.VertxOptions().setEventLoopPoolSize(1));
        try {
            HttpClientAgent http = load.createHttpClient(new io.vertx.core.http.HttpClientOptions()
                    .setKeepAlive(true).setConnectTimeout(5000).setIdleTimeout(10),
                    new io.vertx.core.http.PoolOptions().setHttp1MaxSize(connections));
            HostPort limiter = limiters.getFirst().address();
            long start = System.nanoTime();
            long end = start + (long) (seconds * 1e9);
            CountDownLatch finished = new CountDownLatch(connections);
            Runnable[] send = new Runnable[1];
            send[0] = () -> {
                if (System.nanoTime() - end >= 0) {
                    finished.countDown();
                    return;
                }
                long n = seq.incrementAndGet();
                Future<io.vertx.core.http.HttpClientResponse> sent = direct
                        ? http.request(new RequestOptions().setMethod(HttpMethod.POST).setHost(limiter.host())
                                .setPort(limiter.port()).setURI("/v1/check").setTimeout(5000)
                                .putHeader("Content-Type", "application/json"))
                        .compose(r -> r.send("{\"resource\":\"" + bucket + "\",\"key\":\"k" + n
                                + "\",\"operation\":\"GetObject\",\"g\":1}"))
                        : http.request(viaClient(bucket, n)).compose(r -> r.send());
                sent.compose(r -> r.body().map(b -> r.statusCode())).onComplete(ar -> {
                    if (ar.failed()) {
                        other.incrementAndGet();
                    } else {
                        int status = ar.result();
                        (status == 200 ? accepted : status == 429 ? rejected : other).incrementAndGet();
                    }
                    send[0].run();
                });
            };
            load.runOnContext(v -> {
                for (int c = 0; c < connections; c++) {
                    send[0].run();
                }
            });
            assertThat(finished.await((long) seconds + 30, TimeUnit.SECONDS)).as("senders finished").isTrue();
            return new Counts(accepted.get(), rejected.get(), other.get(), System.nanoTime() - start);
        } finally {
            load.close().await(10, TimeUnit.SECONDS);
        }
    }

    /**
     * Open-loop streams through levee-client, each paced at its own rate (one pacing timer, 1 ms tick, as the
     * demo's generator), for {@code seconds}; counts the answers of requests sent after {@code skip} seconds (so
     * the first burst of a fresh counter is not counted).
     *
     * @param rates bucket → offered requests per second
     * @return bucket → accepted, rejected, other in the counted window (nanos: the window's length)
     */
    Map<String, Counts> paced(Map<String, Double> rates, double seconds, double skip) throws Exception {
        List<String> buckets = new ArrayList<>(rates.keySet());
        int m = buckets.size();
        AtomicLongArray counts = new AtomicLongArray(m * 3);
        Vertx load = Vertx.vertx(new io.vertx.core.VertxOptions().setEventLoopPoolSize(1));
        try {
            HttpClientAgent http = load.createHttpClient(new io.vertx.core.http.HttpClientOptions()
                    .setKeepAlive(true).setConnectTimeout(5000).setIdleTimeout(10),
                    new io.vertx.core.http.PoolOptions().setHttp1MaxSize(256));
            long start = System.nanoTime();
            long end = start + (long) (seconds * 1e9);
            long counted = start + (long) (skip * 1e9);
            long[] issued = new long[m];
            AtomicLong inFlight = new AtomicLong();
            CountDownLatch finished = new CountDownLatch(1);
            load.setPeriodic(1, id -> {
                long now = System.nanoTime();
                if (now - end >= 0) {
                    load.cancelTimer(id);
                    finished.countDown();
                    return;
                }
                double elapsed = (now - start) / 1e9;
                for (int i = 0; i < m; i++) {
                    double rate = rates.get(buckets.get(i));
                    while (issued[i] / rate <= elapsed) {
                        long n = issued[i]++;
                        boolean count = now - counted >= 0;
                        int idx = i;
                        inFlight.incrementAndGet();
                        http.request(viaClient(buckets.get(i), n)).compose(r -> r.send())
                                .compose(r -> r.body().map(b -> r.statusCode())).onComplete(ar -> {
                                    inFlight.decrementAndGet();
                                    if (!count) {
                                        return;
                                    }
                                    int k = ar.failed() ? 2 : ar.result() == 200 ? 0 : ar.result() == 429 ? 1 : 2;
                                    counts.incrementAndGet(idx * 3 + k);
                                });
                    }
                }
            });
            assertThat(finished.await((long) seconds + 30, TimeUnit.SECONDS)).as("pacing finished").isTrue();
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> inFlight.get() == 0);
            Map<String, Counts> out = new java.util.LinkedHashMap<>();
            long window = end - counted;
            for (int i = 0; i < m; i++) {
                out.put(buckets.get(i), new Counts(counts.get(i * 3), counts.get(i * 3 + 1), counts.get(i * 3 + 2), window));
            }
            return out;
        } finally {
            load.close().await(10, TimeUnit.SECONDS);
        }
    }
}
