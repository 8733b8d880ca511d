package dev.levee.it;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.http.apache.ApacheHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * Download demand through one S3 endpoint, for the site bandwidth tests (issue 11: "gateway demands
 * 5 / 20 / 40 MiB/s"): {@code threads} threads loop {@code GET bucket/key} with an AWS SDK v2 client
 * (Apache HTTP client, retries off so every answer is seen) and read each body through one client-side
 * token bucket shared by the threads, so the client as a whole never reads faster than its rate
 * ({@link #setRate(long)} changes it while running: the "demand shift"). The gateway in front sees this
 * as a client that reads at most that fast, through TCP back-pressure.
 *
 * <p>It runs until {@link #stop()}, until {@code maxRequests} GETs were started, or until
 * {@code maxDuration} has passed (a body being read then is aborted). {@code 503 SlowDown} answers are
 * counted apart from errors (any other failure: another status, a connection refused or reset, a read
 * timed out); after either, the thread pauses {@link #PAUSE_AFTER_FAILURE} before its next GET. Bytes of
 * bodies are counted as read, partial bodies included.
 */
final class DemandClient implements AutoCloseable {

    /** Pause of a thread after a 503 or an error, before its next GET. */
    static final Duration PAUSE_AFTER_FAILURE = Duration.ofMillis(100);
    /** Bytes read (and paid to the token bucket) at a time. */
    static final int CHUNK_BYTES = 64 * 1024;
    /** Rate that means "as fast as the gateway sends". */
    static final long UNLIMITED = Long.MAX_VALUE;

    private final String name;
    private final S3Client s3;
    private final String bucket;
    private final String key;
    private final long maxRequests;
    private final long deadlineNanos;
    private final Bucket tokens;
    private final List<Thread> threads = new ArrayList<>();
    private final List<ResponseInputStream<GetObjectResponse>> open = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final AtomicLong started = new AtomicLong();
    private final LongAdder bytes = new LongAdder();
    private final LongAdder completed = new LongAdder();
    private final LongAdder errors = new LongAdder();
    private final LongAdder slowDowns = new LongAdder();
    private final ConcurrentLinkedDeque<String> recentErrors = new ConcurrentLinkedDeque<>();
    private volatile boolean stopped;

    private DemandClient(Builder b) {
        this.name = b.name;
        this.s3 = b.s3;
        this.bucket = b.bucket;
        this.key = b.key;
        this.maxRequests = b.maxRequests;
        this.deadlineNanos = System.nanoTime() + b.maxDuration.toNanos();
        this.tokens = new Bucket(b.rate);
        for (int i = 0; i < b.threads; i++) {
            threads.add(Thread.ofPlatform().daemon().name("demand-" + name + "-" + i).unstarted(this::loop));
        }
    }

    /**
     * Returns a builder of demand on {@code bucket/key} through {@code s3} (which the caller closes).
     *
     * @param s3     client to the gateway (see {@link #s3Client(URI, String, String, int)})
     * @param bucket bucket of the object
     * @param key    key of a large object (8–32 MiB), read again and again
     */
    static Builder on(S3Client s3, String bucket, String key) {
        return new Builder(s3, bucket, key);
    }

    /**
     * Builds an SDK v2 S3 client to {@code endpoint} (path style, us-east-1, Apache HTTP client with up to
     * {@code maxConnections} connections, 2 s connect and 30 s socket timeouts, retries off).
     */
    static S3Client s3Client(URI endpoint, String accessKey, String secretKey, int maxConnections) {
        return s3Client(endpoint, accessKey, secretKey, maxConnections, Duration.ofSeconds(30));
    }

    /**
     * Builds an SDK v2 S3 client like {@link #s3Client(URI, String, String, int)} with a chosen socket
     * timeout (how long a read may wait for a byte: a gateway failing closed stalls its streams).
     */
    @SuppressWarnings("deprecation") // the SDK's Apache 4 client, as EmbeddedS3.client: no second Netty line
    static S3Client s3Client(URI endpoint, String accessKey, String secretKey, int maxConnections, Duration socketTimeout) {
        return S3Client.builder().endpointOverride(endpoint).region(Region.US_EAST_1).forcePathStyle(true)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKey, secretKey)))
                .httpClientBuilder(ApacheHttpClient.builder().maxConnections(maxConnections)
                        .connectionTimeout(Duration.ofSeconds(2)).socketTimeout(socketTimeout)
                        .connectionMaxIdleTime(Duration.ofSeconds(5)))
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry()))
                .build();
    }

    /** Demand's settings; {@link #start()} starts the threads. */
    static final class Builder {
        private final S3Client s3;
        private final String bucket;
        private final String key;
        private String name = "demand";
        private int threads = 2;
        private long rate = UNLIMITED;
        private long maxRequests = Long.MAX_VALUE;
        private Duration maxDuration = Duration.ofSeconds(60);

        private Builder(S3Client s3, String bucket, String key) {
            this.s3 = s3;
            this.bucket = bucket;
            this.key = key;
        }

        /** Names the threads and messages (default {@code demand}). */
        Builder name(String n) {
            this.name = n;
            return this;
        }

        /** Number of GET loops at once, ≥ 1 (default 2). */
        Builder threads(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("threads must be >= 1, got " + n);
            }
            this.threads = n;
            return this;
        }

        /** Reading rate of the whole client, bytes per second, ≥ 1 ({@link #UNLIMITED} by default). */
        Builder rate(long bytesPerSecond) {
            this.rate = checkRate(bytesPerSecond);
            return this;
        }

        /** Most GETs started in all (default unbounded). */
        Builder maxRequests(long n) {
            if (n < 1) {
                throw new IllegalArgumentException("maxRequests must be >= 1, got " + n);
            }
            this.maxRequests = n;
            return this;
        }

        /** Longest run from start (default 60 s). */
        Builder maxDuration(Duration d) {
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("maxDuration must be positive, got " + d);
            }
            this.maxDuration = d;
            return this;
        }

        /** Starts the threads. */
        DemandClient start() {
            DemandClient c = new DemandClient(this);
            c.threads.forEach(Thread::start);
            return c;
        }
    }

    /**
     * Changes the client's reading rate at once.
     *
     * @param bytesPerSecond new rate, ≥ 1, or {@link #UNLIMITED}
     * @throws IllegalArgumentException when below 1
     */
    void setRate(long bytesPerSecond) {
        tokens.setRate(checkRate(bytesPerSecond), System.nanoTime());
    }

    /** Returns the reading rate now, bytes per second. */
    long rate() {
        return tokens.rate();
    }

    /** Returns body bytes read so far (partial bodies included); cumulative, for {@link ByteWindows}. */
    long bytesRead() {
        return bytes.sum();
    }

    /** Returns GETs started so far. */
    long requests() {
        return Math.min(started.get(), maxRequests); // a thread's last ticket past the bound started no GET
    }

    /** Returns GETs whose whole body was read. */
    long completed() {
        return completed.sum();
    }

    /** Returns failures other than {@code 503 SlowDown}. */
    long errors() {
        return errors.sum();
    }

    /** Returns {@code 503 SlowDown} answers. */
    long slowDowns() {
        return slowDowns.sum();
    }

    /** Returns the last (up to 20) error messages, oldest first. */
    List<String> recentErrors() {
        return List.copyOf(recentErrors);
    }

    /** Returns whether any thread is still running. */
    boolean running() {
        return threads.stream().anyMatch(Thread::isAlive);
    }

    /**
     * Waits until every thread has ended by itself (request count or duration reached).
     *
     * @return true when they have, false when {@code timeout} passed first
     */
    boolean awaitDone(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Thread t : threads) {
            long left = deadline - System.nanoTime();
            try {
                if (left <= 0 || !t.join(Duration.ofNanos(left))) {
                    return false;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return true;
    }

    /** Stops every thread (bodies being read are aborted) and waits up to 10 s for them. */
    void stop() {
        stopped = true;
        for (ResponseInputStream<GetObjectResponse> in : open) {
            in.abort();
        }
        threads.forEach(LockSupport::unpark);
        awaitDone(Duration.ofSeconds(10));
    }

    @Override
    public void close() {
        stop();
    }

    @Override
    public String toString() {
        return name + ": " + bytesRead() + " B read, " + requests() + " GETs (" + completed() + " whole), "
                + slowDowns() + " SlowDown, " + errors() + " errors" + (recentErrors.isEmpty() ? "" : " " + recentErrors.peekLast());
    }

    // ---------------------------------------------------------------- internals

    private boolean goOn() {
        return !stopped && System.nanoTime() - deadlineNanos < 0;
    }

    private void loop() {
        byte[] buf = new byte[CHUNK_BYTES];
        while (goOn() && started.getAndIncrement() < maxRequests) {
            ResponseInputStream<GetObjectResponse> in = null;
            boolean whole = false;
            try {
                in = s3.getObject(b -> b.bucket(bucket).key(key));
                open.add(in);
                whole = read(in, buf);
                if (whole) {
                    completed.increment();
                }
            } catch (S3Exception e) {
                if (e.statusCode() == 503) {
                    slowDowns.increment();
                } else {
                    failed(e.statusCode() + " " + e.awsErrorDetails().errorCode());
                }
                pause();
            } catch (RuntimeException | IOException e) {
                if (goOn()) {
                    failed(e.getClass().getSimpleName() + ": " + e.getMessage());
                    pause();
                }
            } finally {
                if (in != null) {
                    open.remove(in);
                    if (!whole) { // closing a body not read to its end would drain it to reuse the connection
                        in.abort();
                    }
                    try {
                        in.close();
                    } catch (IOException | RuntimeException e) {
                        // closing an aborted or finished body
                    }
                }
            }
        }
    }

    /** Reads the body through the token bucket; returns whether it was read to its end. */
    private boolean read(InputStream in, byte[] buf) throws IOException {
        while (goOn()) {
            int n = in.read(buf);
            if (n < 0) {
                return true;
            }
            bytes.add(n);
            long wait = tokens.reserve(n, System.nanoTime());
            long until = System.nanoTime() + wait;
            while (wait > 0 && goOn()) {
                LockSupport.parkNanos(Math.min(wait, deadlineNanos - System.nanoTime())); // pacing the reader, not synchronisation
                wait = until - System.nanoTime();
            }
        }
        return false;
    }

    private void failed(String message) {
        errors.increment();
        recentErrors.addLast(message);
        while (recentErrors.size() > 20) {
            recentErrors.pollFirst();
        }
    }

    private void pause() {
        long until = System.nanoTime() + PAUSE_AFTER_FAILURE.toNanos();
        while (goOn() && until - System.nanoTime() > 0) {
            LockSupport.parkNanos(until - System.nanoTime());
        }
    }

    private static long checkRate(long bytesPerSecond) {
        if (bytesPerSecond < 1) {
            throw new IllegalArgumentException("rate must be >= 1 byte/s, got " + bytesPerSecond);
        }
        return bytesPerSecond;
    }

    /**
     * A token bucket that lends: {@link #reserve} takes the bytes at once and returns how long the
     * caller must wait for the debt to be paid (Guava's {@code RateLimiter} model). Its burst is
     * {@link #BURST} of rate, at least one chunk, so an idle client cannot read a large burst later.
     */
    static final class Bucket {
        static final double BURST = 0.05; // seconds of rate

        private long rate;
        private double tokens;
        private long last;
        private boolean started;

        Bucket(long rate) {
            this.rate = rate;
        }

        synchronized long rate() {
            return rate;
        }

        synchronized void setRate(long newRate, long now) {
            refill(now);
            rate = newRate;
        }

        /** Takes {@code n} bytes at {@code now}; returns the nanoseconds to wait (0 when none). */
        synchronized long reserve(long n, long now) {
            if (rate == UNLIMITED) {
                return 0;
            }
            refill(now);
            tokens -= n;
            return tokens >= 0 ? 0 : (long) Math.ceil(-tokens * 1e9 / rate);
        }

        private void refill(long now) {
            if (!started) {
                started = true;
                last = now;
                tokens = capacity();
                return;
            }
            if (rate != UNLIMITED) {
                tokens = Math.min(capacity(), tokens + (now - last) * (double) rate / 1e9);
            }
            last = now;
        }

        private double capacity() {
            return rate == UNLIMITED ? 0 : Math.max(CHUNK_BYTES, rate * BURST);
        }
    }
}
