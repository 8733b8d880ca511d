package dev.levee.stack;

import dev.levee.runtime.SystemTicker;
import java.net.URI;
import java.util.concurrent.TimeUnit;
import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.S3Proxy;
import org.jclouds.ContextBuilder;
import org.jclouds.blobstore.BlobStore;
import org.jclouds.blobstore.BlobStoreContext;

/**
 * An in-process S3 backend: S3Proxy over jclouds' transient (in-memory) blob store, on a free
 * loopback port, with SigV2/SigV4 authentication. For the demo and integration tests.
 */
public final class EmbeddedS3 implements AutoCloseable {

    /** Access key id the embedded backend accepts. */
    public static final String ACCESS_KEY = "levee-demo";
    /** Secret key the embedded backend accepts. */
    public static final String SECRET_KEY = "levee-demo-secret";

    private final BlobStoreContext context;
    private final String host;
    private final int port;
    private final String accessKey;
    private final String secretKey;
    private final java.util.Map<String, String> keys;
    private volatile S3Proxy proxy;

    private EmbeddedS3(BlobStoreContext context, String host, int port, String accessKey, String secretKey,
                       java.util.Map<String, String> keys) {
        this.context = context;
        this.host = host;
        this.port = port;
        this.accessKey = accessKey;
        this.secretKey = secretKey;
        this.keys = java.util.Map.copyOf(keys);
    }

    /**
     * Starts a backend on a free port of 127.0.0.1.
     *
     * @return the running backend
     * @throws IllegalStateException when it cannot start
     */
    public static EmbeddedS3 start() {
        return start(java.util.Map.of());
    }

    /**
     * Starts a backend on a free port of 127.0.0.1 that also accepts {@code moreKeys} (access key
     * id → secret key), all sharing one store, for tests of several principals.
     *
     * @param moreKeys access keys besides {@link #ACCESS_KEY}
     * @return the running backend
     * @throws IllegalStateException when it cannot start
     */
    public static EmbeddedS3 start(java.util.Map<String, String> moreKeys) {
        return start("127.0.0.1", 0, ACCESS_KEY, SECRET_KEY, moreKeys);
    }

    /**
     * Starts a backend on a free port of 127.0.0.1 accepting exactly {@code keys} (access key id →
     * secret key, the first in iteration order signing the backend's own requests), all sharing one
     * store: the gateways' backend of the integration tests.
     *
     * @param keys access keys, at least one
     * @return the running backend
     * @throws IllegalArgumentException when {@code keys} is empty
     * @throws IllegalStateException    when it cannot start
     */
    public static EmbeddedS3 startWithKeys(java.util.Map<String, String> keys) {
        if (keys.isEmpty()) {
            throw new IllegalArgumentException("the S3 backend needs at least one access key");
        }
        java.util.Map.Entry<String, String> first = keys.entrySet().iterator().next();
        return start("127.0.0.1", 0, first.getKey(), first.getValue(), keys);
    }

    /**
     * Starts a backend on {@code host:port} (port 0: a free port of 127.0.0.1) accepting the key
     * {@code accessKey}/{@code secretKey} and {@code moreKeys}, all sharing one in-memory store
     * ({@code levee s3-backend}).
     *
     * @throws IllegalStateException when it cannot start (for example the port is taken)
     */
    public static EmbeddedS3 start(String host, int fixedPort, String accessKey, String secretKey,
                                   java.util.Map<String, String> moreKeys) {
        java.util.Map<String, String> keys = new java.util.HashMap<>(moreKeys);
        keys.put(accessKey, secretKey);
        BlobStoreContext context = ContextBuilder.newBuilder("transient")
                .credentials("identity", "credential")
                // jclouds logs through SLF4J (the role's log), not java.util.logging's SEVERE traces on stderr
                .modules(java.util.List.of(new org.jclouds.logging.slf4j.config.SLF4JLoggingModule()))
                .build(BlobStoreContext.class);
        Exception last = null;
        for (int attempt = 0; attempt < (fixedPort == 0 ? 5 : 1); attempt++) {
            int port = fixedPort == 0 ? LoopbackPorts.free() : fixedPort;
            EmbeddedS3 s3 = new EmbeddedS3(context, host, port, accessKey, secretKey, moreKeys.isEmpty() ? java.util.Map.of() : keys);
            try {
                s3.restart();
                return s3;
            } catch (IllegalStateException e) {
                last = e;
            }
        }
        context.close();
        throw new IllegalStateException("S3 backend did not start on " + host + ":" + (fixedPort == 0 ? "a free port" : fixedPort)
                + (last == null ? "" : ": " + last.getMessage()), last);
    }

    /**
     * Starts S3Proxy (again, after {@link #kill()}) on the same port over the same store; does nothing
     * while it runs.
     *
     * @throws IllegalStateException when it does not start within 10 s (for example the port is taken)
     */
    public synchronized void restart() {
        if (proxy != null) {
            return;
        }
        S3Proxy p = S3Proxy.builder()
                .blobStore(context.getBlobStore())
                .endpoint(URI.create("http://" + host + ":" + port))
                .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, accessKey, secretKey)
                .ignoreUnknownHeaders(true)
                .jettyMaxThreads(64)
                .build();
        if (!keys.isEmpty()) {
            BlobStore store = context.getBlobStore();
            p.setBlobStoreLocator((identity, container, blob) -> {
                String secret = identity == null ? null : keys.get(identity);
                return secret == null ? null : java.util.Map.entry(secret, store);
            });
        }
        try {
            p.start();
            long deadline = SystemTicker.INSTANCE.read() + TimeUnit.SECONDS.toNanos(10);
            while (!"STARTED".equals(p.getState()) && SystemTicker.INSTANCE.read() - deadline < 0) {
                Thread.sleep(10); // S3Proxy offers no start callback; bounded by the deadline
            }
        } catch (Exception e) {
            stopQuietly(p);
            throw new IllegalStateException("S3Proxy did not start on " + host + ":" + port + ": " + e.getMessage(), e);
        }
        if (!"STARTED".equals(p.getState())) {
            stopQuietly(p);
            throw new IllegalStateException("S3Proxy did not start on " + host + ":" + port + " within 10 s");
        }
        dev.levee.runtime.Logging.reapply(); // S3Proxy's start resets Log4j's context
        proxy = p;
    }

    /** Stops S3Proxy at once (its connections close, new ones are refused); the store and the port are kept for {@link #restart()}. */
    public synchronized void kill() {
        S3Proxy p = proxy;
        proxy = null;
        if (p != null) {
            stopQuietly(p);
        }
    }

    /** Returns whether S3Proxy is running (not {@link #kill() killed}). */
    public boolean running() {
        return proxy != null;
    }

    private static void stopQuietly(S3Proxy p) {
        try {
            p.stop();
        } catch (Exception e) {
            // stopping anyway
        }
    }

    /**
     * Builds an AWS SDK v2 S3 client for this backend's credentials: path-style, retries off (so a
     * SlowDown reaches the caller), the Apache HTTP client (one Netty line in the JVM).
     *
     * @param endpoint the backend, a gateway or NGINX in front of it
     * @return a new client (close it)
     */
    @SuppressWarnings("deprecation") // the SDK's Apache 4 client: no second Netty line; its Apache 5 one is not used yet
    public static software.amazon.awssdk.services.s3.S3Client client(URI endpoint) {
        return software.amazon.awssdk.services.s3.S3Client.builder()
                .endpointOverride(endpoint)
                .region(software.amazon.awssdk.regions.Region.US_EAST_1)
                .forcePathStyle(true)
                .credentialsProvider(software.amazon.awssdk.auth.credentials.StaticCredentialsProvider.create(
                        software.amazon.awssdk.auth.credentials.AwsBasicCredentials.create(ACCESS_KEY, SECRET_KEY)))
                .httpClientBuilder(software.amazon.awssdk.http.apache.ApacheHttpClient.builder().maxConnections(512)
                        .connectionTimeout(java.time.Duration.ofSeconds(5)).socketTimeout(java.time.Duration.ofSeconds(30)))
                .overrideConfiguration(o -> o.retryStrategy(
                        software.amazon.awssdk.awscore.retry.AwsRetryStrategy.doNotRetry()))
                .build();
    }

    /** Returns the port (on 127.0.0.1 unless started on another host). */
    public int port() {
        return port;
    }

    /** Returns {@code HOST:PORT}, as {@code levee gateway --backend} takes it. */
    public String address() {
        return host + ":" + port;
    }

    /** Returns {@code http://HOST:PORT}. */
    public URI endpoint() {
        return URI.create("http://" + address());
    }

    /** Returns the blob store behind the backend (to create buckets without going through a gateway). */
    public BlobStore blobStore() {
        return context.getBlobStore();
    }

    @Override
    public void close() {
        kill();
        context.close();
    }
}
