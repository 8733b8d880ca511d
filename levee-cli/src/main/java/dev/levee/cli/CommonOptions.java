package dev.levee.cli;

import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import picocli.CommandLine.Option;

/** Options every role shares: where logs go and how verbose they are. */
final class CommonOptions {

    @Option(names = "--log-target", converter = Converters.LogTargetConverter.class, paramLabel = "TARGET",
            description = "RFC 5424 syslog target: udp://HOST:PORT, tcp://HOST:PORT, file:PATH or stderr"
                    + " (default: ${DEFAULT-VALUE})", defaultValue = "udp://127.0.0.1:514")
    LogTarget logTarget = LogTarget.DEFAULT;

    @Option(names = "--log-level", paramLabel = "LEVEL", defaultValue = "INFO",
            description = "root log level: ERROR, WARN, INFO, DEBUG (default: ${DEFAULT-VALUE})")
    String logLevel = "INFO";

    void apply(String appName) {
        Logging.configure(logTarget, appName, logLevel);
    }
}
