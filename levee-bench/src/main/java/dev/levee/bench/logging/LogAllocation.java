package dev.levee.bench.logging;

import dev.levee.runtime.LogTarget;
import dev.levee.runtime.LogText;
import dev.levee.runtime.Logging;
import java.lang.management.ManagementFactory;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.async.AsyncLoggerContext;
import org.apache.logging.log4j.core.config.builder.api.ConfigurationBuilder;
import org.apache.logging.log4j.core.config.builder.api.ConfigurationBuilderFactory;
import org.apache.logging.log4j.core.config.builder.api.LayoutComponentBuilder;
import org.apache.logging.log4j.core.config.builder.impl.BuiltConfiguration;
import org.apache.logging.log4j.core.jmx.RingBufferAdmin;
import org.apache.logging.log4j.util.Unbox;

/**
 * Bytes allocated per decision line through the real asynchronous logger to a file (or standard error, or UDP or TCP syslog) target
 * (issue 12, "Logging allocation"), on each of the two threads involved: the logger's background thread (Log4j's
 * {@code Log4j2-TF-…-AsyncLogger[…]}, which formats and writes) and the caller's (the event loop, which
 * formats the message into the ring's slot). Read with {@code com.sun.management.ThreadMXBean#getThreadAllocatedBytes}.
 *
 * <p>Layouts: {@code rfc5424Layout}, Levee's configuration before (Log4j's {@code Rfc5424Layout}, rebuilt here
 * as it was), and {@code patternLayout}, {@link Logging#configure} now. Calls: {@code slf4j-varargs}, the form of
 * {@code LimiterService.logDecision} (SLF4J, 12 arguments in an {@code Object[]}, numbers boxed), and
 * {@code slf4j-shadow}, its form for a decision with a shadow quota (the 12 arguments copied into 18, the format
 * concatenated per call), {@code log4j-fixed}, the Log4j API's 10-parameter overload with the result word and the
 * limiter's id in the format and the numbers through {@link Unbox#box}, and {@code log4j-text}, the line's text
 * appended into a reused {@code StringBuilder} and logged with the Log4j API's {@code info(CharSequence)} (the
 * async logger copies it into the ring's slot before the call returns). Lines are logged in chunks that the ring holds (no line is
 * dropped); between rounds the file is truncated. The syslog targets go to a local socket: a UDP one never read
 * (the kernel drops what does not fit), a TCP one read and discarded by a thread of this program.
 *
 * <pre>java -cp levee-bench/target/levee-bench.jar dev.levee.bench.logging.LogAllocation [lines a round] [rounds] [file|stderr|udp|tcp]</pre>
 */
public final class LogAllocation {

    static final String SLF4J_FORM = "decision result={} resource={} key={} op={} level={} limit_key={} rate={} burst={}"
            + " g={} remaining={} retry_after={} limiter={}";
    static final String LOG4J_FORM = "decision result=accepted resource={} key={} op={} level={} limit_key={} rate={}"
            + " burst={} g={} remaining={} retry_after={} limiter=l1";
    static final int CHUNK = 4096;

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final String[] KEYS = new String[16];

    static {
        for (int k = 0; k < KEYS.length; k++) {
            KEYS[k] = "photos/2026/img-" + k + ".jpg";
        }
    }

    private LogAllocation() {
    }

    public static void main(String[] args) throws Exception {
        int lines = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        String kind = args.length > 2 ? args[2] : "file";
        Path file = Files.createTempDirectory("levee-log-allocation").resolve("levee.log");
        String target = switch (kind) {
            case "file" -> "file:" + file;
            case "udp" -> "udp://127.0.0.1:" + new java.net.DatagramSocket(0, java.net.InetAddress.getLoopbackAddress())
                    .getLocalPort(); // never read, closed at exit
            case "tcp" -> "tcp://127.0.0.1:" + tcpSink();
            case "stderr" -> "stderr";
            default -> throw new IllegalArgumentException("target: file, stderr, udp or tcp");
        };
        System.out.printf(Locale.ROOT, "%-14s %-14s %-6s %8s %16s %16s%n", "layout", "call", "to", "lines",
                "logger B/line", "caller B/line");
        for (String layout : List.of("rfc5424Layout", "patternLayout")) {
            configure(layout, target);
            for (String call : List.of("slf4j-varargs", "slf4j-shadow", "log4j-fixed", "log4j-text")) {
                for (int r = 0; r < 3; r++) {
                    round(call, lines, file); // warm-up
                }
                for (int r = 0; r < rounds; r++) {
                    long[] bytes = round(call, lines, file);
                    System.out.printf(Locale.ROOT, "%-14s %-14s %-6s %8d %16.1f %16.1f%n", layout, call, kind, lines,
                            (double) bytes[0] / lines, (double) bytes[1] / lines);
                }
            }
        }
        Logging.shutdown();
        Files.deleteIfExists(file);
        Files.deleteIfExists(file.getParent());
    }

    /** Logs {@code lines} lines; returns the bytes the logger's thread and the caller's allocated meanwhile. */
    static long[] round(String call, int lines, Path file) throws Exception {
        var ctx = (AsyncLoggerContext) LogManager.getContext(false);
        RingBufferAdmin ring = ctx.createRingBufferAdmin();
        org.slf4j.Logger slf4j = org.slf4j.LoggerFactory.getLogger("levee.limiter.decision");
        org.apache.logging.log4j.Logger log4j = LogManager.getLogger("levee.limiter.decision");
        drained(ring);
        long loggerThread = loggerThreadId();
        long self = Thread.currentThread().threadId();
        long logger0 = THREADS.getThreadAllocatedBytes(loggerThread);
        long caller0 = THREADS.getThreadAllocatedBytes(self);
        StringBuilder text = new StringBuilder(256);
        for (int i = 0; i < lines; i++) {
            if (i % CHUNK == 0) {
                drained(ring); // never more than a chunk queued: no line is dropped
            }
            String key = KEYS[i & 15];
            long remaining = i % 1000;
            switch (call) {
                case "slf4j-varargs", "slf4j-shadow" -> {
                    // LimiterService.logDecision's form
                    String line = SLF4J_FORM;
                    Object[] a = {"accepted", LogText.escape("bucket"), LogText.escape(key), "GetObject", "bucket",
                        LogText.escape("bucket"), 1000.0, 100, 2, remaining, 0L, "l1"};
                    if (call.equals("slf4j-varargs")) {
                        slf4j.info(line, a);
                    } else {
                        Object[] more = java.util.Arrays.copyOf(a, a.length + 6);
                        more[a.length] = "accepted";
                        more[a.length + 1] = "bucket";
                        more[a.length + 2] = LogText.escape("bucket");
                        more[a.length + 3] = 500.0;
                        more[a.length + 4] = 50;
                        more[a.length + 5] = remaining;
                        slf4j.info(line + " mode=shadow shadow={} shadow_level={} shadow_limit_key={} shadow_rate={}"
                                + " shadow_burst={} shadow_remaining={}", more);
                    }
                }
                case "log4j-fixed" -> log4j.info(LOG4J_FORM, LogText.escape("bucket"), LogText.escape(key), "GetObject",
                        "bucket", LogText.escape("bucket"), Unbox.box(1000.0), Unbox.box(100), Unbox.box(2),
                        Unbox.box(remaining), Unbox.box(0L));
                case "log4j-text" -> {
                    text.setLength(0);
                    text.append("decision result=accepted resource=").append(LogText.escape("bucket"))
                            .append(" key=").append(LogText.escape(key)).append(" op=GetObject level=bucket limit_key=")
                            .append(LogText.escape("bucket")).append(" rate=").append(1000.0).append(" burst=")
                            .append(100).append(" g=").append(2).append(" remaining=").append(remaining)
                            .append(" retry_after=").append(0L).append(" limiter=l1");
                    log4j.info(text);
                }
                default -> throw new IllegalArgumentException(call);
            }
        }
        drained(ring);
        LockSupport.parkNanos(50_000_000); // the last batch written
        long[] bytes = {THREADS.getThreadAllocatedBytes(loggerThread) - logger0,
            THREADS.getThreadAllocatedBytes(self) - caller0};
        if (Files.exists(file)) {
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
                ch.truncate(0);
            }
        }
        return bytes;
    }

    static void drained(RingBufferAdmin ring) {
        while (ring.getRemainingCapacity() < ring.getBufferSize()) {
            LockSupport.parkNanos(100_000);
        }
    }

    static long loggerThreadId() {
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("Log4j2-TF-") && t.getName().contains("AsyncLogger[")) {
                return t.threadId();
            }
        }
        throw new IllegalStateException("no AsyncLogger thread");
    }

    /** Returns the port of a local TCP server that reads and discards what it is sent, on a daemon thread. */
    static int tcpSink() throws java.io.IOException {
        var server = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
        Thread t = new Thread(() -> {
            byte[] buf = new byte[65536];
            while (true) {
                try (var peer = server.accept(); var in = peer.getInputStream()) {
                    while (in.read(buf) >= 0) {
                        // discarded
                    }
                } catch (java.io.IOException e) {
                    return;
                }
            }
        }, "tcp-sink");
        t.setDaemon(true);
        t.start();
        return server.getLocalPort();
    }

    /** Configures the target with the given layout: Levee's configuration now, or as it was with Rfc5424Layout. */
    static void configure(String layout, String target) {
        LogTarget t = LogTarget.parse(target);
        Logging.configure(t, "levee-limiter", "INFO");
        if (layout.equals("patternLayout")) {
            return;
        }
        // Logging.configure before this change
        ConfigurationBuilder<BuiltConfiguration> b = ConfigurationBuilderFactory.newConfigurationBuilder();
        b.setConfigurationName("levee");
        b.setStatusLevel(Level.ERROR);
        LayoutComponentBuilder rfc5424 = b.newLayout("Rfc5424Layout").addAttribute("appName", "levee-limiter")
                .addAttribute("facility", "LOCAL0").addAttribute("id", "levee").addAttribute("includeMDC", false)
                .addAttribute("includeNL", true).addAttribute("escapeNL", "\\n").addAttribute("exceptionPattern", "%ex{8}");
        if (t.kind().equals("stderr")) {
            b.add(b.newAppender("out", "Console").addAttribute("target", "SYSTEM_ERR")
                    .addAttribute("immediateFlush", false).add(rfc5424));
        } else if (t.kind().equals("file")) {
            b.add(b.newAppender("out", "File").addAttribute("fileName", t.file().toString()).addAttribute("append", true)
                    .addAttribute("immediateFlush", false).addAttribute("bufferedIo", true).add(rfc5424));
        } else {
            b.add(b.newAppender("out", "Syslog").addAttribute("host", t.host()).addAttribute("port", t.port())
                    .addAttribute("protocol", t.kind().toUpperCase(Locale.ROOT)).addAttribute("format", "RFC5424")
                    .addAttribute("appName", "levee-limiter").addAttribute("facility", "LOCAL0").addAttribute("id", "levee")
                    .addAttribute("includeMDC", false).addAttribute("newLine", t.kind().equals("tcp"))
                    .addAttribute("reconnectionDelayMillis", 1000).addAttribute("immediateFail", true)
                    .addAttribute("ignoreExceptions", true));
        }
        b.add(b.newRootLogger(Level.INFO).add(b.newAppenderRef("out")));
        LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
        ctx.setConfiguration(b.build());
        ctx.updateLoggers();
    }
}
