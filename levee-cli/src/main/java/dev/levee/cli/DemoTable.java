package dev.levee.cli;

import dev.levee.core.Ticker;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The per-second table of {@code levee demo} (issue 13): each event counts in the second it reaches the
 * table — a request when it is sent, its result when it arrives — so a row is final once its second is
 * over and the rows add up to the totals of the summary. A request sent and not yet answered at the end
 * of a second shows in that row's {@code pending} column, never as a missing ok or SlowDown. Results
 * that arrive after the last second (while the run drains) have a row of their own, {@code end}.
 *
 * <p>Thread-safe: the load generator and the request threads record, the load generator prints (it
 * sends nothing after it printed the last second). Reading the clock and counting happen under one
 * lock, so nothing counts into a row already printed.
 */
final class DemoTable {

    /** A request sent. */
    static final int OFFERED = 0;
    /** A request admitted (and answered by the backend). */
    static final int ACCEPTED = 1;
    /** A request refused with 503 SlowDown. */
    static final int SLOWDOWN = 2;
    /** A request that failed otherwise. */
    static final int ERRORS = 3;
    /** A request counted as offered but not sent (the load generator's in-flight cap). */
    static final int NOT_SENT = 4;
    private static final int KINDS = 5;

    private final int streams;
    private final int seconds;
    private final Ticker ticker;
    private final long startNs;
    /** [row][stream][kind]; row {@code seconds} is {@code end}. */
    private final long[][][] counts;
    private final long[][] totals;
    private int printed;

    /**
     * @param streams number of streams (columns)
     * @param seconds number of one-second rows before {@code end}, at least 1
     * @param ticker  the clock, nanoseconds
     * @param startNs the clock's reading at the start of second 1
     */
    DemoTable(int streams, int seconds, Ticker ticker, long startNs) {
        this.streams = streams;
        this.seconds = seconds;
        this.ticker = ticker;
        this.startNs = startNs;
        this.counts = new long[seconds + 1][streams][KINDS];
        this.totals = new long[streams][KINDS];
    }

    /**
     * Counts one event of {@code kind} for stream {@code stream} in the current second. A request sent
     * (or not sent) after the last second, by a load generator running late, counts in the last second:
     * {@code end} holds only answers.
     */
    synchronized void record(int stream, int kind) {
        int row = row(ticker.read());
        if (kind == OFFERED || kind == NOT_SENT) {
            row = Math.min(row, seconds - 1);
        }
        counts[row][stream][kind]++;
        totals[stream][kind]++;
    }

    private int row(long now) {
        long sec = Math.floorDiv(now - startNs, 1_000_000_000L);
        return (int) Math.max(0, Math.min(seconds, sec));
    }

    /** Streams per line: a row is at most {@link #WIDTH} columns wide; more streams continue on further lines. */
    static final int PER_LINE = 7;
    /** The widest line of the table, in columns (issue 26 item 9). */
    static final int WIDTH = 100;

    /**
     * Returns the header lines: per stream {@code [i]} over {@code ok slow}, and the {@code sent pend} of all streams,
     * two lines per {@link #PER_LINE} streams.
     */
    List<String> header() {
        List<String> out = new ArrayList<>();
        for (int from = 0; from < streams; from += PER_LINE) {
            StringBuilder names = new StringBuilder("      ");
            StringBuilder cols = new StringBuilder(from == 0 ? "  sec " : "      ");
            for (int i = from; i < Math.min(streams, from + PER_LINE); i++) {
                names.append(String.format(Locale.ROOT, "|%9s ", "[" + (i + 1) + "]"));
                cols.append("|  ok slow ");
            }
            if (from == 0) {
                names.append("| all streams");
                cols.append("|  sent  pend");
            }
            out.add(names.toString());
            out.add(cols.toString());
        }
        return out;
    }

    /** Returns the largest number of answers (all streams, any result) that arrived in one second of the run. */
    synchronized long maxAnsweredInASecond() {
        long max = 0;
        for (int r = 0; r < seconds; r++) {
            long n = 0;
            for (int i = 0; i < streams; i++) {
                n += counts[r][i][ACCEPTED] + counts[r][i][SLOWDOWN] + counts[r][i][ERRORS];
            }
            max = Math.max(max, n);
        }
        return max;
    }

    /** Returns the rows of every second that is over and not yet returned, in order. */
    synchronized List<String> dueRows() {
        int over = (int) Math.min(seconds, Math.max(0, Math.floorDiv(ticker.read() - startNs, 1_000_000_000L)));
        List<String> out = new ArrayList<>();
        while (printed < over) {
            out.addAll(format(printed++));
        }
        return out;
    }

    /**
     * Returns the rows not yet returned once the run has drained: the remaining seconds, and {@code end}
     * when a result arrived after the last second or a request is still pending.
     */
    synchronized List<String> remainingRows() {
        List<String> out = new ArrayList<>();
        while (printed < seconds) {
            out.addAll(format(printed++));
        }
        boolean any = pendingAfter(seconds) > 0;
        for (int i = 0; i < streams; i++) {
            for (int k = 0; k < KINDS; k++) {
                any |= counts[seconds][i][k] > 0;
            }
        }
        if (any && printed == seconds) {
            out.addAll(format(printed++));
        }
        return out;
    }

    /** Returns the total of {@code kind} for stream {@code stream}. */
    synchronized long total(int stream, int kind) {
        return totals[stream][kind];
    }

    /** Requests sent and not answered by the end of row {@code r} (inclusive), all streams. */
    private long pendingAfter(int r) {
        long pending = 0;
        for (int row = 0; row <= r; row++) {
            for (int i = 0; i < streams; i++) {
                long[] c = counts[row][i];
                pending += c[OFFERED] - c[ACCEPTED] - c[SLOWDOWN] - c[ERRORS] - c[NOT_SENT];
            }
        }
        return pending;
    }

    /** The lines of row {@code r}: one per {@link #PER_LINE} streams, the first with the second and all streams' columns. */
    private List<String> format(int r) {
        List<String> out = new ArrayList<>();
        long sent = 0;
        for (int i = 0; i < streams; i++) {
            sent += counts[r][i][OFFERED] - counts[r][i][NOT_SENT];
        }
        for (int from = 0; from < streams; from += PER_LINE) {
            StringBuilder row = new StringBuilder(from > 0 ? "      "
                    : r == seconds ? "  end " : String.format(Locale.ROOT, "  %3d ", r + 1));
            for (int i = from; i < Math.min(streams, from + PER_LINE); i++) {
                long[] c = counts[r][i];
                row.append(String.format(Locale.ROOT, "|%4d %4d ", c[ACCEPTED], c[SLOWDOWN]));
            }
            if (from == 0) {
                row.append(String.format(Locale.ROOT, "| %5d %5d", sent, pendingAfter(r)));
            }
            out.add(row.toString());
        }
        return out;
    }
}
