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

    /**
     * The line endpoint's {@code HOST:PORT}, or {@code none} (null): no scheme, since the endpoint speaks
     * levee-line/1, not HTTP (an {@code http://} there would suggest it does).
     */
    static final class LineAddressConverter implements CommandLine.ITypeConverter<HostPort> {
        @Override
        public HostPort convert(String value) {
            if (value != null && value.contains("://")) {
                throw new CommandLine.TypeConversionException("expected HOST:PORT, got '" + value.trim()
                        + "': the line endpoint speaks levee-line/1, not HTTP, so no scheme");
            }
            return new OptionalHostPortConverter().convert(value);
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

    static Duration parseDuration(String value) {
        String v = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
        try {
            Duration d;
            if (v.startsWith("pt")) {
                d = Duration.parse(v.toUpperCase(Locale.ROOT));
            } else if (v.endsWith("ms")) {
                d = Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2)));
            } else if (v.endsWith("s")) {
                d = Duration.ofMillis(Math.round(Double.parseDouble(v.substring(0, v.length() - 1)) * 1000));
            } else if (v.endsWith("m")) {
                d = Duration.ofSeconds(Math.round(Double.parseDouble(v.substring(0, v.length() - 1)) * 60));
            } else if (v.endsWith("h")) {
                d = Duration.ofSeconds(Math.round(Double.parseDouble(v.substring(0, v.length() - 1)) * 3600));
            } else if (v.matches("0+(\\.0*)?")) {
                d = Duration.ZERO; // a zero without its unit is still zero: refused below as not positive
            } else {
                throw new NumberFormatException();
            }
            if (d.isNegative() || d.isZero()) {
                throw new CommandLine.TypeConversionException("duration '" + value + "' must be positive");
            }
            return d;
        } catch (RuntimeException e) {
            if (e instanceof CommandLine.TypeConversionException t) {
                throw t;
            }
            throw new CommandLine.TypeConversionException("'" + value
                    + "' is not a duration (examples: 250ms, 2s, 1.5m, 1h, PT2S)");
        }
    }
}
