package dev.levee.runtime;

import java.nio.file.Path;
import java.util.Locale;

/**
 * Says where a Levee process sends its log lines.
 *
 * <p>Spelled on the command line as {@code udp://HOST:PORT} or {@code tcp://HOST:PORT} (RFC 5424 syslog; TCP
 * newline-framed, RFC 6587 §3.4.2 non-transparent framing), {@code file:PATH} (one RFC 5424 message a line, for
 * {@code grep}), {@code stderr} (RFC 5424 lines on standard error), {@code console} (a short line for a person:
 * time, level, logger, message), {@code journal} (standard error with the sd-daemon(3) priority prefix
 * {@code <N>}, for systemd's journal, which forwards to syslog) or {@code auto}, the default, which
 * {@link #resolve resolves} at start to one of them (issue 13, docs/decisions.md "Where logs go by default").
 *
 * @param kind one of {@code udp}, {@code tcp}, {@code file}, {@code stderr}, {@code console}, {@code journal}, {@code auto}
 * @param host syslog host (udp/tcp), else null
 * @param port syslog port (udp/tcp), else 0
 * @param file log file (file), else null
 */
public record LogTarget(String kind, String host, int port, Path file) {

    /** Syslog over UDP on the local host, port 514: where {@link #AUTO} goes when standard error is /dev/null. */
    public static final LogTarget LOCAL_SYSLOG = new LogTarget("udp", "127.0.0.1", 514, null);

    /** The default: resolved at start by {@link #resolve}. */
    public static final LogTarget AUTO = new LogTarget("auto", null, 0, null);

    /** The default target, {@link #AUTO}. */
    public static final LogTarget DEFAULT = AUTO;

    /**
     * A resolved target and why it was chosen.
     *
     * @param target the concrete target (never {@code auto})
     * @param why    a few words for the start line, for example {@code "standard error is a terminal"}; empty
     *               when the target was given explicitly
     */
    public record Resolution(LogTarget target, String why) {
    }

    /**
     * Resolves {@code auto} with this process's environment and standard error (other targets stay as they are).
     *
     * @return the target to use and why
     */
    public Resolution resolve() {
        if (!kind.equals("auto")) {
            return new Resolution(this, "");
        }
        String fd2;
        try {
            fd2 = java.nio.file.Files.readSymbolicLink(Path.of("/proc/self/fd/2")).toString();
        } catch (java.io.IOException | RuntimeException e) {
            fd2 = null; // not Linux, or no /proc: treated as redirected
        }
        String devIno;
        try { // what fd 2 is, in JOURNAL_STREAM's form (st_dev:st_ino, decimal)
            Path p = Path.of("/proc/self/fd/2");
            devIno = java.nio.file.Files.getAttribute(p, "unix:dev") + ":" + java.nio.file.Files.getAttribute(p, "unix:ino");
        } catch (java.io.IOException | RuntimeException e) {
            devIno = null; // unknown: JOURNAL_STREAM is taken at its word
        }
        return resolveAuto(System.getenv("JOURNAL_STREAM"), fd2, devIno);
    }

    /** {@link #resolveAuto(String, String, String)} when what standard error is is unknown. */
    public static Resolution resolveAuto(String journalStream, String stderrPath) {
        return resolveAuto(journalStream, stderrPath, null);
    }

    /**
     * Resolves {@code auto} (pure): {@code journal} when systemd connected standard error to the journal
     * ({@code JOURNAL_STREAM} set and, when known, naming standard error's device and inode, as systemd.exec(5)
     * asks: a process started from a service with its standard error redirected inherits the variable but
     * does not write to the journal); {@code console} when standard error is a terminal;
     * {@link #LOCAL_SYSLOG} when it is {@code /dev/null} (nothing would see the lines); else {@code stderr}
     * (RFC 5424 lines, into whatever file or pipe standard error was redirected to).
     *
     * @param journalStream the value of {@code JOURNAL_STREAM}, or null
     * @param stderrPath    where file descriptor 2 points ({@code /proc/self/fd/2}), or null when unknown
     * @param stderrDevIno  standard error's {@code st_dev:st_ino} in decimal, or null when unknown
     * @return the target and why
     */
    public static Resolution resolveAuto(String journalStream, String stderrPath, String stderrDevIno) {
        if (journalStream != null && !journalStream.isBlank()
                && (stderrDevIno == null || journalStream.strip().equals(stderrDevIno))) {
            return new Resolution(new LogTarget("journal", null, 0, null), "running under systemd");
        }
        if (stderrPath != null && (stderrPath.startsWith("/dev/pts/") || stderrPath.startsWith("/dev/tty")
                || stderrPath.equals("/dev/console"))) {
            return new Resolution(new LogTarget("console", null, 0, null), "standard error is a terminal");
        }
        if ("/dev/null".equals(stderrPath)) {
            return new Resolution(LOCAL_SYSLOG, "standard error is /dev/null");
        }
        return new Resolution(new LogTarget("stderr", null, 0, null), "standard error is redirected");
    }

    /** Returns where lines go, in words, for the one line a role prints at start. */
    public String describe() {
        return switch (kind) {
            case "file" -> "RFC 5424 lines in the file " + file;
            case "stderr" -> "RFC 5424 lines on standard error";
            case "console" -> "standard error";
            case "journal" -> "the systemd journal (standard error with priority prefixes)";
            case "auto" -> "auto";
            default -> "RFC 5424 syslog at " + kind + "://" + host + ":" + port;
        };
    }

    /**
     * Parses a target.
     *
     * @param spec for example {@code auto}, {@code udp://127.0.0.1:514}, {@code file:/var/log/levee.log}, {@code stderr}
     * @return the target
     * @throws IllegalArgumentException with a message naming the expected forms when {@code spec} is malformed
     */
    public static LogTarget parse(String spec) {
        String s = spec == null ? "" : spec.trim();
        String lower = s.toLowerCase(Locale.ROOT);
        if (lower.equals("stderr") || lower.equals("console") || lower.equals("journal") || lower.equals("auto")) {
            return new LogTarget(lower, null, 0, null);
        }
        if (lower.startsWith("file:") && s.length() > 5) {
            return new LogTarget("file", null, 0, Path.of(s.substring(5)));
        }
        for (String kind : new String[] {"udp", "tcp"}) {
            String prefix = kind + "://";
            if (lower.startsWith(prefix)) {
                HostPort hp = HostPort.parse(s.substring(prefix.length()), "log target");
                return new LogTarget(kind, hp.host(), hp.port(), null);
            }
        }
        throw new IllegalArgumentException("log target '" + s
                + "' is not one of auto, udp://HOST:PORT, tcp://HOST:PORT, file:PATH, stderr, console, journal");
    }

    @Override
    public String toString() {
        return switch (kind) {
            case "file" -> "file:" + file;
            case "stderr", "console", "journal", "auto" -> kind;
            default -> kind + "://" + host + ":" + port;
        };
    }
}
