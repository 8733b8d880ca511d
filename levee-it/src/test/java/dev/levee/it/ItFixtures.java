package dev.levee.it;

import dev.levee.etcd.Etcd;
import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import dev.levee.stack.EmbeddedEtcd;
import io.etcd.jetcd.Client;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The set-up the in-JVM integration tests share, as a JUnit 5 extension: before the class, logs go
 * to the IT log file ({@link Stack#LOG}), a Vert.x instance starts and, for {@link #withVertxAndEtcd()},
 * an etcd on free loopback ports with a jetcd client to it; after the class they are closed in reverse
 * order (Vert.x within 10 s). Register it as
 * {@code @RegisterExtension static final ItFixtures IT = ItFixtures.withVertx();}. Free ports come from
 * {@link RoleProcess#freePort()}.
 */
final class ItFixtures implements BeforeAllCallback, AfterAllCallback {

    private final boolean withEtcd;
    private Vertx vertx;
    private EmbeddedEtcd etcd;
    private Client client;

    private ItFixtures(boolean withEtcd) {
        this.withEtcd = withEtcd;
    }

    /** The IT log file and a Vert.x instance. */
    static ItFixtures withVertx() {
        return new ItFixtures(false);
    }

    /** The IT log file, an etcd with its default limits, a jetcd client to it and a Vert.x instance. */
    static ItFixtures withVertxAndEtcd() {
        return new ItFixtures(true);
    }

    /** Sends Levee's logs to {@link Stack#LOG} at INFO. */
    static void logToItLog() {
        Logging.configure(new LogTarget("file", null, 0, Stack.LOG.toAbsolutePath()), "levee-it", "INFO");
    }

    /** Waits up to 30 s for {@code f} and returns its result (throws its failure). */
    static <T> T done(Future<T> f) throws Exception {
        return f.await(30, TimeUnit.SECONDS);
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        logToItLog();
        if (withEtcd) {
            etcd = EmbeddedEtcd.start();
            client = Etcd.client(List.of(etcd.endpoint()));
        }
        vertx = Vertx.vertx();
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        try {
            if (vertx != null) {
                vertx.close().await(10, TimeUnit.SECONDS);
            }
        } finally {
            try {
                if (client != null) {
                    client.close();
                }
            } finally {
                if (etcd != null) {
                    etcd.close();
                }
            }
        }
    }

    /** The Vert.x instance of the test class. */
    Vertx vertx() {
        return vertx;
    }

    /** The etcd of the test class ({@link #withVertxAndEtcd()} only). */
    EmbeddedEtcd etcd() {
        return etcd;
    }

    /** A jetcd client to {@link #etcd()} ({@link #withVertxAndEtcd()} only). */
    Client client() {
        return client;
    }
}
