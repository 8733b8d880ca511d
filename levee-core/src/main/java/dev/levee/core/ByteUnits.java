package dev.levee.core;

import java.math.BigDecimal;
import java.util.Locale;

/**
 * Parses and prints byte quantities and byte rates with units, for the gateway's configuration
 * ({@code --download-rate 4MiB/s}, {@code upload_rate: 20MB} in the principals file).
 *
 * <p>Accepted forms: a decimal number, optionally followed by a unit and optionally by
 * {@code /s}: {@code 0}, {@code 1048576}, {@code 512KiB}, {@code 1.5MiB/s}, {@code 10MB}. Units
 * are case-insensitive: {@code B} = 1 byte, {@code KB MB GB TB} are powers of 1000 and
 * {@code KiB MiB GiB TiB} powers of 1024. A fractional result is rounded down to whole bytes.
 */
public final class ByteUnits {

    private static final String[] UNITS = {"tib", "gib", "mib", "kib", "tb", "gb", "mb", "kb", "b"};
    private static final long[] FACTORS = {1L << 40, 1L << 30, 1L << 20, 1L << 10,
        1_000_000_000_000L, 1_000_000_000L, 1_000_000L, 1_000L, 1L};

    private ByteUnits() {
    }

    /**
     * Parses a rate in bytes per second.
     *
     * @param text for example {@code 4MiB/s}, {@code 4MiB} or {@code 4194304}
     * @return the rate in bytes per second, ≥ 0
     * @throws IllegalArgumentException if the text is not a non-negative amount of bytes (the
     *                                  message names the accepted forms)
     */
    public static long parseRate(String text) {
        String v = text == null ? "" : text.strip().toLowerCase(Locale.ROOT);
        if (v.endsWith("s") && v.substring(0, v.length() - 1).stripTrailing().endsWith("/")) {
            v = v.substring(0, v.substring(0, v.length() - 1).stripTrailing().length() - 1).strip();
        }
        return parse(text, v);
    }

    /**
     * Parses an amount of bytes ({@code 64KiB}); like {@link #parseRate} without {@code /s}.
     *
     * @throws IllegalArgumentException if the text is not a non-negative amount of bytes
     */
    public static long parseBytes(String text) {
        String v = text == null ? "" : text.strip().toLowerCase(Locale.ROOT);
        return parse(text, v);
    }

    private static long parse(String original, String v) {
        long factor = 1;
        for (int i = 0; i < UNITS.length; i++) {
            if (v.endsWith(UNITS[i])) {
                factor = FACTORS[i];
                v = v.substring(0, v.length() - UNITS[i].length()).strip();
                break;
            }
        }
        if (v.isEmpty() || !v.chars().allMatch(c -> c >= '0' && c <= '9' || c == '.')
                || v.indexOf('.') != v.lastIndexOf('.') || v.startsWith(".") || v.endsWith(".")) {
            throw new IllegalArgumentException("'" + original + "' is not an amount of bytes (examples: 0, 1048576, 512KiB,"
                    + " 4MiB/s, 1.5GB; KB/MB/GB are powers of 1000, KiB/MiB/GiB powers of 1024)");
        }
        BigDecimal bytes = new BigDecimal(v).multiply(BigDecimal.valueOf(factor));
        if (bytes.compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
            throw new IllegalArgumentException("'" + original + "' is too large");
        }
        return bytes.longValue();
    }

    /**
     * Formats a rate for logs and messages: {@code off} for 0, else the largest binary unit that
     * keeps an integer ({@code 2 MiB/s}), else bytes ({@code 1500 B/s}).
     */
    public static String formatRate(long bytesPerSecond) {
        if (bytesPerSecond == 0) {
            return "off";
        }
        String[] names = {"TiB", "GiB", "MiB", "KiB"};
        for (int i = 0; i < names.length; i++) {
            long f = FACTORS[i];
            if (bytesPerSecond % f == 0) {
                return bytesPerSecond / f + " " + names[i] + "/s";
            }
        }
        return bytesPerSecond + " B/s";
    }
}
