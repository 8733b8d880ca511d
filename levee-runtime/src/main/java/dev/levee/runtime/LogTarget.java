package dev.levee.runtime;

import java.nio.file.Path;
import java.util.Locale;

/**
 * Says where a Levee process sends its RFC 5424 syslog lines.
 *
 * <p>Spelled on the command line as {@code udp://HOST:PORT} (default {@code udp://127.0.0.1:514}),
 * {@code tcp://HOST:PORT} (newline-framed, RFC 6587 §3.4.2 non-transparent framing), {@code file:PATH} (one RFC 5424
 * message a line, for {@code grep}) or {@code stderr}.
 *
 * @param kind one of {@code udp}, {@code tcp}, {@code file}, {@code stderr}
 * @param host syslog host (udp/tcp), else null
 * @param port syslog port (udp/tcp), else 0
 * @param file log file (file), else null
 */
public record LogTarget(String kind, String host, int port, Path file) {

    /** The default: syslog over UDP on the local host, port 514. */
    public static final LogTarget DEFAULT = new LogTarget("udp", "127.0.0.1", 514, null);

    /**
     * Parses a target.
     *
     * @param spec for example {@code udp://127.0.0.1:514}, {@code file:/var/log/levee.log}, {@code stderr}
     * @return the target
     * @throws IllegalArgumentException with a message naming the expected forms when {@code spec} is malformed
     */
    public static LogTarget parse(String spec) {
        String s = spec == null ? "" : spec.trim();
        String lower = s.toLowerCase(Locale.ROOT);
        if (lower.equals("stderr")) {
            return new LogTarget("stderr", null, 0, null);
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
                + "' is not one of udp://HOST:PORT, tcp://HOST:PORT, file:PATH, stderr");
    }

    @Override
    public String toString() {
        return switch (kind) {
            case "file" -> "file:" + file;
            case "stderr" -> "stderr";
            default -> kind + "://" + host + ":" + port;
        };
    }
}
