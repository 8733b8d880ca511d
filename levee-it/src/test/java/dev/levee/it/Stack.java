package dev.levee.it;

import dev.levee.config.QuotaConfigLoader;
import dev.levee.quota.QuotaConfig;
import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import dev.levee.runtime.Metrics;
import dev.levee.stack.EmbeddedS3;
import dev.levee.stack.LocalStack;
import java.net.URI;
import java.nio.file.Path;
import software.amazon.awssdk.services.s3.S3Client;

/** Test fixture: S3 backend + a whole local stack + AWS SDK clients, all on loopback. */
final class Stack implements AutoCloseable {

    static final Path LOG = Path.of("target", "it-logs", "levee.log");

    final EmbeddedS3 s3;
    final dev.levee.config.StaticQuotaSource source;
    final LocalStack stack;
    final S3Client direct;
    final S3Client gateway;

    Stack(String quotasYaml, LocalStack.Settings settings) {
        Logging.configure(new LogTarget("file", null, 0, LOG.toAbsolutePath()), "levee-it", "INFO");
        QuotaConfig cfg = QuotaConfigLoader.parse(quotasYaml, "test quotas");
        s3 = EmbeddedS3.start();
        source = new dev.levee.config.StaticQuotaSource(cfg);
        stack = LocalStack.start(s3.port(), source, settings, Metrics.newRegistry());
        direct = client(URI.create("http://127.0.0.1:" + s3.port()));
        gateway = client(URI.create("http://127.0.0.1:" + stack.gateway().port()));
    }

    /**
     * A stack for tests that put NGINX in front (NGINX decides, so the gateway does not enforce): two limiters, lease
     * TTL 2 s, heartbeat and list refresh 300 ms, failing open. Log4j is configured again once it runs: S3Proxy's start
     * replaces Log4j's context, so the first stack of a JVM would log nothing and its decision log would not reach
     * {@link #LOG}.
     */
    static Stack behindNginx(String quotasYaml) {
        Stack s = new Stack(quotasYaml, new LocalStack.Settings(2, java.time.Duration.ofSeconds(2),
                java.time.Duration.ofMillis(300), java.time.Duration.ofMillis(300), false,
                dev.levee.gateway.GatewayOptions.OnFailure.ALLOW));
        Logging.configure(new LogTarget("file", null, 0, LOG.toAbsolutePath()), "levee-it", "INFO");
        return s;
    }

    /**
     * Returns the size of {@link #LOG} now, where a test class's own lines begin: the shared log holds what every
     * earlier test logged (hundreds of MB after the load tests).
     */
    static long logSize() throws java.io.IOException {
        return java.nio.file.Files.exists(LOG) ? java.nio.file.Files.size(LOG) : 0;
    }

    static S3Client client(URI endpoint) {
        return EmbeddedS3.client(endpoint);
    }

    @Override
    public void close() {
        gateway.close();
        direct.close();
        stack.close();
        s3.close();
    }
}
