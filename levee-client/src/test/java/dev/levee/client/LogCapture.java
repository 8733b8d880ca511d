package dev.levee.client;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;

/**
 * The lines of one logger while a test runs, as {@code LEVEL message}: an appender on a logger config of its own at
 * INFO, removed on {@link #close}. Logging is asynchronous: wait for a line rather than read at once.
 */
final class LogCapture implements AutoCloseable {

    private final String name;
    private final List<String> lines = new CopyOnWriteArrayList<>();
    private final AbstractAppender appender;

    LogCapture(String logger) {
        this.name = logger;
        this.appender = new AbstractAppender("capture-" + logger, null, null, true, Property.EMPTY_ARRAY) {
            @Override
            public void append(LogEvent e) {
                lines.add(e.getLevel() + " " + e.getMessage().getFormattedMessage());
            }
        };
        appender.start();
        LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
        Configuration cfg = ctx.getConfiguration();
        LoggerConfig lc = new LoggerConfig(logger, Level.INFO, false);
        lc.addAppender(appender, Level.INFO, null);
        cfg.addLogger(logger, lc);
        ctx.updateLoggers();
    }

    /** Returns the lines so far. */
    List<String> lines() {
        return List.copyOf(lines);
    }

    @Override
    public void close() {
        LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
        ctx.getConfiguration().removeLogger(name);
        ctx.updateLoggers();
        appender.stop();
    }
}
