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
        BlobStoreContext context = ContextBuilder.newBuilder("transient")
                .credentials("identity", "credential")
                .build(BlobStoreContext.class);
        Exception last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            int port = freePort();
            S3Proxy proxy = S3Proxy.builder()
                    .blobStore(context.getBlobStore())
                    .endpoint(URI.create("http://127.0.0.1:" + port))
                    .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, ACCESS_KEY, SECRET_KEY)
                    .ignoreUnknownHeaders(true)
                    .jettyMaxThreads(64)
                    .build();
            try {
                proxy.start();
                long deadline = System.currentTimeMillis() + 10_000;
                while (!"STARTED".equals(proxy.getState()) && System.currentTimeMillis() < deadline) {
                    Thread.onSpinWait();
                    Thread.sleep(10); // S3Proxy offers no start callback; bounded by the deadline
                }
                if ("STARTED".equals(proxy.getState())) {
                    return new EmbeddedS3(proxy, context, port);
                }
                proxy.stop();
            } catch (Exception e) {
                last = e;
            }
        }
        context.close();
        throw new IllegalStateException("embedded S3 backend did not start", last);
    }

    private static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (java.io.IOException e) {
            throw new IllegalStateException("no free port", e);
        }
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
