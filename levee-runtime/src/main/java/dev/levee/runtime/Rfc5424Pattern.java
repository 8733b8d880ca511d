package dev.levee.runtime;

import java.util.List;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.net.Facility;
import org.apache.logging.log4j.core.net.Priority;
import org.apache.logging.log4j.core.util.NetUtils;
import org.apache.logging.log4j.util.ProcessIdUtil;

/**
 * Builds the Log4j {@code PatternLayout} pattern that writes the RFC 5424 lines Log4j's {@code Rfc5424Layout}
 * wrote with Levee's settings (facility LOCAL0, no MDC, newlines escaped as {@code \n}, exceptions as
 * {@code %ex{8}}), without allocating per line: {@code Rfc5424Layout} allocated the formatted message, a
 * regular-expression matcher and its result, the line and its bytes (~1 KB a line, docs/BENCHMARKS.md,
 * "Logging allocation"); {@code PatternLayout} formats into a reused buffer and encodes into the appender's.
 *
 * <p>Field by field (RFC 5424 §6), each from the same source {@code Rfc5424Layout} used:
 * <ul>
 *   <li>PRI: {@code %level{...}} mapped per level to Log4j's own {@link Priority#getPriority} for LOCAL0
 *       ({@code <134>} for INFO; FATAL is ALERT, {@code <129>}; TRACE and DEBUG are DEBUG, {@code <135>});
 *   <li>VERSION {@code 1};
 *   <li>TIMESTAMP: {@code %d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX}} in the default time zone, as
 *       {@code Rfc5424Layout}'s {@code GregorianCalendar}: local time, milliseconds, {@code Z} for a zero
 *       offset and {@code +HH:MM} otherwise;
 *   <li>HOSTNAME: {@link #hostName}: the machine's name, its fully qualified form when a look-up gives one
 *       ({@code Rfc5424Layout} took a reverse look-up of the local address, which on a Debian machine whose
 *       {@code /etc/hosts} maps its name to 127.0.0.1 is {@code localhost} on every machine),
 *       APP-NAME: the role's name (the configuration's, {@code levee}, when none), PROCID:
 *       {@link ProcessIdUtil#getProcessId()} — read once, as {@code Rfc5424Layout} did, and written as literal text;
 *   <li>MSGID and STRUCTURED-DATA: {@code -} (Levee's {@code Rfc5424Layout} had an {@code id}, which names
 *       structured data, but no {@code messageId}; and no MDC);
 *   <li>MSG: a space and the message, if it is not empty, with CR and LF written as {@code \r} and {@code \n}
 *       ({@code %enc{}{CRLF}}), then the exception, if any, after an escaped newline, then a newline.
 * </ul>
 *
 * <p>The one difference, in messages that hold a carriage return: {@code Rfc5424Layout} replaced
 * {@code \r?\n} (a regular expression, not garbage-free), so it wrote CRLF as {@code \n} and left a lone CR
 * raw in the line; here CR is always {@code \r}. Levee's own lines never hold one (request text goes through
 * {@link LogText#escape}); {@code Rfc5424PatternTest} pins the rest byte for byte against
 * {@code Rfc5424Layout}. Exception traces are rendered by the same converter; only a CR inside them differs
 * the same way.
 */
public final class Rfc5424Pattern {

    /** Log4j's {@code Rfc5424Layout}'s date form, as a {@code %d} pattern. */
    static final String TIMESTAMP = "%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX}";

    private Rfc5424Pattern() {
    }

    /**
     * Returns the pattern for this host and process.
     *
     * @param appName the APP-NAME, for example {@code levee-limiter}; {@code null} for {@code levee}
     * @param newLine whether each line ends with a newline (files, standard error, TCP syslog), or not (UDP
     *                syslog: one datagram a line)
     * @return a {@code PatternLayout} pattern, for a layout with {@code alwaysWriteExceptions} off
     */
    public static String pattern(String appName, boolean newLine) {
        return pattern(hostName(), appName == null ? "levee" : appName,
                ProcessIdUtil.getProcessId(), newLine);
    }

    /**
     * Returns the HOSTNAME of this machine's lines (RFC 5424 §6.2.4: the FQDN, else the host name): the name the
     * machine gives itself ({@code gethostname}), or its fully qualified form when a look-up of it gives one.
     */
    static String hostName() {
        try {
            java.net.InetAddress local = java.net.InetAddress.getLocalHost();
            return hostName(local.getHostName(), local.getCanonicalHostName());
        } catch (java.net.UnknownHostException | SecurityException e) {
            String fallback = NetUtils.getLocalHostname(); // the name from the exception or the interfaces
            return fallback == null || fallback.isBlank() ? "-" : fallback;
        }
    }

    /**
     * Chooses between the machine's own name and the name a reverse look-up gave: the look-up's only when it is
     * the same name, qualified ({@code vm} and {@code vm.example.net}); never a loopback name such as
     * {@code localhost}, nor an address.
     */
    static String hostName(String own, String canonical) {
        if (own == null || own.isBlank()) {
            return canonical == null || canonical.isBlank() ? "-" : canonical;
        }
        if (canonical != null && canonical.regionMatches(true, 0, own, 0, own.length())
                && canonical.length() > own.length() + 1 && canonical.charAt(own.length()) == '.') {
            return canonical;
        }
        return own;
    }

    /** Returns the pattern with the given header fields. */
    static String pattern(String hostName, String appName, String procId, boolean newLine) {
        StringBuilder p = new StringBuilder(256).append(priority()).append("1 ").append(TIMESTAMP)
                .append(' ').append(literal(hostName))
                .append(' ').append(literal(appName))
                .append(' ').append(literal(procId))
                .append(" - -")
                // the message only when not empty; the trace after an escaped newline only when there is one
                .append("%notEmpty{ %enc{%m}{CRLF}}%enc{%notEmpty{\\n%ex{8}}}{CRLF}");
        if (newLine) {
            p.append("\\n"); // a line feed on every platform, as Rfc5424Layout
        }
        return p.toString();
    }

    /** Returns {@code %level{OFF=<128>, FATAL=<129>, ...}}: PRI for facility LOCAL0, per Log4j's {@link Priority}. */
    static String priority() {
        StringBuilder p = new StringBuilder("%level{");
        for (Level level : List.of(Level.OFF, Level.FATAL, Level.ERROR, Level.WARN, Level.INFO, Level.DEBUG,
                Level.TRACE, Level.ALL)) {
            if (level != Level.OFF) {
                p.append(", ");
            }
            p.append(level.name()).append("=<").append(Priority.getPriority(Facility.LOCAL0, level)).append('>');
        }
        return p.append('}').toString();
    }

    /**
     * Returns {@code s} as literal text of a pattern: {@code %} and {@code \} doubled. A host name cannot hold
     * {@code $} or braces (RFC 1123), so property substitution ({@code ${...}}) is not guarded against.
     */
    static String literal(String s) {
        return s.replace("\\", "\\\\").replace("%", "%%");
    }
}
