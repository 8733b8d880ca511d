package dev.levee.cli.stack;

import java.net.ServerSocket;
import java.net.URI;
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

    private final S3Proxy proxy;
    private final BlobStoreContext context;
    private final int port;

    private EmbeddedS3(S3Proxy proxy, BlobStoreContext context, int port) {
        this.proxy = proxy;
        this.context = context;
        this.port = port;
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
            int port = fixedPort == 0 ? freePort() : fixedPort;
            S3Proxy proxy = S3Proxy.builder()
                    .blobStore(context.getBlobStore())
                    .endpoint(URI.create("http://" + host + ":" + port))
                    .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, accessKey, secretKey)
                    .ignoreUnknownHeaders(true)
                    .jettyMaxThreads(64)
                    .build();
            if (!moreKeys.isEmpty()) {
                BlobStore store = context.getBlobStore();
                proxy.setBlobStoreLocator((identity, container, blob) -> {
                    String secret = identity == null ? null : keys.get(identity);
                    return secret == null ? null : java.util.Map.entry(secret, store);
                });
            }
            try {
                proxy.start();
                long deadline = System.currentTimeMillis() + 10_000;
                while (!"STARTED".equals(proxy.getState()) && System.currentTimeMillis() < deadline) {
                    Thread.onSpinWait();
                    Thread.sleep(10); // S3Proxy offers no start callback; bounded by the deadline
                }
                if ("STARTED".equals(proxy.getState())) {
                    dev.levee.runtime.Logging.reapply(); // S3Proxy's start resets Log4j's context
                    return new EmbeddedS3(proxy, context, port);
                }
                proxy.stop();
            } catch (Exception e) {
                last = e;
            }
        }
        context.close();
        throw new IllegalStateException("S3 backend did not start on " + host + ":" + (fixedPort == 0 ? "a free port" : fixedPort)
                + (last == null ? "" : ": " + last.getMessage()), last);
    }

    private static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (java.io.IOException e) {
            throw new IllegalStateException("no free port", e);
        }
    }

    /**
     * Builds an AWS SDK v2 S3 client for this backend's credentials: path-style, retries off (so a
     * SlowDown reaches the caller), the Apache HTTP client (one Netty line in the JVM).
     *
     * @param endpoint the backend, a gateway or NGINX in front of it
     * @return a new client (close it)
     */
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

    /** Returns the port on 127.0.0.1. */
    public int port() {
        return port;
    }

    /** Returns the blob store behind the backend (to create buckets without going through a gateway). */
    public BlobStore blobStore() {
        return context.getBlobStore();
    }

    @Override
    public void close() {
        try {
            proxy.stop();
        } catch (Exception e) {
            // stopping anyway
        }
        context.close();
    }
}
