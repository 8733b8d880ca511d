package dev.levee.cli;

import dev.levee.cli.bench.Pacer;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Recorder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code levee bench http}: an open-loop HTTP load at one fixed rate against one or more URLs in turn — NGINX's
 * {@code /none/} and {@code /levee/} locations, say — with latency measured from each request's scheduled send time
 * (HdrHistogram; no coordinated omission), so that a stall anywhere on the path shows in the tail. Closed-loop tools
 * such as wrk wait for an answer before the next request and hide a pause in a lower rate instead. Run its JVM
 * with Epsilon (no collection: {@code LEVEE_JAVA_OPTS="-XX:+UnlockExperimentalVMOptions -XX:+UseEpsilonGC -Xmx4g"})
 * so that the generator cannot pause itself (issue 12, item 5; docs/BENCHMARKS.md).
 */
@Command(name = "http", mixinStandardHelpOptions = true,
        description = "Open-loop HTTP GETs at one fixed rate against each --url in turn (rounds alternate the order):"
                + " p50/p99/p99.9/max from the scheduled send time, and each URL's p99 against the first's.")
final class BenchHttp implements Callable<Integer> {

    @Option(names = "--url", required = true, converter = UrlConverter.class,
            description = "a URL on loopback to GET; repeat for several, measured in turn")
    List<URI> urls;

    /** {@code http://HOST:PORT/PATH}, read as a URI; what is not one is named, without Java's exception. */
    static final class UrlConverter implements picocli.CommandLine.ITypeConverter<URI> {
        @Override
        public URI convert(String value) {
            try {
                return new URI(value.trim());
            } catch (java.net.URISyntaxException e) {
                throw new picocli.CommandLine.TypeConversionException("'" + value + "' is not a URL (e.g."
                        + " http://127.0.0.1:8080/path): " + e.getReason());
            }
        }
    }

    /** How a URL is named in the output: its path, or host, port and path when another URL has the same path. */
    private String label(URI u) {
        String path = u.getRawPath() == null || u.getRawPath().isEmpty() ? "/" : u.getRawPath();
        long same = urls.stream().filter(o -> path.equals(o.getRawPath() == null || o.getRawPath().isEmpty() ? "/"
                : o.getRawPath())).count();
        return same > 1 ? u.getRawAuthority() + path : path;
    }

    /** Most requests/s offered to each URL: {@value}; far beyond what one generator's event loop sends. */
    static final double MAX_RATE = 1_000_000;

    @Option(names = "--rate", required = true, description = "requests per second offered to each URL")
    double rate;

    @Option(names = "--duration", converter = Converters.DurationConverter.class, defaultValue = "20s",
            description = "length of each measured phase (default: ${DEFAULT-VALUE})")
    Duration duration;

    @Option(names = "--warmup", converter = LimiterCommand.OptionalDurationConverter.class, defaultValue = "5s",
            description = "an unmeasured phase at the same rate against each URL first, 0 for none (default: ${DEFAULT-VALUE})")
    Duration warmup;

    @Option(names = "--connections", defaultValue = "64",
            description = "keep-alive connections per URL; a request waits for a free one, and the wait counts"
                    + " (default: ${DEFAULT-VALUE})")
    int connections;

    @Option(names = "--rounds", defaultValue = "1",
            description = "measured phases per URL; the order alternates between rounds (ABBA) (default: ${DEFAULT-VALUE})")
    int rounds;

    record Result(double done, double p50, double p99, double p999, double max, long errors) {
    }

    @Override
    public Integer call() throws Exception {
        if (!(rate > 0) || rate > MAX_RATE) {
            throw new UsageException("--rate must be a number of requests/s > 0 and at most "
                    + (long) MAX_RATE + " (one event loop's generator), got " + rate);
        }
        if (rate * duration.toNanos() / 1e9 < 1) {
            throw new UsageException("--rate " + rate + " requests/s sends no request in --duration "
                    + duration.toMillis() + " ms: raise either");
        }
        if (connections < 1 || connections > 10_000 || rounds < 1) {
            throw new UsageException("--connections must be 1-10000 and --rounds >= 1");
        }
        for (URI u : urls) {
            if (!"http".equals(u.getScheme()) || u.getHost() == null) {
                throw new UsageException("--url must be http://HOST:PORT/PATH, got " + u);
            }
            if (!java.net.InetAddress.getByName(u.getHost()).isLoopbackAddress()) {
                throw new UsageException("--url must be on loopback (load tests stay on this machine), got " + u);
            }
        }
        Vertx vertx = dev.levee.runtime.Http.vertx(1);
        HttpClientAgent http = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true).setTcpNoDelay(true),
                new PoolOptions().setHttp1MaxSize(connections).setMaxWaitQueueSize(-1));
        System.out.printf(Locale.ROOT, "levee bench http: %.0f requests/s offered to each of %d URLs, %d ms phases, %d"
                + " connections, generator collector: %s%n", rate, urls.size(), duration.toMillis(), connections,
                java.lang.management.ManagementFactory.getGarbageCollectorMXBeans().stream()
                        .map(java.lang.management.GarbageCollectorMXBean::getName).reduce((x, y) -> x + ", " + y)
                        .orElse("none"));
        for (URI u : urls) {
            if (!warmup.isZero() && failedAll(phase(vertx, http, u, warmup), u, "warm-up")) {
                http.close();
                vertx.close().await(10, TimeUnit.SECONDS);
                return 1;
            }
        }
        List<List<Result>> results = new ArrayList<>();
        for (int i = 0; i < urls.size(); i++) {
            results.add(new ArrayList<>());
        }
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < urls.size(); k++) {
                int i = r % 2 == 0 ? k : urls.size() - 1 - k;
                Result res = phase(vertx, http, urls.get(i), duration);
                results.get(i).add(res);
                System.out.printf(Locale.ROOT, "round %d %-40s %,9.0f done/s  p50 %7.3f  p99 %7.3f  p99.9 %7.3f  max %8.3f ms"
                        + "  errors %d%n", r + 1, label(urls.get(i)), res.done(), res.p50(), res.p99(), res.p999(),
                        res.max(), res.errors());
            }
        }
        for (int i = 0; i < urls.size(); i++) {
            double p99 = results.get(i).stream().mapToDouble(Result::p99).average().orElse(0);
            double ref = results.get(0).stream().mapToDouble(Result::p99).average().orElse(0);
            System.out.printf(Locale.ROOT, "mean of %d  %-40s p99 %7.3f ms  (%+.3f ms against %s)%n", rounds,
                    label(urls.get(i)), p99, p99 - ref, label(urls.get(0)));
        }
        http.close();
        vertx.close().await(10, TimeUnit.SECONDS);
        int status = 0;
        for (int i = 0; i < urls.size(); i++) {
            if (results.get(i).stream().allMatch(r -> r.done() == 0)) {
                failedAll(results.get(i).get(0), urls.get(i), "measured phases");
                status = 1;
            }
        }
        return status;
    }

    /** True, after saying so on stderr, when no request of a phase got a 2xx answer (the first error is printed above). */
    private static boolean failedAll(Result r, URI u, String phase) {
        if (r.done() > 0) {
            return false;
        }
        System.err.printf(Locale.ROOT, "levee bench http: no request to %s got a 2xx answer in the %s (%d errors)%n", u,
                phase, r.errors());
        return true;
    }

    private Result phase(Vertx vertx, HttpClientAgent http, URI u, Duration d) throws InterruptedException {
        Recorder rec = new Recorder(3);
        AtomicLong done = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        long start = System.nanoTime();
        long total = Math.max(1, (long) (rate * d.toNanos() / 1e9));
        CountDownLatch finished = new CountDownLatch(1);
        RequestOptions get = new RequestOptions().setMethod(HttpMethod.GET).setHost(u.getHost())
                .setPort(u.getPort() < 0 ? 80 : u.getPort()).setURI(u.getRawPath() + (u.getRawQuery() == null ? ""
                        : "?" + u.getRawQuery())).setIdleTimeout(30_000);
        // each request issued at its scheduled time (Pacer, to the ~50 µs); latency counts from that time
        Pacer.start(((io.vertx.core.internal.ContextInternal) vertx.getOrCreateContext()).nettyEventLoop(), start, rate,
                total, n -> {
            long scheduled = Pacer.scheduled(start, rate, n);
            http.request(get).compose(r -> r.send()).compose(resp -> resp.body().map(b -> resp.statusCode()))
                    .onComplete(ar -> {
                        rec.recordValue(Math.max(1, System.nanoTime() - scheduled));
                        if (ar.succeeded() && ar.result() / 100 == 2) {
                            done.incrementAndGet();
                        } else if (errors.getAndIncrement() == 0) {
                            System.err.println("first error against " + u + ": "
                                    + (ar.failed() ? Main.describe(ar.cause()) : "HTTP " + ar.result()));
                        }
                        if (done.get() + errors.get() == total) {
                            finished.countDown();
                        }
                    });
        });
        finished.await(d.toSeconds() + 60, TimeUnit.SECONDS);
        double secs = (System.nanoTime() - start) / 1e9;
        var h = rec.getIntervalHistogram();
        return new Result(done.get() / secs, h.getValueAtPercentile(50) / 1e6, h.getValueAtPercentile(99) / 1e6,
                h.getValueAtPercentile(99.9) / 1e6, h.getMaxValue() / 1e6, errors.get());
    }
}
