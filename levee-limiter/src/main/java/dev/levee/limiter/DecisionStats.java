package dev.levee.limiter;

import dev.levee.core.Ticker;
import dev.levee.quota.QuotaLevel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.datasketches.frequencies.ErrorType;
import org.apache.datasketches.frequencies.ItemsSketch;

/**
 * Hot resources of one limiter (issue 14 item 1): offered / admitted / refused / would-reject counts
 * per matched quota entry (resource and level) over sliding windows, for the top N entries by offered
 * and by refused, in memory bounded whatever the number of buckets.
 *
 * <p>Time is cut into slices of one second; each slice holds three heavy-hitters sketches (Apache
 * DataSketches {@link ItemsSketch}, the frequent-items sketch, keyed by the entry's rule key,
 * {@link dev.levee.quota.ResolvedQuota#ruleKey()}): offered, refused and would-reject (a shadow entry's
 * refusal, admitted). Slices are aligned on whole seconds of the ticker ({@code floor(t / 1 s)}), so
 * that the limiters of one host (one monotonic clock) cut the same seconds. A window of W seconds
 * merges the last W whole slices (the current, partial slice is not counted, nor the slice the
 * statistics were created in unless created on its boundary). A ring of {@code max(W) + 1} slices is kept.
 *
 * <p>Accuracy: each count served is the sketch's lower bound, and the true count lies in
 * {@code [count, count + maxError]}; {@code maxError} is the sketch's a-posteriori error, 0 (exact)
 * while no slice saw more than {@code 0.75 × sketchSize} distinct entries and the window's merge
 * did not overflow; at most {@code 3.5 / sketchSize} of the window's checks otherwise (DataSketches'
 * a-priori bound). Memory: at most {@code (max(W) + 1) × 3} sketches of at most {@code sketchSize}
 * slots, each slot a reference, a long and a short (14 bytes with compressed references), plus the
 * rule-key strings they hold (at most {@code 0.75 × sketchSize} each); see {@link #boundBytes}.
 *
 * <p>Cost per decision: a ticker read, a division, one sketch update (two for a refusal) with an
 * existing string; no allocation but the sketch's amortised purges and one reset per slice.
 * Thread-safe (synchronised; the limiter decides on one event loop, so the lock is uncontended).
 * Pure: no I/O, time from the injected ticker.
 */
public final class DecisionStats {

    /** What the limiter decided for one check, as counted here. */
    public enum Outcome {
        /** Admitted by an enforced entry. */
        ADMITTED,
        /** Refused (SlowDown) by an enforced entry. */
        REFUSED,
        /** Refused by a shadow entry ({@code mode: shadow}, issue 14 item 4) and therefore admitted. */
        WOULD_REJECT
    }

    /**
     * Settings of the statistics.
     *
     * @param enabled    whether decisions are counted at all (CLI {@code --[no-]stats}, default on)
     * @param top        how many entries are listed by offered and by refused (CLI {@code --stats-top}, default 20;
     *                   1–1000)
     * @param windows    the sliding windows, whole seconds, 1 s – 1 h, distinct (CLI {@code --stats-windows},
     *                   default 10s,60s)
     * @param sketchSize the most entries each sketch tracks, a power of two 16–65536 (CLI
     *                   {@code --stats-sketch-size}, default 1024)
     */
    public record Options(boolean enabled, int top, List<Duration> windows, int sketchSize) {
        /** Validates. @throws IllegalArgumentException naming the value that is out of range */
        public Options {
            if (top < 1 || top > 1000) {
                throw new IllegalArgumentException("stats top must be 1-1000, got " + top);
            }
            if (windows == null || windows.isEmpty() || windows.size() > 8) {
                throw new IllegalArgumentException("stats windows: give 1-8 durations");
            }
            for (Duration w : windows) {
                if (w.isNegative() || w.isZero() || w.toNanos() % 1_000_000_000L != 0 || w.toSeconds() > 3600) {
                    throw new IllegalArgumentException("stats window must be whole seconds between 1s and 1h, got " + w);
                }
            }
            if (windows.stream().distinct().count() != windows.size()) {
                throw new IllegalArgumentException("stats windows must be distinct, got " + windows);
            }
            if (sketchSize < 16 || sketchSize > 65536 || Integer.bitCount(sketchSize) != 1) {
                throw new IllegalArgumentException("stats sketch size must be a power of two 16-65536, got " + sketchSize);
            }
            windows = List.copyOf(windows);
        }
    }

    /** The defaults: on, top 20, windows 10 s and 60 s, sketches of 1024 entries. */
    public static final Options DEFAULTS = new Options(true, 20,
            List.of(Duration.ofSeconds(10), Duration.ofSeconds(60)), 1024);

    /** Statistics off. */
    public static final Options OFF = new Options(false, 20,
            List.of(Duration.ofSeconds(10), Duration.ofSeconds(60)), 1024);

    private static final long SLICE_NS = 1_000_000_000L;

    private static final class Slice {
        long index = -1;
        final ItemsSketch<String> offered;
        final ItemsSketch<String> refused;
        final ItemsSketch<String> wouldReject;
        long offeredTotal;
        long refusedTotal;
        long wouldRejectTotal;

        Slice(int size) {
            offered = new ItemsSketch<>(size);
            refused = new ItemsSketch<>(size);
            wouldReject = new ItemsSketch<>(size);
        }

        void reset(long newIndex) {
            index = newIndex;
            offered.reset();
            refused.reset();
            wouldReject.reset();
            offeredTotal = 0;
            refusedTotal = 0;
            wouldRejectTotal = 0;
        }
    }

    private final Options options;
    private final Ticker ticker;
    /** The first slice counted whole: the one after creation, or the creation's own when created on a boundary. */
    private final long firstWhole;
    private final Slice[] ring;

    /**
     * Creates empty statistics.
     *
     * @param options settings (when not {@link Options#enabled()}, {@link #record} does nothing)
     * @param ticker  monotonic clock, ns
     */
    public DecisionStats(Options options, Ticker ticker) {
        this.options = options;
        this.ticker = ticker;
        long created = ticker.read();
        this.firstWhole = Math.floorDiv(created, SLICE_NS) + (Math.floorMod(created, SLICE_NS) == 0 ? 0 : 1);
        long maxWindow = options.windows().stream().mapToLong(Duration::toSeconds).max().orElseThrow();
        this.ring = new Slice[options.enabled() ? (int) maxWindow + 1 : 0];
        for (int i = 0; i < ring.length; i++) {
            ring[i] = new Slice(options.sketchSize());
        }
    }

    /** Returns the settings. */
    public Options options() {
        return options;
    }

    /**
     * Counts one decision: the hook the limiter calls at its decision point.
     *
     * @param ruleKey the matched entry ({@link dev.levee.quota.ResolvedQuota#ruleKey()}), an existing string
     * @param outcome what was decided
     */
    public void record(String ruleKey, Outcome outcome) {
        record(ruleKey, outcome, 1);
    }

    /**
     * Counts {@code count} decisions of one outcome at once: the slots of a request lease, counted as admitted when
     * they are granted (docs/decisions.md, "Request leases: the limiter side").
     *
     * @param ruleKey the matched entry, an existing string
     * @param outcome what was decided
     * @param count   how many, ≥ 1
     */
    public void record(String ruleKey, Outcome outcome, long count) {
        if (ring.length == 0) {
            return;
        }
        long index = Math.floorDiv(ticker.read(), SLICE_NS);
        synchronized (this) {
            Slice s = ring[(int) (index % ring.length)];
            if (s.index != index) {
                if (s.index > index) {
                    return; // a thread that read the clock before a rotation: its second is gone
                }
                s.reset(index);
            }
            s.offered.update(ruleKey, count);
            s.offeredTotal += count;
            if (outcome == Outcome.REFUSED) {
                s.refused.update(ruleKey, count);
                s.refusedTotal += count;
            } else if (outcome == Outcome.WOULD_REJECT) {
                s.wouldReject.update(ruleKey, count);
                s.wouldRejectTotal += count;
            }
        }
    }

    /**
     * One listed entry of a window.
     *
     * @param resource    the bucket
     * @param level       the matched level ({@link QuotaLevel#label()})
     * @param prefix      the matched prefix entry as configured, or null
     * @param operation   the configured operation of a method entry, or null
     * @param offered     checks decided (lower bound; the true count is at most {@code maxError} more)
     * @param admitted    {@code offered - refused} (within {@code maxError} of the true count)
     * @param refused     checks refused (lower bound, as {@code offered})
     * @param wouldReject checks a shadow entry would have refused, all admitted (lower bound)
     * @param maxError    the sketches' error bound for this window: 0 means exact
     */
    public record Row(String resource, String level, String prefix, String operation, long offered, long admitted,
                      long refused, long wouldReject, long maxError) {
    }

    /**
     * One window's figures.
     *
     * @param seconds        the window's length
     * @param coveredSeconds whole seconds of the window the limiter has run (rates divide by it)
     * @param offered        all checks in the window (exact)
     * @param refused        all refusals in the window (exact)
     * @param wouldReject    all would-reject decisions in the window (exact)
     * @param rows           the top entries by offered, then those of the top by refused not listed yet
     * @param endSecond      the second of the ticker (monotonic clock, {@code floor(t / 1 s)}) the window ends
     *                       before: it covers {@code [endSecond - coveredSeconds, endSecond)}; limiters on one
     *                       host share the clock
     */
    public record Window(long seconds, long coveredSeconds, long offered, long refused, long wouldReject,
                         List<Row> rows, long endSecond) {
    }

    /**
     * Returns the figures of every window, from the whole slices before now. Not on the hot path: merges
     * up to {@code max(W)} sketches per window.
     */
    public List<Window> snapshot() {
        if (ring.length == 0) {
            return List.of();
        }
        long current = Math.floorDiv(ticker.read(), SLICE_NS);
        List<Window> out = new ArrayList<>();
        synchronized (this) {
            for (Duration w : options.windows()) {
                out.add(window(w.toSeconds(), current, null));
            }
        }
        return out;
    }

    /** Merges one window; adds the rule keys of its rows, in their order, to {@code keysOut} when given. */
    private Window window(long seconds, long current, List<String> keysOut) {
        long from = Math.max(current - seconds, firstWhole);
        long covered = Math.max(0, current - from);
        int mergeSize = Math.min(1 << 20, options.sketchSize() * 4);
        ItemsSketch<String> offered = new ItemsSketch<>(mergeSize);
        ItemsSketch<String> refused = new ItemsSketch<>(mergeSize);
        ItemsSketch<String> wouldReject = new ItemsSketch<>(mergeSize);
        long offeredTotal = 0;
        long refusedTotal = 0;
        long wouldRejectTotal = 0;
        for (Slice s : ring) {
            if (s.index >= from && s.index < current) {
                offered.merge(s.offered);
                refused.merge(s.refused);
                wouldReject.merge(s.wouldReject);
                offeredTotal += s.offeredTotal;
                refusedTotal += s.refusedTotal;
                wouldRejectTotal += s.wouldRejectTotal;
            }
        }
        long error = Math.max(offered.getMaximumError(), Math.max(refused.getMaximumError(),
                wouldReject.getMaximumError()));
        Set<String> keys = new LinkedHashSet<>();
        keys.addAll(top(offered));
        keys.addAll(top(refused));
        keys.addAll(top(wouldReject));
        if (keysOut != null) {
            keysOut.addAll(keys);
        }
        List<Row> rows = new ArrayList<>(keys.size());
        for (String k : keys) {
            long o = offered.getLowerBound(k);
            long r = refused.getLowerBound(k);
            long x = wouldReject.getLowerBound(k);
            Entry e = Entry.parse(k);
            rows.add(new Row(e.resource(), e.level().label(), e.prefix(), e.operation(), o, Math.max(0, o - r), r, x,
                    error));
        }
        return new Window(seconds, covered, offeredTotal, refusedTotal, wouldRejectTotal, rows, current);
    }

    /**
     * One listed entry's counts per second, oldest first (issue 26 item 3: the live page's plots at load).
     *
     * @param offered     checks decided in each second (lower bounds, as {@link Row#offered()})
     * @param refused     refusals in each second
     * @param wouldReject would-reject decisions in each second
     */
    public record Series(String resource, String level, String prefix, String operation, long[] offered,
                         long[] refused, long[] wouldReject) {
    }

    /**
     * The per-second history of the longest window.
     *
     * @param endSecond the ticker second the history ends before, as {@link Window#endSecond()}
     * @param seconds   how many whole seconds it covers (the longest window's {@code coveredSeconds}); each
     *                  series has this many values, the last for second {@code endSecond - 1}
     * @param windows   the windows' lengths in seconds, shortest first (the page averages over the shortest)
     * @param rows      the entries of the longest window's rows
     */
    public record History(long endSecond, long seconds, List<Long> windows, List<Series> rows) {
    }

    /**
     * Returns, for each entry the longest window lists, its counts in each whole second of that window. Not on
     * the hot path: one merge of the window plus a look-up per entry and second.
     */
    public History history() {
        List<Long> lengths = options.windows().stream().map(Duration::toSeconds).sorted().toList();
        if (ring.length == 0) {
            return new History(0, 0, lengths, List.of());
        }
        long longest = lengths.get(lengths.size() - 1);
        long current = Math.floorDiv(ticker.read(), SLICE_NS);
        synchronized (this) {
            List<String> keys = new ArrayList<>();
            Window w = window(longest, current, keys);
            int n = (int) w.coveredSeconds();
            long from = current - n;
            List<Series> rows = new ArrayList<>(w.rows().size());
            for (int k = 0; k < keys.size(); k++) {
                String key = keys.get(k);
                Row r = w.rows().get(k);
                long[] offered = new long[n];
                long[] refused = new long[n];
                long[] wouldReject = new long[n];
                for (Slice s : ring) {
                    if (s.index >= from && s.index < current) {
                        int i = (int) (s.index - from);
                        offered[i] = s.offered.getLowerBound(key);
                        refused[i] = s.refused.getLowerBound(key);
                        wouldReject[i] = s.wouldReject.getLowerBound(key);
                    }
                }
                rows.add(new Series(r.resource(), r.level(), r.prefix(), r.operation(), offered, refused, wouldReject));
            }
            return new History(current, n, lengths, rows);
        }
    }

    private List<String> top(ItemsSketch<String> sketch) {
        ItemsSketch.Row<String>[] items = sketch.getFrequentItems(0, ErrorType.NO_FALSE_NEGATIVES);
        return Arrays.stream(items).sorted(Comparator.comparingLong((ItemsSketch.Row<String> r) -> -r.getEstimate())
                        .thenComparing(ItemsSketch.Row::getItem))
                .limit(options.top()).map(ItemsSketch.Row::getItem).toList();
    }

    /**
     * The quota entry a rule key names (the limit-key forms of docs/design.md §6 without a wildcard entry's
     * object key): {@code default:R}, {@code methods_default:R#Op}, {@code resource:R},
     * {@code prefix:R/p} and {@code prefix:R/p#Op} (a method entry when the suffix names an S3 operation).
     */
    record Entry(String resource, QuotaLevel level, String prefix, String operation) {
        static Entry parse(String k) {
            if (k.startsWith("default:")) {
                return new Entry(k.substring(8), QuotaLevel.DEFAULT, null, null);
            }
            if (k.startsWith("resource:")) {
                return new Entry(k.substring(9), QuotaLevel.RESOURCE, null, null);
            }
            if (k.startsWith("methods_default:")) {
                int h = k.lastIndexOf('#');
                return h < 16 ? new Entry(k.substring(16), QuotaLevel.METHODS_DEFAULT, null, null)
                        : new Entry(k.substring(16, h), QuotaLevel.METHODS_DEFAULT, null, k.substring(h + 1));
            }
            if (k.startsWith("prefix:")) {
                int slash = k.indexOf('/', 7);
                if (slash > 0) {
                    String resource = k.substring(7, slash);
                    String rest = k.substring(slash + 1);
                    int h = rest.lastIndexOf('#');
                    if (h >= 0 && isOperation(rest.substring(h + 1))) {
                        return new Entry(resource, QuotaLevel.PREFIX_METHOD, rest.substring(0, h), rest.substring(h + 1));
                    }
                    return new Entry(resource, QuotaLevel.PREFIX, rest, null);
                }
            }
            return new Entry(k, QuotaLevel.DEFAULT, null, null); // not a rule key: shown as it is
        }

        private static boolean isOperation(String s) {
            for (dev.levee.s3.S3Operation op : dev.levee.s3.S3Operation.values()) {
                if (op.name().equals(s)) {
                    return true;
                }
            }
            return false;
        }
    }

    /**
     * Returns an upper bound of the memory the sketches can hold, in bytes, by construction: per slot 14
     * bytes (reference, long, short) plus a held rule-key string of {@code keyBytes} (object header,
     * fields and characters) for three quarters of the slots, for every sketch of the ring.
     *
     * @param keyBytes the retained size of one rule-key string
     */
    public long boundBytes(long keyBytes) {
        long perSketch = options.sketchSize() * 14L + options.sketchSize() * 3L / 4 * keyBytes + 256;
        return ring.length * 3L * perSketch;
    }

    /** Returns the sum of the current map capacities of every sketch (for tests of the bound). */
    public synchronized long mapCapacity() {
        long c = 0;
        for (Slice s : ring) {
            c += s.offered.getCurrentMapCapacity() + s.refused.getCurrentMapCapacity()
                    + s.wouldReject.getCurrentMapCapacity();
        }
        return c;
    }

    /** Returns how many sketches the ring holds. */
    public int sketches() {
        return ring.length * 3;
    }
}
