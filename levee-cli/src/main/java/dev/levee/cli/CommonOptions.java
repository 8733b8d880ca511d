package dev.levee.cli;

import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import picocli.CommandLine.Option;

/** Options every role shares: where logs go and how verbose they are. */
final class CommonOptions {

    @Option(names = "--log-target", converter = Converters.LogTargetConverter.class, paramLabel = "TARGET",
            description = "where logs go: auto (standard error as a short line on a terminal, for the journal under"
                    + " systemd, as RFC 5424 lines when redirected; UDP syslog 127.0.0.1:514 when it is /dev/null),"
                    + " udp://HOST:PORT or tcp://HOST:PORT (RFC 5424 syslog), file:PATH, stderr (RFC 5424),"
                    + " console, journal (default: ${DEFAULT-VALUE})", defaultValue = "auto")
    LogTarget logTarget = LogTarget.DEFAULT;

    @Option(names = "--log-level", paramLabel = "LEVEL", defaultValue = "INFO",
            description = "root log level: ERROR, WARN, INFO, DEBUG (default: ${DEFAULT-VALUE})")
    String logLevel = "INFO";

    /** The target in use once {@link #apply} ran. */
    private LogTarget applied;

    /** Configures logging and says in one line on standard error where the log goes (issue 13). */
    void apply(String appName) {
        LogTarget.Resolution r = logTarget.resolve();
        Logging.configure(r.target(), appName, logLevel);
        applied = r.target();
        announce(appName + ": log to " + r.target().describe() + " at " + logLevel.toUpperCase(java.util.Locale.ROOT)
                + (r.why().isEmpty() ? " (--log-target)" : " (" + r.why() + "; --log-target to change)"));
    }

    /**
     * Says a start line (where the log goes, where the role listens): as it is on standard error, or, when the log
     * itself is on standard error in a form made for programs (RFC 5424 lines, the journal's {@code <N>} prefixes),
     * as a log line of that form at INFO (logger {@value Logging#START_LOGGER}, shown at any level but OFF), so that
     * whatever reads standard error reads one form (a new user found plain lines between RFC 5424 ones).
     */
    void announce(String line) {
        if (applied != null && (applied.kind().equals("stderr") || applied.kind().equals("journal"))) {
            org.slf4j.LoggerFactory.getLogger(Logging.START_LOGGER).info(line);
        } else {
            System.err.println(line);
        }
    }
}
