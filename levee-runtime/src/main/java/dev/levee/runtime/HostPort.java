package dev.levee.runtime;

/**
 * Holds a host and a TCP port, parsed from {@code HOST:PORT} or {@code [IPv6]:PORT}.
 *
 * @param host host name or address (IPv6 without brackets)
 * @param port 0–65535 (0 means "pick a free port" for listeners)
 */
public record HostPort(String host, int port) {

    /**
     * Validates the parts.
     *
     * @throws IllegalArgumentException when the host is empty or the port is out of range
     */
    public HostPort {
        if (host == null || host.isBlank()) {
            throw new IllegalArgumentException("host is empty");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port " + port + " is out of range 0-65535");
        }
    }

    /**
     * Parses {@code HOST:PORT}, {@code [IPV6]:PORT}, or the same as a URL {@code http://HOST:PORT} with an optional
     * trailing slash (operators paste URLs); any other scheme or a path is refused.
     *
     * @param s    the text
     * @param what what the value is, for the error message (for example {@code "--listen"})
     * @return the parsed value
     * @throws IllegalArgumentException naming {@code what} when the text is malformed
     */
    public static HostPort parse(String s, String what) {
        if (s == null) {
            throw new IllegalArgumentException(what + ": expected HOST:PORT, got nothing");
        }
        String t = s.trim();
        // an operator pastes a URL as often as an address: http://HOST:PORT[/] names the same endpoint
        if (t.regionMatches(true, 0, "http://", 0, 7)) {
            t = t.substring(7);
            if (t.endsWith("/")) {
                t = t.substring(0, t.length() - 1);
            }
        } else if (t.contains("://")) {
            throw new IllegalArgumentException(what + ": expected HOST:PORT (or http://HOST:PORT), got '" + t
                    + "': only plain HTTP is spoken here");
        }
        if (t.indexOf('/') >= 0 || t.indexOf(' ') >= 0) {
            throw new IllegalArgumentException(what + ": expected HOST:PORT with no path, got '" + s.trim() + "'");
        }
        int colon = t.lastIndexOf(':');
        if (colon <= 0 || colon == t.length() - 1) {
            throw new IllegalArgumentException(what + ": expected HOST:PORT, got '" + t + "'");
        }
        String host = t.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        } else if (host.indexOf('[') >= 0 || host.indexOf(']') >= 0) {
            throw new IllegalArgumentException(what + ": expected HOST:PORT, got '" + t + "': brackets go around a"
                    + " whole IPv6 address ([::1]:7000)");
        } else if (host.indexOf(':') >= 0) {
            // '127.0.0.1:7000:1' or '::1:7000': which colon starts the port is a guess; RFC 3986 brackets IPv6
            throw new IllegalArgumentException(what + ": expected HOST:PORT, got '" + t
                    + "': one colon only, or an IPv6 address in brackets ([::1]:7000)");
        }
        int port;
        try {
            port = Integer.parseInt(t.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(what + ": port in '" + t + "' is not a number");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException(what + ": port " + port + " is out of range 0-65535");
        }
        if (host.isBlank()) {
            throw new IllegalArgumentException(what + ": host in '" + t + "' is empty");
        }
        return new HostPort(host, port);
    }

    /** Returns {@code host:port}, with brackets around an IPv6 literal. */
    @Override
    public String toString() {
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
    }
}
