package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.Vertx;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Closed-loop load on levee-client's {@code GET /v1/s3check} (what NGINX's subrequest calls), or on NGINX itself,
 * for accuracy tests:
 * every answer is counted, each admission with the instant its answer arrived, so that a test can check the bound
 * in every window as a user would observe it (QuotaAccuracyIT, RequestLeaseBoundIT).
 */
final class ClosedLoop {

    private ClosedLoop() {
    }

    /** What one run saw: when each admission's answer arrived (ns, sorted), the other answers, and its span. */
    record Run(long[] admittedAt, long rejected, long other, long startNs, long endNs) {
        double seconds() {
            return (endNs - startNs) / 1e9;
        }

        /** The most admissions in any closed window of {@code w} ns (it starts at an admission). */
        long most(long w) {
            long most = 0;
            for (int i = 0, j = 0; i < admittedAt.length; i++) {
                while (j < admittedAt.length && admittedAt[j] - admittedAt[i] <= w) {
                    j++;
                }
                most = Math.max(most, j - i);
            }
            return most;
        }

        /**
         * The longest time without an admission inside the run, ns, and when it began (ns after the start): a stall of
         * the drivers, the clients or the limiters (a GC pause, the scheduler) shows here as a pause far above
         * {@code 1 / rate}.
         */
        long[] longestPause() {
            long longest = 0;
            long at = 0;
            long prev = startNs;
            for (long t : admittedAt) {
                if (t - prev > longest) {
                    longest = t - prev;
                    at = prev - startNs;
                }
                prev = t;
            }
            return new long[] {longest, at};
        }

        /** The fewest admissions in a window of {@code w} ns inside the run, stepped by 10 ms. */
        long fewest(long w) {
            long fewest = Long.MAX_VALUE;
            for (long x = startNs; x + w <= endNs; x += 10_000_000L) {
                int from = lowerBound(x);
                int to = lowerBound(x + w);
                fewest = Math.min(fewest, to - from);
            }
            return fewest;
        }

        private int lowerBound(long t) {
            int i = Arrays.binarySearch(admittedAt, t);
            if (i < 0) {
                return -i - 1;
            }
            while (i > 0 && admittedAt[i - 1] == t) {
                i--;
            }
            return i;
        }
    }

    /**
     * An endpoint to drive: levee-client's {@code GET /v1/s3check} port (200 admitted, 429 refused), or with
     * {@code nginx} an S3 listener of NGINX with rate.lua, sent {@code GET /<bucket>/<key>} (503 refused, any other
     * answer of the backend admitted).
     */
    record Endpoint(int port, boolean nginx) {
        static Endpoint of(dev.levee.client.ClientService s) {
            return new Endpoint(s.port(), false);
        }

        static Endpoint nginx(int port) {
            return new Endpoint(port, true);
        }

        io.vertx.core.http.RequestOptions request(String bucket, long seq) {
            io.vertx.core.http.RequestOptions o = new io.vertx.core.http.RequestOptions()
                    .setMethod(io.vertx.core.http.HttpMethod.GET).setHost("127.0.0.1").setPort(port).setTimeout(5000);
            if (nginx) {
                return o.setURI("/" + bucket + "/k" + seq);
            }
            return o.setURI("/v1/s3check").putHeader("X-Levee-Method", "GET").putHeader("X-Levee-Host", "127.0.0.1")
                    .putHeader("X-Levee-Uri", "/" + bucket + "/k" + seq);
        }

        /** 1 admitted, 0 refused, -1 neither (a failed check). */
        int outcome(int status) {
            if (nginx) {
                return status == 503 ? 0 : status >= 500 ? -1 : 1;
            }
            return status == 200 ? 1 : status == 429 ? 0 : -1;
        }
    }

    /**
     * {@code connections} closed-loop senders per endpoint for {@code seconds}, every request to {@code bucket} (a new
     * object key each): each sends its next check when the answer is in. The senders are Vert.x HTTP requests on a
     * Vert.x instance of their own with one event loop (one keep-alive connection each): the JDK's HttpClient on
     * virtual threads offered only 1 800–3 300 checks/s on two cores, too few to test a floor.
     */
    static Run drive(List<Endpoint> endpoints, String bucket, int connections, double seconds) throws Exception {
        int senders = connections * endpoints.size();
        long[] times = new long[1 << 20];
        AtomicLong admitted = new AtomicLong();
        AtomicLong rejected = new AtomicLong();
        AtomicLong other = new AtomicLong();
        AtomicLong seq = new AtomicLong();
        Vertx load = Vertx.vertx(new io.vertx.core.VertxOptions().setEventLoopPoolSize(1));
        try {
            io.vertx.core.http.HttpClientAgent http = load.createHttpClient(new io.vertx.core.http.HttpClientOptions()
                            .setKeepAlive(true).setConnectTimeout(5000).setIdleTimeout(10),
                    new io.vertx.core.http.PoolOptions().setHttp1MaxSize(connections));
            long start = System.nanoTime();
            long end = start + (long) (seconds * 1e9);
            CountDownLatch finished = new CountDownLatch(senders);
            // one event loop: the counters and the array need no more than these plain writes
            List<Runnable> loops = new ArrayList<>();
            for (int s = 0; s < senders; s++) {
                Endpoint e = endpoints.get(s % endpoints.size());
                Runnable[] send = new Runnable[1];
                send[0] = () -> {
                    if (System.nanoTime() - end >= 0) {
                        finished.countDown();
                        return;
                    }
                    http.request(e.request(bucket, seq.incrementAndGet()))
                            .compose(r -> r.send()).compose(r -> r.body().map(b -> r.statusCode()))
                            .onComplete(ar -> {
                                long at = System.nanoTime();
                                int outcome = ar.failed() ? -1 : e.outcome(ar.result());
                                if (outcome == 1) {
                                    long n = admitted.getAndIncrement();
                                    if (n < times.length) {
                                        times[(int) n] = at;
                                    }
                                } else if (outcome == 0) {
                                    rejected.incrementAndGet();
                                } else {
                                    other.incrementAndGet();
                                }
                                send[0].run();
                            });
                };
                loops.add(send[0]);
            }
            load.runOnContext(v -> loops.forEach(Runnable::run));
            assertThat(finished.await((long) seconds + 30, TimeUnit.SECONDS)).as("senders finished").isTrue();
            long n = Math.min(admitted.get(), times.length);
            long[] at = Arrays.copyOf(times, (int) n);
            Arrays.sort(at);
            return new Run(at, rejected.get(), other.get(), start, System.nanoTime()); // the last answers in
        } finally {
            load.close().await(10, TimeUnit.SECONDS);
        }
    }
}
