package dev.levee.limiter;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.config.QuotaConfigLoader;
import dev.levee.config.StaticQuotaSource;
import dev.levee.quota.QuotaConfig;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import dev.levee.s3.S3Operation;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A decision allocates nothing on the caller's thread (issue 12: ≤ 256 bytes per check per role, the key string
 * decoded from the wire aside): resolution hands out shared answers and GCRA parameters, counters and statistics
 * are looked up, and the decision line is logged — to a file, as in production — through Log4j's garbage-free
 * calls. Measured with the JVM's per-thread allocation counter over many decisions, so that a regression of a few
 * dozen bytes per decision (a boxed number, an array of parameters) fails it.
 */
class DecisionAllocationTest {

    @TempDir
    static Path dir;

    static final QuotaConfig CONFIG = QuotaConfigLoader.parse("""
            factor: 4
            default: {rate: 1000000, burst: 100000}
            resources:
              photos:
                quota: {rate: 1000000, burst: 100000}
                prefixes:
                  - {prefix: "2024/", quota: {rate: 1000000, burst: 100000}}
              trial:
                quota: {rate: 1000000, burst: 100000, mode: shadow}
            """, "test");

    @BeforeAll
    static void logToAFile() throws Exception {
        Logging.configure(LogTarget.parse("file:" + dir.resolve("decisions.log")), "levee-test", "INFO");
    }

    @AfterAll
    static void stopLogging() {
        Logging.configure(LogTarget.parse("stderr"), "levee-test", "WARN");
    }

    @ParameterizedTest(name = "{0}/{1}")
    @CsvSource({
            "unconfigured-bucket, any/key",   // default level: a cached answer per unconfigured resource
            "photos, 2024/a.jpg",             // prefix level
            "photos, other/a.jpg",            // resource level
            "trial, k",                       // a shadow quota: decided twice, the line built in a per-thread builder
    })
    void aDecisionLoggedToAFileAllocatesNothingOnTheCallersThread(String resource, String key) throws Exception {
        AtomicLong clock = new AtomicLong(1_000_000_000L);
        LimiterService l = LimiterService.detached(new LimiterService.Options("l1", new HostPort("127.0.0.1", 0), null,
                null, Duration.ofSeconds(1), 10_000), new StaticQuotaSource(CONFIG), clock::get, new SimpleMeterRegistry());
        Decider.Decision d = new Decider.Decision();
        for (int i = 0; i < 20_000; i++) { // warm: JIT, counters, the ring's slots
            l.decide(CONFIG, resource, key, S3Operation.GetObject, 4, d);
            clock.addAndGet(1_000);
        }
        var threads = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        long id = Thread.currentThread().threadId();
        int n = 20_000;
        long before = threads.getThreadAllocatedBytes(id);
        for (int i = 0; i < n; i++) {
            l.decide(CONFIG, resource, key, S3Operation.GetObject, 4, d);
            clock.addAndGet(1_000);
        }
        double perDecision = (double) (threads.getThreadAllocatedBytes(id) - before) / n;
        System.out.printf("%s/%s: %.1f bytes per decision on the caller's thread%n", resource, key, perDecision);
        assertThat(d.accepted).isTrue();
        assertThat(perDecision).as("bytes per decision").isLessThan(8);
        // and the lines were written (the async logger's thread writes within about 10 ms)
        String expected = "decision result=accepted resource=" + resource + " key=" + key + " op=GetObject";
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10))
                .until(() -> Files.readString(dir.resolve("decisions.log")).contains(expected));
    }
}
