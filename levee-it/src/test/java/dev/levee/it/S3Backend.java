package dev.levee.it;

import static org.awaitility.Awaitility.await;

import dev.levee.runtime.Logging;
import java.net.URI;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.S3Proxy;
import org.jclouds.ContextBuilder;
import org.jclouds.blobstore.BlobStoreContext;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * An S3 backend in this JVM: S3Proxy over one in-memory (jclouds {@code transient}) blob store on a free
 * loopback port, accepting SigV2/SigV4 from every access key given (each with its secret), as the
 * gateways' backend in the site tests. It keeps its port across {@link #kill()} and {@link #restart()}.
 */
final class S3Backend implements AutoCloseable {

    private final BlobStoreContext context = ContextBuilder.newBuilder("transient").credentials("identity", "credential")
            .build(BlobStoreContext.class);
    private final int port = RoleProcess.freePort();
    private final Map<String, String> keys;
    private volatile S3Proxy proxy;

    private S3Backend(Map<String, String> keys) {
        this.keys = Map.copyOf(keys);
    }

    /**
     * Starts S3Proxy accepting the given access keys.
     *
     * @param keys access key id → secret key, at least one
     * @return the running backend (close it)
     * @throws IllegalArgumentException when {@code keys} is empty
     * @throws IllegalStateException    when S3Proxy does not start in 20 s
     */
    static S3Backend start(Map<String, String> keys) {
        if (keys.isEmpty()) {
            throw new IllegalArgumentException("the S3 backend needs at least one access key");
        }
        S3Backend b = new S3Backend(new LinkedHashMap<>(keys));
        b.restart();
        return b;
    }

    /** Returns the backend's port on loopback. */
    int port() {
        return port;
    }

    /** Returns {@code 127.0.0.1:PORT}, as {@code levee gateway --backend} takes it. */
    String address() {
        return "127.0.0.1:" + port;
    }

    /** Returns {@code http://127.0.0.1:PORT}. */
    URI endpoint() {
        return URI.create("http://" + address());
    }

    /** Returns whether S3Proxy is running. */
    boolean running() {
        return proxy != null;
    }

    /** Starts S3Proxy (again) on the same port and blob store. @throws IllegalStateException when it does not start */
    void restart() {
        Map.Entry<String, String> first = keys.entrySet().iterator().next();
        S3Proxy p = S3Proxy.builder().blobStore(context.getBlobStore()).endpoint(endpoint())
                .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, first.getKey(), first.getValue())
                .ignoreUnknownHeaders(true).jettyMaxThreads(64).build();
        p.setBlobStoreLocator((identity, container, blob) -> {
            String secret = identity == null ? null : keys.get(identity);
            return secret == null ? null : Map.entry(secret, context.getBlobStore());
        });
        try {
            p.start();
        } catch (Exception e) {
            throw new IllegalStateException("S3Proxy did not start on " + port, e);
        }
        await("S3Proxy started").atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(10))
                .until(() -> "STARTED".equals(p.getState()));
        Logging.reapply(); // S3Proxy's start resets Log4j's context
        proxy = p;
    }

    /** Stops S3Proxy at once: its connections close, new ones are refused. */
    void kill() throws Exception {
        S3Proxy p = proxy;
        proxy = null;
        if (p != null) {
            p.stop();
        }
    }

    /**
     * Creates {@code bucket} (if absent) and puts an object of {@code size} pseudo-random bytes
     * (seeded, so reproducible) at {@code key}, through an SDK client with the first access key.
     *
     * @return the object's bytes
     */
    byte[] putRandom(String bucket, String key, int size, long seed) {
        byte[] data = new byte[size];
        new Random(seed).nextBytes(data);
        Map.Entry<String, String> first = keys.entrySet().iterator().next();
        try (S3Client c = DemandClient.s3Client(endpoint(), first.getKey(), first.getValue(), 2)) {
            if (!c.listBuckets().buckets().stream().anyMatch(b -> b.name().equals(bucket))) {
                c.createBucket(b -> b.bucket(bucket));
            }
            c.putObject(b -> b.bucket(bucket).key(key), RequestBody.fromBytes(data));
        }
        return data;
    }

    @Override
    public void close() {
        try {
            kill();
        } catch (Exception e) {
            // stopping anyway
        }
        context.close();
    }
}
