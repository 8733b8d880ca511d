package dev.levee.cli;

import dev.levee.runtime.Logging;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Runs a started service until SIGTERM/SIGINT, then stops it gracefully (as systemd expects). */
final class Daemon {

    private static final Logger LOG = LoggerFactory.getLogger("levee");

    private Daemon() {
    }

    static int runUntilStopped(Vertx vertx, String role, Supplier<Future<?>> stop) {
        return runUntilStopped(vertx, role, java.time.Duration.ofSeconds(10), stop);
    }

    /**
     * Runs until SIGTERM/SIGINT, then calls {@code stop} and waits for it at most {@code budget} (the
     * role's drain grace and shutdown timeout, plus a margin) before closing Vert.x.
     */
    static int runUntilStopped(Vertx vertx, String role, java.time.Duration budget, Supplier<Future<?>> stop) {
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            LOG.info("{} stopping", role);
            try {
                stop.get().toCompletionStage().toCompletableFuture().get(budget.toMillis(), TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                LOG.warn("{} did not stop cleanly: {}", role, e.toString());
            }
            try {
                vertx.close().toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
            } catch (Exception e) {
                // exiting anyway
            }
            stopped.countDown();
            Logging.shutdown();
        }, "levee-shutdown"));
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 0;
    }

    static <T> T await(Future<T> f, String what) {
        try {
            return dev.levee.runtime.Http.await(f, what);
        } catch (IllegalStateException e) {
            throw new StartupException(e.getMessage());
        }
    }

    /** A failure to start, reported to the user as one line. */
    static final class StartupException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        StartupException(String message) {
            super(message);
        }
    }
}
