package dev.levee.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/** Logs leave as RFC 5424 syslog messages, over UDP or to a file, with request text escaped. */
class LoggingTest {

    /** RFC 5424 §6: {@code <PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID STRUCTURED-DATA MSG}. */
    static final String RFC5424 = "^<\\d{1,3}>1 \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?(Z|[+-]\\d\\d:\\d\\d) \\S+ \\S+ \\S+ \\S+ (-|\\[.*\\]) .*";

    /**
     * Asserts that {@code line} is one RFC 5424 message from this process: eight space-separated parts (PRI and
     * VERSION, an ISO 8601 TIMESTAMP with milliseconds and offset, HOSTNAME, APP-NAME, PROCID, MSGID {@code -},
     * STRUCTURED-DATA {@code -}, MSG), the given PRI, no line break inside.
     *
     * @return MSG
     */
    static String assertRfc5424(String line, int pri, String appName) {
        assertThat(line).matches(RFC5424).doesNotContain("\n", "\r");
        String[] f = line.split(" ", 8);
        assertThat(f).hasSize(8);
        assertThat(f[0]).isEqualTo("<" + pri + ">1");
        assertThat(java.time.OffsetDateTime.parse(f[1])).isNotNull();
        assertThat(f[1]).matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}(Z|[+-]\\d\\d:\\d\\d)");
        assertThat(f[2]).isEqualTo(Rfc5424Pattern.hostName());
        assertThat(f[3]).isEqualTo(appName);
        assertThat(f[4]).isEqualTo(Long.toString(ProcessHandle.current().pid()));
        assertThat(f[5]).isEqualTo("-");
        assertThat(f[6]).isEqualTo("-");
        return f[7];
    }

    @AfterEach
    void reset() {
        Logging.configure(LogTarget.parse("stderr"), "levee-test", "WARN");
    }

    @Test
    void udpSyslogReceivesRfc5424Lines() throws Exception {
        try (DatagramSocket socket = new DatagramSocket(0, InetAddress.getLoopbackAddress())) {
            socket.setSoTimeout(5000);
            Logging.configure(LogTarget.parse("udp://127.0.0.1:" + socket.getLocalPort()), "levee-limiter", "INFO");
            LoggerFactory.getLogger("levee.limiter.decision").info("decision result=rejected resource={} key={}",
                    "example-bucket", LogText.escape("evil\nkey\u0000"));
            byte[] buf = new byte[8192];
            DatagramPacket p = new DatagramPacket(buf, buf.length);
            socket.receive(p);
            String line = new String(p.getData(), 0, p.getLength(), StandardCharsets.UTF_8);
            assertThat(line).matches(RFC5424).contains("levee-limiter").contains("resource=example-bucket")
                    .contains("key=evil\\x0akey\\x00").doesNotContain("\n");
            assertThat(line).startsWith("<134>1 "); // facility local0 (16) * 8 + info (6)
            assertThat(assertRfc5424(line, 134, "levee-limiter"))
                    .isEqualTo("decision result=rejected resource=example-bucket key=evil\\x0akey\\x00");
        }
    }

    /** TCP syslog (RFC 6587 non-transparent framing): one line a message, newline-terminated, newlines escaped. */
    @Test
    void tcpSyslogReceivesOneRfc5424LineAMessage() throws Exception {
        try (java.net.ServerSocket server = new java.net.ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            server.setSoTimeout(5000);
            Logging.configure(LogTarget.parse("tcp://127.0.0.1:" + server.getLocalPort()), "levee-limiter", "INFO");
            try (java.net.Socket peer = server.accept()) {
                peer.setSoTimeout(5000);
                var log = LoggerFactory.getLogger("levee.limiter.decision");
                log.info("decision result=accepted resource={} remaining={}", "example-bucket", 99L);
                log.warn("two\nlines");
                log.error("failed", new IllegalStateException("boom"));
                var in = new java.io.BufferedReader(new java.io.InputStreamReader(peer.getInputStream(), StandardCharsets.UTF_8));
                assertThat(assertRfc5424(in.readLine(), 134, "levee-limiter"))
                        .isEqualTo("decision result=accepted resource=example-bucket remaining=99");
                assertThat(assertRfc5424(in.readLine(), 132, "levee-limiter")).isEqualTo("two\\nlines");
                assertThat(assertRfc5424(in.readLine(), 131, "levee-limiter"))
                        .startsWith("failed\\njava.lang.IllegalStateException: boom\\n\tat ");
            }
        }
    }

    /** The RFC 5424 targets use the garbage-free PatternLayout of Rfc5424Pattern, UTF-8, and no other layout. */
    @Test
    void rfc5424TargetsUseTheGarbageFreePattern(@TempDir Path dir) {
        Logging.configure(LogTarget.parse("file:" + dir.resolve("levee.log")), "levee-limiter", "INFO");
        var ctx = (org.apache.logging.log4j.core.LoggerContext) org.apache.logging.log4j.LogManager.getContext(false);
        var layout = ctx.getConfiguration().getAppender("out").getLayout();
        assertThat(layout).isInstanceOf(org.apache.logging.log4j.core.layout.PatternLayout.class);
        assertThat(((org.apache.logging.log4j.core.layout.PatternLayout) layout).getConversionPattern())
                .isEqualTo(Rfc5424Pattern.pattern("levee-limiter", true));
        assertThat(((org.apache.logging.log4j.core.layout.PatternLayout) layout).getCharset()).isEqualTo(StandardCharsets.UTF_8);
    }

    @Test
    void fileTargetWritesOneMessageALine(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("levee.log");
        Logging.configure(LogTarget.parse("file:" + file), "levee-client", "INFO");
        for (int i = 0; i < 5; i++) {
            LoggerFactory.getLogger("levee.client").info("result=accepted limiter=127.0.0.1:7100 resource=b{}", i);
        }
        LoggerFactory.getLogger("levee.client").warn("a line with\na newline");
        // the async loggers flush the file at the end of each batch: no shutdown needed to see the lines
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(5))
                .until(() -> Files.exists(file) && Files.readAllLines(file).size() == 6);
        List<String> lines = new ArrayList<>(Files.readAllLines(file));
        assertThat(lines).hasSize(6).allSatisfy(l -> assertThat(l).matches(RFC5424));
        for (int i = 0; i < 5; i++) {
            assertThat(assertRfc5424(lines.get(i), 134, "levee-client")).isEqualTo("result=accepted limiter=127.0.0.1:7100 resource=b" + i);
        }
        assertThat(assertRfc5424(lines.get(5), 132, "levee-client")).isEqualTo("a line with\\na newline");
        assertThat(Files.readString(file)).endsWith("newline\n");
    }

    /**
     * Decision lines to a file cost the logger's thread and a caller using the Log4j API's fixed-arity methods no
     * garbage, measured per thread after a warm-up (Rfc5424Layout: ~900 bytes a line on the logger's thread; the
     * default clock: 24 bytes a line on the caller's; docs/BENCHMARKS.md, "Logging allocation").
     */
    @Test
    void decisionLinesAreGarbageFreeOnTheLoggerThreadAndTheCaller(@TempDir Path dir) throws Exception {
        Logging.configure(LogTarget.parse("file:" + dir.resolve("levee.log")), "levee-limiter", "INFO");
        var ctx = (org.apache.logging.log4j.core.async.AsyncLoggerContext) org.apache.logging.log4j.LogManager.getContext(false);
        var ring = ctx.createRingBufferAdmin();
        var log = org.apache.logging.log4j.LogManager.getLogger("levee.limiter.decision");
        var threads = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        long[] perLine = new long[2];
        int lines = 20_000;
        for (int round = 0; round < 3; round++) { // two to warm up, the last measured
            waitUntilEmpty(ring);
            long loggerThread = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.getName().startsWith("Log4j2-TF-") && t.getName().contains("AsyncLogger["))
                    .findFirst().orElseThrow().threadId();
            long self = Thread.currentThread().threadId();
            long logger0 = threads.getThreadAllocatedBytes(loggerThread);
            long caller0 = threads.getThreadAllocatedBytes(self);
            for (int i = 0; i < lines; i++) {
                if (i % 4096 == 0) {
                    waitUntilEmpty(ring); // nothing dropped
                }
                log.info("decision result=accepted resource={} key={} op={} level={} limit_key={} rate={} burst={} g={}"
                        + " remaining={} retry_after={} limiter=l1", "bucket", "photos/a.jpg", "GetObject", "bucket",
                        "bucket", org.apache.logging.log4j.util.Unbox.box(1000.0), org.apache.logging.log4j.util.Unbox.box(100),
                        org.apache.logging.log4j.util.Unbox.box(2), org.apache.logging.log4j.util.Unbox.box((long) i),
                        org.apache.logging.log4j.util.Unbox.box(0L));
            }
            waitUntilEmpty(ring);
            java.util.concurrent.locks.LockSupport.parkNanos(50_000_000); // the last batch written
            perLine[0] = (threads.getThreadAllocatedBytes(loggerThread) - logger0) / lines;
            perLine[1] = (threads.getThreadAllocatedBytes(self) - caller0) / lines;
        }
        assertThat(perLine[0]).as("bytes a line allocated by the logger's thread").isLessThan(64);
        assertThat(perLine[1]).as("bytes a line allocated by the caller").isLessThan(8);
    }

    private static void waitUntilEmpty(org.apache.logging.log4j.core.jmx.RingBufferAdmin ring) {
        while (ring.getRemainingCapacity() < ring.getBufferSize()) {
            java.util.concurrent.locks.LockSupport.parkNanos(100_000);
        }
    }

    @Test
    void shutdownFlushesWhatIsQueued(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("levee.log");
        Logging.configure(LogTarget.parse("file:" + file), "levee-limiter", "INFO");
        for (int i = 0; i < 200; i++) {
            LoggerFactory.getLogger("levee.limiter.decision").info("decision {}", i);
        }
        Logging.shutdown();
        assertThat(Files.readAllLines(file)).hasSize(200);
    }

    @Test
    void loggersAreAsynchronousOnTheDisruptorRing() {
        Logging.configure(LogTarget.parse("stderr"), "levee-test", "INFO");
        var ctx = (org.apache.logging.log4j.core.LoggerContext) org.apache.logging.log4j.LogManager.getContext(false);
        assertThat(ctx).isInstanceOf(org.apache.logging.log4j.core.async.AsyncLoggerContext.class);
        assertThat(ctx.getLogger("levee.limiter.decision")).isInstanceOf(org.apache.logging.log4j.core.async.AsyncLogger.class);
        // and not asynchronous twice (an AsyncLoggerConfig behind an AsyncLogger would copy every event again)
        assertThat(ctx.getConfiguration().getLoggerConfig("levee.limiter.decision"))
                .isNotInstanceOf(org.apache.logging.log4j.core.async.AsyncLoggerConfig.class);
    }

    @Test
    @SuppressWarnings("try") // the peer is held accepted for the block, never read
    void aTargetThatStopsReadingNeverBlocksTheCaller() throws Exception {
        try (java.net.ServerSocket stuck = new java.net.ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Logging.configure(LogTarget.parse("tcp://127.0.0.1:" + stuck.getLocalPort()), "levee-test", "INFO");
            try (java.net.Socket peer = stuck.accept()) { // accepted, never read
                var log = LoggerFactory.getLogger("levee.limiter.decision");
                long dropped0 = LogDrops.dropped();
                String pad = "x".repeat(1000);
                long t0 = System.nanoTime();
                // ~100 MB at a peer that reads nothing: the socket buffers and the 16 384-slot ring
                // fill within the first few thousand lines, every later line is dropped, none waits
                for (int i = 0; i < 100_000; i++) {
                    log.info("decision {} {}", i, pad);
                }
                long ms = (System.nanoTime() - t0) / 1_000_000;
                System.out.printf("100 000 lines to a stuck TCP syslog target: %d ms in the caller%n", ms);
                assertThat(ms).as("caller time for 100 000 lines at a stuck target").isLessThan(20_000);
                // and counted: at most the ring and the socket buffers hold lines, every other one was dropped
                assertThat(LogDrops.dropped() - dropped0).as("lines counted as dropped")
                        .isGreaterThan(100_000 - Logging.QUEUE_SIZE - 20_000);
                // and stopping does not wait for the stuck peer beyond its deadline
                long t1 = System.nanoTime();
                Logging.shutdown();
                long stopMs = (System.nanoTime() - t1) / 1_000_000;
                System.out.printf("shutdown with a stuck TCP syslog target: %d ms%n", stopMs);
                assertThat(stopMs).isLessThan(Logging.SHUTDOWN_MILLIS + 2_000);
            }
        }
        // the peer is gone: the abandoned stop finishes once the lines still queued have failed against it; waited
        // for, so that they are not written by whatever configuration the next test installs (the ring's thread
        // outlives a timed-out stop, and its lines go through the loggers' current configuration)
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals("levee-logging-stop")) {
                t.join(15_000);
            }
        }
    }

    /**
     * No line is lost without a trace: of lines logged faster than a file takes them, each is either in the file
     * or counted in {@code levee_log_lines_dropped_total} (whether any is dropped depends on the machine).
     */
    @Test
    void everyLineIsWrittenOrCountedAsDropped(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("levee.log");
        Logging.configure(LogTarget.parse("file:" + file), "levee-limiter", "INFO");
        var log = LoggerFactory.getLogger("levee.limiter.decision");
        String pad = "y".repeat(200);
        long dropped0 = LogDrops.dropped();
        int lines = 200_000;
        for (int i = 0; i < lines; i++) {
            log.info("decision {} {}", i, pad);
        }
        long dropped = LogDrops.dropped() - dropped0;
        Logging.shutdown(); // writes what is queued
        long written;
        try (var all = Files.lines(file)) {
            written = all.filter(l -> l.contains(" decision ")).count();
        }
        System.out.printf("%d lines logged at once to a file: %d written, %d dropped%n", lines, written, dropped);
        assertThat(written + dropped).isEqualTo(lines);
    }

    @Test
    void droppedLinesAreCountedOnTheMetricsAndSaidInAWarn(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("levee.log");
        Logging.configure(LogTarget.parse("file:" + file), "levee-limiter", "INFO");
        var registry = Metrics.newRegistry();
        LogDrops.report(); // what earlier tests dropped is reported before this one counts
        long before = LogDrops.dropped();
        var policy = new LogDrops(); // as Log4j calls it when the ring is full
        for (int i = 0; i < 5; i++) {
            assertThat(policy.getRoute(-1, org.apache.logging.log4j.Level.INFO))
                    .isEqualTo(org.apache.logging.log4j.core.async.EventRoute.DISCARD);
        }
        assertThat(LogDrops.dropped() - before).isEqualTo(5);
        assertThat(registry.scrape()).containsPattern("(?m)^levee_log_lines_dropped_total \\d");
        assertThat(registry.get("levee_log_lines_dropped_total").functionCounter().count()).isEqualTo(LogDrops.dropped());
        LogDrops.report(); // the reporter's thread calls it every 10 s
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(5))
                .until(() -> Files.exists(file) && Files.readString(file).contains("log lines dropped"));
        String warn = Files.readAllLines(file).stream().filter(l -> l.contains("log lines dropped")).findFirst().orElseThrow();
        assertThat(assertRfc5424(warn, 132, "levee-limiter")).startsWith("5 log lines dropped in the last 10 s")
                .contains("levee_log_lines_dropped_total");
        assertThat(LogDrops.report()).as("nothing new to report").isZero();
    }

    @Test
    void log4jsOwnErrorsAreOneLineWithTheirCauseNeverAStackTrace() {
        Logging.configure(LogTarget.parse("stderr"), "levee-test", "WARN");
        assertThat(org.apache.logging.log4j.status.StatusLogger.getLogger().getListeners())
                .anyMatch(l -> l instanceof Logging.StatusLines);
        java.io.PrintStream oldErr = System.err;
        java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
        try {
            System.setErr(new java.io.PrintStream(err, true, StandardCharsets.UTF_8));
            org.apache.logging.log4j.status.StatusLogger.getLogger().error("Unable to write to stream TCP:127.0.0.1:6514 for"
                    + " appender out", new IllegalStateException("Error sending", new java.net.SocketException("Broken pipe")));
            // the same again within 10 s: counted, not printed
            org.apache.logging.log4j.status.StatusLogger.getLogger().error("Unable to write to stream TCP:127.0.0.1:6514 for"
                    + " appender out", new IllegalStateException("Error sending", new java.net.SocketException("Broken pipe")));
        } finally {
            System.setErr(oldErr);
        }
        assertThat(err.toString(StandardCharsets.UTF_8)).isEqualTo("levee logging: Unable to write to stream"
                + " TCP:127.0.0.1:6514 for appender out (Broken pipe)" + System.lineSeparator());
    }

    @Test
    void aDirectoryAsLogFileIsRefusedClearly(@TempDir Path dir) {
        org.assertj.core.api.Assertions.assertThatThrownBy(() ->
                        Logging.configure(LogTarget.parse("file:" + dir), "levee-test", "INFO"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("is a directory");
    }

    @Test
    void targetsAreParsedWithClearErrors() {
        assertThat(LogTarget.parse("tcp://[::1]:6514").host()).isEqualTo("::1");
        assertThat(LogTarget.parse("stderr").kind()).isEqualTo("stderr");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> LogTarget.parse("syslog"))
                .hasMessageContaining("udp://HOST:PORT");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> LogTarget.parse("udp://host:99999"))
                .hasMessageContaining("out of range");
    }

    @Test
    void autoTargetIsTheJournalUnderSystemdAPersonsLineOnATerminalAndSyslogOnlyWhenStderrIsDevNull() {
        assertThat(LogTarget.parse("auto")).isEqualTo(LogTarget.DEFAULT);
        assertThat(LogTarget.resolveAuto("8:12345", "/dev/pts/0").target().kind()).isEqualTo("journal");
        assertThat(LogTarget.resolveAuto("8:12345", "socket:[12345]", "8:12345").target().kind()).isEqualTo("journal");
        // inherited by a process whose standard error is somewhere else (systemd.exec(5): compare dev:ino)
        assertThat(LogTarget.resolveAuto("8:12345", "/tmp/role.out", "2049:77").target().kind()).isEqualTo("stderr");
        assertThat(LogTarget.resolveAuto("8:12345", "/dev/pts/1", "24:4").target().kind()).isEqualTo("console");
        assertThat(LogTarget.resolveAuto(null, "/dev/pts/3").target().kind()).isEqualTo("console");
        assertThat(LogTarget.resolveAuto(null, "/dev/tty1").target().kind()).isEqualTo("console");
        assertThat(LogTarget.resolveAuto(null, "/tmp/role.out").target().kind()).isEqualTo("stderr");
        assertThat(LogTarget.resolveAuto(null, "pipe:[4711]").target().kind()).isEqualTo("stderr");
        assertThat(LogTarget.resolveAuto(null, null).target().kind()).isEqualTo("stderr");
        assertThat(LogTarget.resolveAuto(null, "/dev/null").target()).isEqualTo(LogTarget.LOCAL_SYSLOG);
        assertThat(LogTarget.resolveAuto(null, "/dev/null").why()).contains("/dev/null");
        // an explicit target is kept as given
        assertThat(LogTarget.parse("udp://127.0.0.1:514").resolve().target().kind()).isEqualTo("udp");
        assertThat(LogTarget.parse("udp://127.0.0.1:514").resolve().why()).isEmpty();
        assertThat(LogTarget.parse("auto").resolve().target().kind()).isNotEqualTo("auto");
    }

    @Test
    void logTextEscapesControlCharactersAndKeepsUnicode() {
        String clean = "photos/2024/ünïcødé✓";
        assertThat(LogText.escape(clean)).isSameAs(clean); // nothing to escape: the same string, nothing allocated
        assertThat(LogText.escape("x result=rejected limiter=l9")).isEqualTo("\"x result=rejected limiter=l9\"");
        assertThat(LogText.escape("say \"hi\"")).isEqualTo("\"say \\\"hi\\\"\"");
        assertThat(LogText.escape("a\tb\\c\u007f\u2028")).isEqualTo("a\\x09b\\\\c\\x7f\\u2028");
        assertThat(LogText.escape(null)).isEqualTo("-");
        assertThat(LogText.escape("x".repeat(5000))).hasSize(LogText.DEFAULT_MAX_CHARS + 1).endsWith("…");
    }
}
