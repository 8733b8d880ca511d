package dev.levee.quota;

import dev.levee.core.GcraLimit;
import dev.levee.s3.S3Operation;
import java.math.BigDecimal;
import java.math.MathContext;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Finds the quotas whose burst cannot hold their rate over a group of limiters, and words the advice the same way for
 * {@code levee quota calc}, {@code levee config validate} and {@code levee demo} (docs/decisions.md, "Bursts that hold
 * the rate"; issue 22 item 7, issue 26 item 2).
 *
 * <p>A burst holds the rate when it is at least {@link GcraLimit#minimumBurst}: its tolerance absorbs
 * {@link GcraLimit#ARRIVAL_SPREAD_NS} of bunched arrivals. A smaller burst is legal (docs/design.md §4: any integer ≥ 0) and
 * is never refused; it is reported. Pure: no I/O.
 */
public final class BurstAdvice {

    /** Where an operator reads why: the section of docs/quotas.md. */
    public static final String SEE = "docs/quotas.md, \"Bursts that hold the rate\"";

    private BurstAdvice() {
    }

    /**
     * One quota whose burst is below the minimum.
     *
     * @param path      where the quota is in the single-file form, e.g. {@code methods_default.ListObjects}
     * @param quota     the quota as configured
     * @param groupSize the group size {@code g} it was judged for
     * @param minimum   the smallest burst that holds its rate over {@code g} limiters
     */
    public record Finding(String path, Quota quota, int groupSize, int minimum) {

        /** Returns {@code path: } followed by {@link #sentence}. */
        public String message() {
            return path + ": " + sentence(quota.rate(), quota.burst(), groupSize);
        }
    }

    /**
     * The burst of docs/design.md §4's formula as {@code levee quota calc} prints it: {@code rate / DF × 0.1} rounded half up,
     * at least 1 (docs/decisions.md). Whenever it is 2 or more it holds the rate ({@link GcraLimit#ARRIVAL_SPREAD_NS}
     * is chosen so); 1 never does.
     *
     * @param rate   the quota's rate (already {@code RPS × 1.1}), requests per second, finite and ≥ 0
     * @param factor DF, ≥ 1
     * @return the burst, ≥ 1
     */
    public static long formulaBurst(double rate, int factor) {
        return Math.max(1, Math.round(rate / factor * 0.1));
    }

    /**
     * Returns whether a burst holds a rate over {@code g} limiters.
     *
     * @param rate  requests per second for the group, finite and ≥ 0 (0: nothing to hold, always true)
     * @param burst requests per limiter, ≥ 0
     * @param g     the group size, ≥ 1
     * @return {@code burst ≥ minimumBurst(rate, g)}
     * @throws IllegalArgumentException when an argument is out of range
     */
    public static boolean holds(double rate, int burst, int g) {
        return burst >= GcraLimit.minimumBurst(rate, g);
    }

    /**
     * Words the advice for a burst below the minimum (the same words everywhere), e.g. {@code burst 1 under-admits rate
     * 3.3/s over 4 limiters: tolerance (burst - 1) x T = 0 ms at T = 1212 ms absorbs less than 40 ms of bunched
     * arrivals; burst 2 holds it (docs/quotas.md, "Bursts that hold the rate")}.
     *
     * @param rate  requests per second for the group, &gt; 0
     * @param burst requests per limiter, ≥ 0
     * @param g     the group size, ≥ 1
     * @return one line, no trailing newline
     * @throws IllegalArgumentException when an argument is out of range
     */
    public static String sentence(double rate, int burst, int g) {
        GcraLimit limit = GcraLimit.of(rate, burst, g);
        return String.format(Locale.ROOT,
                "burst %d under-admits rate %s/s over %d limiter%s: tolerance (burst - 1) x T = %s at T = %s absorbs"
                        + " less than %s of bunched arrivals; burst %d holds it (%s)",
                burst, number(rate), g, g == 1 ? "" : "s", millis(limit.toleranceNs()),
                millis(limit.emissionIntervalNs()), millis(GcraLimit.ARRIVAL_SPREAD_NS),
                GcraLimit.minimumBurst(rate, g), SEE);
    }

    /**
     * Returns every quota of a configuration whose burst is below the minimum for the configuration's factor (the
     * group size when at least DF limiters are active), in document order.
     *
     * @param config a valid configuration
     * @return the findings; empty when every burst holds its rate
     */
    public static List<Finding> check(QuotaConfig config) {
        return check(config, config.factor());
    }

    /**
     * Returns every quota of a configuration whose burst is below the minimum for group size {@code g}, in document
     * order: {@code default}, {@code methods_default}, then each resource's quota, prefixes and their methods.
     *
     * @param config a valid configuration
     * @param g      the group size, ≥ 1
     * @return the findings; empty when every burst holds its rate
     * @throws IllegalArgumentException when {@code g < 1}
     */
    public static List<Finding> check(QuotaConfig config, int g) {
        if (g < 1) {
            throw new IllegalArgumentException("group size must be >= 1, got " + g);
        }
        List<Finding> out = new ArrayList<>();
        add(out, "default", config.defaultQuota(), g);
        methods(out, "methods_default", config.methodsDefault(), g);
        for (Map.Entry<String, ResourceQuotas> r : config.resources().entrySet()) {
            String at = ConfigPath.key("resources", r.getKey());
            add(out, ConfigPath.field(at, "quota"), r.getValue().quota(), g);
            List<PrefixRule> prefixes = r.getValue().prefixes();
            for (int i = 0; i < prefixes.size(); i++) {
                PrefixRule p = prefixes.get(i);
                String pat = ConfigPath.index(ConfigPath.field(at, "prefixes"), i) + " (prefix "
                        + ConfigPath.quote(p.prefix()) + ")";
                add(out, ConfigPath.field(pat, "quota"), p.quota(), g);
                methods(out, ConfigPath.field(pat, "methods"), p.methods(), g);
            }
        }
        return out;
    }

    private static void methods(List<Finding> out, String at, Map<S3Operation, Quota> methods, int g) {
        if (methods != null) {
            methods.forEach((op, q) -> add(out, ConfigPath.key(at, op.name()), q, g));
        }
    }

    private static void add(List<Finding> out, String path, Quota q, int g) {
        if (q != null && !holds(q.rate(), q.burst(), g)) {
            out.add(new Finding(path, q, g, GcraLimit.minimumBurst(q.rate(), g)));
        }
    }

    /** A rate as operators write it: up to 6 significant digits, no trailing zeros. */
    static String number(double v) {
        return new BigDecimal(v).round(new MathContext(6)).stripTrailingZeros().toPlainString();
    }

    /** Nanoseconds as milliseconds, to 3 significant digits at most: {@code 0 ms}, {@code 1212 ms}, {@code 0.2 ms}. */
    static String millis(long ns) {
        double ms = ns / 1e6;
        String s = ms >= 100 ? Long.toString(Math.round(ms)) : number(new BigDecimal(ms).round(new MathContext(3)).doubleValue());
        return s + " ms";
    }
}
