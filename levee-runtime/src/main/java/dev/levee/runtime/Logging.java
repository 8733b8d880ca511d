package dev.levee.runtime;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.builder.api.AppenderComponentBuilder;
import org.apache.logging.log4j.core.config.builder.api.ConfigurationBuilder;
import org.apache.logging.log4j.core.config.builder.api.ConfigurationBuilderFactory;
import org.apache.logging.log4j.core.config.builder.api.LayoutComponentBuilder;
import org.apache.logging.log4j.core.config.builder.impl.BuiltConfiguration;

/**
 * Configures SLF4J's backend (Log4j 2) to write RFC 5424 syslog messages (or, on a terminal and for the
 * journal, the forms {@link LogTarget} describes) to one {@link LogTarget} through asynchronous loggers that
 * never block the caller (docs/design.md §2).
 *
 * <p>Every logger is a Log4j {@code AsyncLogger} (the {@code AsyncLoggerContextSelector}; the caller formats
 * the line into a preallocated ring slot, allocating nothing): the event goes onto an LMAX Disruptor ring of
 * {@value #QUEUE_SIZE} slots, drained by one background thread that formats and writes in batches
 * (one write per batch; file and console flushed at the end of each batch). When the ring is full,
 * events are dropped rather than stalling a Vert.x event loop. Ring size, wait strategy (sleep 10 ms
 * when empty, no wake-up signal per line) and the drop policy are in
 * {@code log4j2.component.properties}. RFC 5424 lines are formatted by Log4j's garbage-free
 * {@code PatternLayout} with the pattern of {@link Rfc5424Pattern} (the lines Log4j's {@code Rfc5424Layout}
 * wrote, without its ~1 KB of garbage per line); transport is Log4j's file, console and socket appenders.
 */
public final class Logging {

    /** The logger of a role's start lines (where it logs, where it listens): at INFO whatever the root level, but OFF. */
    public static final String START_LOGGER = "levee.start";

    /** Events the async ring holds before it drops: 16 384 (set in log4j2.component.properties). */
    public static final int QUEUE_SIZE = 16_384;

    private static LogTarget lastTarget;
    private static String lastApp;
    private static String lastLevel;

    private Logging() {
    }

    /**
     * Applies the last configuration again. Some embedded libraries (S3Proxy/jclouds in the demo and
     * the tests) reset Log4j's context when they start; call this after starting them.
     */
    public static synchronized void reapply() {
        if (lastTarget != null) {
            configure(lastTarget, lastApp, lastLevel);
        }
    }

    /**
     * Replaces the logging configuration of this JVM.
     *
     * @param target  where lines go
     * @param appName the RFC 5424 APP-NAME, for example {@code levee-limiter}
     * @param level   the root level: ERROR, WARN, INFO, DEBUG, TRACE or OFF
     * @throws IllegalArgumentException when the level is unknown or a log file cannot be written
     */
    public static synchronized void configure(LogTarget target, String appName, String level) {
        target = target.resolve().target();
        if (level == null || !java.util.Set.of("OFF", "ERROR", "WARN", "INFO", "DEBUG", "TRACE")
                .contains(level.toUpperCase(java.util.Locale.ROOT))) {
            throw new IllegalArgumentException("log level '" + level + "' is not one of ERROR, WARN, INFO, DEBUG, TRACE, OFF");
        }
        if (target.file() != null) {
            java.nio.file.Path parent = target.file().toAbsolutePath().getParent();
            try {
                java.nio.file.Files.createDirectories(parent);
            } catch (java.io.IOException | RuntimeException e) {
                throw new IllegalArgumentException("cannot create the log directory " + parent);
            }
            if (java.nio.file.Files.isDirectory(target.file())) {
                throw new IllegalArgumentException("cannot write the log file " + target.file() + ": it is a directory");
            }
            if (!java.nio.file.Files.isWritable(parent)
                    || java.nio.file.Files.exists(target.file()) && !java.nio.file.Files.isWritable(target.file())) {
                throw new IllegalArgumentException("cannot write the log file " + target.file());
            }
        }
        System.setProperty("vertx.logger-delegate-factory-class-name", "io.vertx.core.logging.SLF4JLogDelegateFactory");
        ConfigurationBuilder<BuiltConfiguration> b = ConfigurationBuilderFactory.newConfigurationBuilder();
        b.setConfigurationName("levee");
        b.setStatusLevel(Level.ERROR);
        AppenderComponentBuilder out = switch (target.kind()) {
            case "file" -> b.newAppender("out", "File")
                    .addAttribute("fileName", target.file().toString())
                    .addAttribute("append", true)
                    .addAttribute("immediateFlush", false) // flushed at the end of each async batch
                    .addAttribute("bufferedIo", true)
                    .add(rfc5424(b, appName, true));
            case "stderr" -> b.newAppender("out", "Console").addAttribute("target", "SYSTEM_ERR")
                    .addAttribute("immediateFlush", false) // flushed at the end of each batch
                    .add(rfc5424(b, appName, true));
            // a person's line: time, level, logger, message (one line; an exception's first lines on the next ones)
            case "console" -> b.newAppender("out", "Console").addAttribute("target", "SYSTEM_ERR")
                    .addAttribute("immediateFlush", false).add(b.newLayout("PatternLayout")
                            .addAttribute("pattern", "%d{HH:mm:ss.SSS} %-5level %logger: %enc{%m}{CRLF}%n%ex{8}"));
            // sd-daemon(3) prefixes: journald stores the priority; one entry a line (newlines escaped)
            case "journal" -> b.newAppender("out", "Console").addAttribute("target", "SYSTEM_ERR")
                    .addAttribute("immediateFlush", false).add(b.newLayout("PatternLayout")
                            .addAttribute("alwaysWriteExceptions", false)
                            .addAttribute("pattern", "<%level{FATAL=2, ERROR=3, WARN=4, INFO=6, DEBUG=7, TRACE=7}>%logger:"
                                    + " %enc{%m}{CRLF}%enc{%ex{8}}{CRLF}%n"));
            // Log4j's Syslog appender is this Socket appender with an Rfc5424Layout: TCP lines end with a newline,
            // a UDP datagram holds one line without; each line flushed; reconnect after 1 s; no exception to the
            // caller. Unlike that layout as the Syslog appender built it, newlines are escaped (a raw one split a
            // message in two on TCP) and exceptions written, as in files (docs/decisions.md)
            default -> b.newAppender("out", "Socket")
                    .addAttribute("host", target.host())
                    .addAttribute("port", target.port())
                    .addAttribute("protocol", target.kind().toUpperCase(java.util.Locale.ROOT))
                    .addAttribute("reconnectionDelayMillis", 1000)
                    .addAttribute("immediateFail", true)
                    .addAttribute("ignoreExceptions", true)
                    .add(rfc5424(b, appName, target.kind().equals("tcp")));
        };
        b.add(out);
        // every logger is asynchronous by the context selector (log4j2.component.properties): plain loggers here
        b.add(b.newRootLogger(Level.toLevel(level, Level.INFO)).add(b.newAppenderRef("out")));
        // start lines are said at any level but OFF
        Level root = Level.toLevel(level, Level.INFO);
        b.add(b.newLogger(START_LOGGER, root == Level.OFF ? Level.OFF : Level.INFO).addAttribute("additivity", true));
        // chatty third-party loggers stay at WARN
        for (String noisy : new String[] {"org.eclipse.jetty", "org.jclouds", "org.gaul", "io.netty", "io.vertx",
                "software.amazon", "org.apache.http", "io.grpc", "io.etcd"}) {
            b.add(b.newLogger(noisy, Level.WARN).addAttribute("additivity", true));
        }
        BuiltConfiguration config = b.build();
        StatusLines.install();
        lastTarget = target;
        lastApp = appName;
        lastLevel = level;
        LoggerContext ctx = (LoggerContext) org.apache.logging.log4j.LogManager.getContext(false);
        if (!ctx.isStarted()) {
            ctx.start(config);
        } else {
            ctx.setConfiguration(config); // starts the new configuration, then stops the old one
        }
        ctx.updateLoggers();
    }

    /**
     * Returns the layout of RFC 5424 lines: Log4j's garbage-free {@code PatternLayout} with the pattern of
     * {@link Rfc5424Pattern}, which writes the lines Log4j's {@code Rfc5424Layout} wrote (UTF-8, as it). Called
     * only for the targets that use it: the pattern holds the host name, a reverse look-up.
     */
    private static LayoutComponentBuilder rfc5424(ConfigurationBuilder<BuiltConfiguration> b, String appName,
            boolean newLine) {
        return b.newLayout("PatternLayout")
                .addAttribute("pattern", Rfc5424Pattern.pattern(appName, newLine))
                .addAttribute("alwaysWriteExceptions", false) // the pattern places the exception itself
                .addAttribute("charset", "UTF-8");
    }

    /**
     * Log4j's own errors (a syslog peer that went away: "Broken pipe", a full disk) as one line each on
     * standard error, at most one line per {@value #STATUS_INTERVAL_S} s for the same message, never a stack
     * trace (Log4j's console listener prints the whole trace of every failed write).
     */
    static final class StatusLines implements org.apache.logging.log4j.status.StatusListener {
        private static final StatusLines INSTANCE = new StatusLines();
        private static boolean installed;
        private final java.util.Map<String, long[]> last = new java.util.concurrent.ConcurrentHashMap<>();

        static synchronized void install() {
            org.apache.logging.log4j.status.StatusLogger status = org.apache.logging.log4j.status.StatusLogger.getLogger();
            if (!installed) {
                // once a listener is registered, Log4j 2.25 no longer prints through its console fallback listener
                // (whose level still decides which events are made)
                status.registerListener(INSTANCE);
                installed = true;
            }
        }

        /** Returns the line for a status event: its message and the innermost cause, no trace. */
        static String line(String message, Throwable t) {
            StringBuilder sb = new StringBuilder("levee logging: ").append(message);
            Throwable root = t;
            while (root != null && root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
            }
            if (root != null) {
                sb.append(" (").append(root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage())
                        .append(')');
            }
            return sb.toString().replace('\n', ' ');
        }

        @Override
        public void log(org.apache.logging.log4j.status.StatusData data) {
            String text = line(data.getMessage().getFormattedMessage(), data.getThrowable());
            long now = SystemTicker.INSTANCE.read();
            long[] seen = last.computeIfAbsent(text, k -> new long[] {now - STATUS_INTERVAL_S * 1_000_000_000L - 1, 0});
            synchronized (seen) {
                if (now - seen[0] <= STATUS_INTERVAL_S * 1_000_000_000L) {
                    seen[1]++;
                    return;
                }
                long suppressed = seen[1];
                seen[0] = now;
                seen[1] = 0;
                System.err.println(text + (suppressed > 0 ? " [" + suppressed + " more like it]" : ""));
            }
        }

        @Override
        public Level getStatusLevel() {
            return Level.ERROR;
        }

        @Override
        public void close() {
        }
    }

    /** Least seconds between two lines about the same Log4j error: 10. */
    static final long STATUS_INTERVAL_S = 10;

    /** Longest {@link #shutdown()} waits for queued lines to leave: 5 s. */
    public static final long SHUTDOWN_MILLIS = 5_000;

    /**
     * Flushes and stops logging; call last on shutdown. Waits at most {@value #SHUTDOWN_MILLIS} ms:
     * a log target that stopped reading (a TCP syslog peer that hangs) keeps Log4j's writer blocked,
     * and the process must still exit, so the stop runs on a daemon thread that is abandoned past the
     * deadline (the lines still queued are lost).
     */
    public static void shutdown() {
        LoggerContext ctx = (LoggerContext) org.apache.logging.log4j.LogManager.getContext(false);
        Thread stopper = new Thread(() -> ctx.stop(SHUTDOWN_MILLIS, java.util.concurrent.TimeUnit.MILLISECONDS),
                "levee-logging-stop");
        stopper.setDaemon(true);
        stopper.start();
        try {
            stopper.join(SHUTDOWN_MILLIS + 500);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
