package dev.levee.it;

import dev.levee.stack.EmbeddedS3;
import java.net.URI;
import java.util.Map;
import java.util.Random;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * An S3 backend in this JVM: levee-stack's {@link EmbeddedS3} (S3Proxy over one in-memory blob store on a
 * free loopback port, as {@code levee demo} starts it), accepting SigV2/SigV4 from every access key given
 * (each with its secret), as the gateways' backend in the site tests. It keeps its port across
 * {@link #kill()} and {@link #restart()}.
 */
final class S3Backend implements AutoCloseable {

    private final EmbeddedS3 s3;
    private final Map.Entry<String, String> first;

    private S3Backend(EmbeddedS3 s3, Map.Entry<String, String> first) {
        this.s3 = s3;
        this.first = first;
    }

    /**
     * Starts S3Proxy accepting the given access keys.
     *
     * @param keys access key id → secret key, at least one
     * @return the running backend (close it)
     * @throws IllegalArgumentException when {@code keys} is empty
     * @throws IllegalStateException    when S3Proxy does not start
     */
    static S3Backend start(Map<String, String> keys) {
        EmbeddedS3 s3 = EmbeddedS3.startWithKeys(keys);
        return new S3Backend(s3, Map.entry(keys.keySet().iterator().next(), keys.values().iterator().next()));
    }

    /** Returns the backend's port on loopback. */
    int port() {
        return s3.port();
    }

    /** Returns {@code 127.0.0.1:PORT}, as {@code levee gateway --backend} takes it. */
    String address() {
        return s3.address();
    }

    /** Returns {@code http://127.0.0.1:PORT}. */
    URI endpoint() {
        return s3.endpoint();
    }

    /** Returns whether S3Proxy is running. */
    boolean running() {
        return s3.running();
    }

    /** Starts S3Proxy (again) on the same port and blob store. @throws IllegalStateException when it does not start */
    void restart() {
        s3.restart();
    }

    /** Stops S3Proxy at once: its connections close, new ones are refused. */
    void kill() {
        s3.kill();
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
        s3.close();
    }
}
