package dev.levee.cli;

import dev.levee.runtime.HostPort;
import dev.levee.runtime.LogTarget;
import java.time.Duration;
import java.util.Locale;
import picocli.CommandLine;

/** Parses command-line values, with messages that name the expected form. */
final class Converters {

    private Converters() {
    }

    /** {@code HOST:PORT}. */
    static final class HostPortConverter implements CommandLine.ITypeConverter<HostPort> {
        @Override
        public HostPort convert(String value) {
            try {
                return HostPort.parse(value, "address");
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }

    /** The line endpoint's {@code HOST:PORT}, with no scheme (see {@link #parseLineAddress}). */
    static final class LineAddressConverter implements CommandLine.ITypeConverter<HostPort> {
        @Override
        public HostPort convert(String value) {
            return parseLineAddress(value, false);
        }
    }

    /** The line endpoint's {@code HOST:PORT}, or {@code none} (null: no line listener). */
    static final class OptionalLineAddressConverter implements CommandLine.ITypeConverter<HostPort> {
        @Override
        public HostPort convert(String value) {
            return parseLineAddress(value, true);
        }
    }

    /**
     * A line endpoint's address: {@code HOST:PORT} and nothing else — no scheme, since the endpoint speaks
     * levee-line/1, not HTTP (an {@code http://} would suggest it does).
     */
    static HostPort parseLineAddress(String value, boolean noneAllowed) {
        String v = value == null ? "" : value.trim();
        if (noneAllowed && v.equalsIgnoreCase("none")) {
            return null;
        }
        if (v.contains("://")) {
            throw new CommandLine.TypeConversionException("expected HOST:PORT with no scheme, got '" + v
                    + "': the line endpoint speaks levee-line/1" + (v.regionMatches(true, 0, "http", 0, 4) ? ", not HTTP" : ""));
        }
        try {
            return HostPort.parse(v, "address");
        } catch (IllegalArgumentException e) {
            throw new CommandLine.TypeConversionException(e.getMessage() + (noneAllowed ? " (or 'none')" : ""));
        }
    }

    /** {@code HOST:PORT}, or {@code none} (null: the listener is off). */
    static final class OptionalHostPortConverter implements CommandLine.ITypeConverter<HostPort> {
        @Override
        public HostPort convert(String value) {
            if (value != null && value.trim().equalsIgnoreCase("none")) {
                return null;
            }
            try {
                return HostPort.parse(value, "address");
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage() + " (or 'none')");
            }
        }
    }

    /** {@code 250ms}, {@code 2s}, {@code 1m}, {@code 1h}, or ISO-8601 {@code PT2S}. */
    static final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            return parseDuration(value);
        }
    }

    /** See {@link LogTarget#parse}. */
    static final class LogTargetConverter implements CommandLine.ITypeConverter<LogTarget> {
        @Override
        public LogTarget convert(String value) {
            try {
                return LogTarget.parse(value);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }

    /** A size in bytes: {@code 65536}, {@code 64KiB}, {@code 16MiB} (also {@code B}, {@code k}, {@code M}; binary units). */
    static final class SizeConverter implements CommandLine.ITypeConverter<Integer> {
        @Override
        public Integer convert(String value) {
            return parseSize(value);
        }
    }

    static int parseSize(String value) {
        String v = value == null ? "" : value.trim();
        String lower = v.toLowerCase(Locale.ROOT);
        long unit = 1;
        String digits = lower;
        if (lower.endsWith("kib") || lower.endsWith("k")) {
            unit = 1 << 10;
            digits = lower.substring(0, lower.length() - (lower.endsWith("kib") ? 3 : 1));
        } else if (lower.endsWith("mib") || lower.endsWith("m")) {
            unit = 1 << 20;
            digits = lower.substring(0, lower.length() - (lower.endsWith("mib") ? 3 : 1));
        } else if (lower.endsWith("b")) {
            digits = lower.substring(0, lower.length() - 1);
        }
        try {
            long n = Long.parseLong(digits.trim());
            if (n < 1 || n * unit > Integer.MAX_VALUE) {
                throw new NumberFormatException();
            }
            return (int) (n * unit);
        } catch (NumberFormatException e) {
            throw new CommandLine.TypeConversionException("'" + v + "' is not a size between 1 byte and 2 GiB"
                    + " (bytes, or with KiB / MiB, for example 64KiB)");
        }
    }

    /** Longest duration any option takes: 365 days (beyond it, arithmetic on it overflows somewhere). */
    static final Duration MAX_DURATION = Duration.ofDays(365);

    /**
     * Returns a duration as a person types it for {@link #parseDuration}: {@code 25h}, {@code 90m}, {@code 30s},
     * {@code 250ms} (not Java's {@code PT25H}); whole milliseconds.
     */
    static String formatDuration(Duration d) {
        long ms = d.toMillis();
        return ms % 3_600_000 == 0 && ms != 0 ? ms / 3_600_000 + "h" : ms % 60_000 == 0 && ms != 0 ? ms / 60_000 + "m"
                : ms % 1000 == 0 ? ms / 1000 + "s" : ms + "ms";
    }

    /** A positive duration: {@code 250ms}, {@code 2s}, {@code 1.5m}, {@code 1h}, or ISO-8601 {@code PT2S}; at most 365 days. */
    static Duration parseDuration(String value) {
        return parseDuration(value, false);
    }

    /**
     * A duration as {@link #parseDuration(String)} reads it; with {@code zeroAllowed}, zero in any spelling too
     * ({@code 0}, {@code 0s}, {@code 0.0m}, {@code PT0S}).
     *
     * @throws CommandLine.TypeConversionException naming the value: not a duration, negative, zero where it must be
     *                                             positive, below a millisecond, or longer than 365 days
     */
    static Duration parseDuration(String value, boolean zeroAllowed) {
        String shown = value == null ? "" : value.trim();
        String v = shown.toLowerCase(Locale.ROOT);
        String examples = " (examples: 250ms, 2s, 1.5m, 1h, PT2S)";
        double ms;
        try {
            if (v.startsWith("pt") || v.startsWith("-pt")) {
                Duration iso = Duration.parse(v.toUpperCase(Locale.ROOT));
                ms = iso.getSeconds() * 1000.0 + iso.getNano() / 1e6;
            } else if (v.endsWith("ms")) {
                ms = number(v.substring(0, v.length() - 2));
                if (ms != Math.rint(ms)) {
                    throw new CommandLine.TypeConversionException("'" + shown + "' is not a duration: milliseconds are"
                            + " whole" + examples);
                }
            } else if (v.endsWith("s")) {
                ms = number(v.substring(0, v.length() - 1)) * 1_000;
            } else if (v.endsWith("m")) {
                ms = number(v.substring(0, v.length() - 1)) * 60_000;
            } else if (v.endsWith("h")) {
                ms = number(v.substring(0, v.length() - 1)) * 3_600_000;
            } else if (v.matches("-?0+(\\.0*)?")) {
                ms = 0; // a zero needs no unit
            } else {
                throw new NumberFormatException();
            }
        } catch (CommandLine.TypeConversionException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new CommandLine.TypeConversionException("'" + shown + "' is not a duration" + examples);
        }
        if (ms > MAX_DURATION.toMillis()) {
            throw new CommandLine.TypeConversionException("duration '" + shown + "' is longer than "
                    + MAX_DURATION.toDays() + " days");
        }
        if (ms < 0) {
            throw new CommandLine.TypeConversionException("duration '" + shown + "' must not be negative");
        }
        if (ms > 0 && Math.round(ms) == 0) {
            throw new CommandLine.TypeConversionException("duration '" + shown + "' is below a millisecond, the"
                    + " smallest step");
        }
        if (ms == 0 && !zeroAllowed) {
            throw new CommandLine.TypeConversionException("duration '" + shown + "' must be positive");
        }
        return Duration.ofMillis(Math.round(ms));
    }

    /** A finite decimal number (no NaN, no infinity, no hexadecimal). */
    private static double number(String s) {
        String t = s.trim();
        if (t.isEmpty() || !t.matches("[-+]?[0-9]*\\.?[0-9]*([eE][-+]?[0-9]+)?")) {
            throw new NumberFormatException(s);
        }
        double n = Double.parseDouble(t);
        if (!Double.isFinite(n)) {
            return n > 0 ? Double.MAX_VALUE : -Double.MAX_VALUE; // over the cap, named as such
        }
        return n;
    }
}
