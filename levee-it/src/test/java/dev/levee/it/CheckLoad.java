package dev.levee.it;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Open-loop load on levee-client's {@code GET /v1/s3check} (what NGINX's subrequest calls), as a fault
 * probe needs it: a fixed rate spread over a few virtual threads, each check recorded with its send time
 * and outcome. A check whose connection breaks or times out without an answer is an {@code error}, as
 * NGINX would take it ({@code failed}); so is an answer of {@code X-Levee-Result: failed}.
 */
final class CheckLoad implements AutoCloseable {

    /** What one check got. */
    enum Outcome { ACCEPTED, REJECTED, FAILED, NO_ANSWER }

    /** One check: nanoseconds since the load started, and its outcome. */
    record Sample(long sentNs, long latencyNs, Outcome outcome, String detail) {
    }

    private final HttpClient http;
    private final URI target;
    private final ConcurrentLinkedQueue<Sample> samples = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final List<Thread> threads = new ArrayList<>();
    private final long start = System.nanoTime();

    private CheckLoad(int clientPort) {
        this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2))
                .executor(Executors.newVirtualThreadPerTaskExecutor()).build();
        this.target = URI.create("http://127.0.0.1:" + clientPort + "/v1/s3check");
    }

    /**
     * Starts the load.
     *
     * @param clientPort levee-client's port on 127.0.0.1
     * @param perSecond  checks per second in all
     * @param workers    concurrent senders
     * @param buckets    the checks cycle over these buckets ({@code GET /<bucket>/k<n>})
     * @return the running load; {@link #close()} stops it
     */
    static CheckLoad start(int clientPort, int perSecond, int workers, List<String> buckets) {
        CheckLoad load = new CheckLoad(clientPort);
        long intervalNs = TimeUnit.SECONDS.toNanos(1) * workers / perSecond;
        for (int w = 0; w < workers; w++) {
            int worker = w;
            load.threads.add(Thread.ofVirtual().name("check-load-" + w).start(() -> load.run(worker, intervalNs, buckets)));
        }
        return load;
    }

    private void run(int worker, long intervalNs, List<String> buckets) {
        long next = System.nanoTime() + worker * intervalNs / Math.max(1, threads.size() + 1);
        long n = 0;
        while (running.get()) {
            long wait = next - System.nanoTime();
            if (wait > 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(wait); // pacing an open-loop sender
                continue;
            }
            next += intervalNs;
            String bucket = buckets.get((int) (n++ % buckets.size()));
            samples.add(once(bucket, "k" + worker + "-" + n));
        }
    }

    private Sample once(String bucket, String key) {
        long sent = System.nanoTime();
        HttpRequest rq = HttpRequest.newBuilder(target).timeout(Duration.ofSeconds(3))
                .header("X-Levee-Method", "GET").header("X-Levee-Host", "s3.local")
                .header("X-Levee-Uri", "/" + bucket + "/" + key).GET().build();
        try {
            HttpResponse<Void> r = http.send(rq, HttpResponse.BodyHandlers.discarding());
            String result = r.headers().firstValue("X-Levee-Result").orElse("");
            Outcome o = switch (result) {
                case "accepted" -> Outcome.ACCEPTED;
                case "rejected" -> Outcome.REJECTED;
                default -> Outcome.FAILED;
            };
            return new Sample(sent - start, System.nanoTime() - sent, o, r.statusCode() + " " + result);
        } catch (IOException e) {
            return new Sample(sent - start, System.nanoTime() - sent, Outcome.NO_ANSWER, e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Sample(sent - start, System.nanoTime() - sent, Outcome.NO_ANSWER, "interrupted");
        }
    }

    /** Nanoseconds since the load started, on the same clock as {@link Sample#sentNs()}. */
    long elapsedNs() {
        return System.nanoTime() - start;
    }

    /** Returns the samples so far. */
    List<Sample> samples() {
        return List.copyOf(samples);
    }

    @Override
    public void close() {
        running.set(false);
        for (Thread t : threads) {
            try {
                t.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        http.close();
    }
}
