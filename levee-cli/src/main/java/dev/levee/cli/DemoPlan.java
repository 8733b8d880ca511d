package dev.levee.cli;

import dev.levee.core.GcraLimit;
import dev.levee.lease.MaxMinFair;
import dev.levee.quota.PrefixRule;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaLevel;
import dev.levee.quota.ResourceQuotas;
import dev.levee.s3.S3Operation;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@code levee demo} offers when a quota file's rates are above what the machine can drive (issue 26 item 1):
 * {@code --max-rate} is divided among the streams max-min fairly (a stream that wants less than an equal part keeps
 * its own rate, the others share the rest equally), and a stream that gets less than it wants is driven against a
 * <em>scaled copy</em> of its quota, so that it is still offered {@code --load-factor} × the quota it meets and the
 * demo shows that quota held at its own rate. Pure: no I/O, no clock.
 *
 * <p>A scaled copy keeps the quota's shape in time: rate × s, and a burst whose tolerance {@code (burst - 1) × T} is
 * the original's, {@code 1 + round((burst - 1) × s)}, never below {@link GcraLimit#minimumBurst} (a copy too small to
 * hold its rate would under-admit where the original does not). A quota whose own burst cannot hold its rate keeps
 * that burst, so the copy under-admits as the original does (docs/decisions.md, "Bursts that hold the rate").
 */
final class DemoPlan {

    private DemoPlan() {
    }

    /** Where a stream's quota is in the configuration, to put its scaled copy there. */
    record Entry(QuotaLevel level, String bucket, int prefix, S3Operation op) {
    }

    /**
     * A quota's scaled copy.
     *
     * @param q     the quota as configured, rate &gt; 0
     * @param rate  the copy's rate, &gt; 0
     * @param g     the group size the demo runs with, ≥ 1
     * @return the copy (same mode)
     */
    static Quota scaled(Quota q, double rate, int g) {
        double s = rate / q.rate();
        int burst;
        if (q.burst() < GcraLimit.minimumBurst(q.rate(), g)) {
            burst = q.burst();
        } else {
            long kept = 1 + Math.round((q.burst() - 1) * s);
            burst = (int) Math.min(q.burst(), Math.max(GcraLimit.minimumBurst(rate, g), kept));
        }
        return new Quota(rate, burst, q.mode(), q.lease());
    }

    /**
     * Fits the streams under {@code maxRate}: each keeps its offered rate when the max-min fair division allows it, and
     * is otherwise driven against a scaled copy of its quota, offered {@code loadFactor} × that copy.
     *
     * @param streams    the streams as derived from the configuration (driven against their own quotas)
     * @param maxRate    the total offered rate, requests per second, &gt; 0
     * @param loadFactor the offered rate as a multiple of the quota driven against, &gt; 0
     * @param g          the group size the demo runs with, ≥ 1
     * @return the streams to drive, in the same order
     */
    static List<DemoCommand.Stream> fit(List<DemoCommand.Stream> streams, double maxRate, double loadFactor, int g) {
        double[] wants = streams.stream().mapToDouble(DemoCommand.Stream::offered).toArray();
        double[] parts = MaxMinFair.fairShares(wants, maxRate);
        List<DemoCommand.Stream> out = new ArrayList<>();
        for (int i = 0; i < streams.size(); i++) {
            DemoCommand.Stream s = streams.get(i);
            if (parts[i] >= wants[i] * (1 - 1e-9)) {
                out.add(s);
                continue;
            }
            // the copy's rate to one decimal (what the header prints is what the limiters use), at least 0.1/s
            double rate = Math.max(0.1, Math.floor(parts[i] / loadFactor / s.counters() * 10) / 10);
            Quota copy = scaled(s.quota(), rate, g);
            out.add(new DemoCommand.Stream(s.label(), s.bucket(), s.keys(), s.op(), s.quota(), s.counters(),
                    rate * s.counters() * loadFactor, s.entry(), copy));
        }
        return out;
    }

    /**
     * The configuration the demo's limiters enforce: {@code cfg} with every scaled stream's quota replaced by its copy.
     *
     * @param cfg     the configuration as loaded
     * @param streams the streams to drive ({@link #fit})
     * @return {@code cfg} itself when no stream is scaled
     */
    static QuotaConfig driven(QuotaConfig cfg, List<DemoCommand.Stream> streams) {
        if (streams.stream().noneMatch(DemoCommand.Stream::isScaled)) {
            return cfg;
        }
        QuotaConfig.Builder b = cfg.toBuilder();
        Map<String, ResourceQuotas> resources = new LinkedHashMap<>(cfg.resources());
        for (DemoCommand.Stream s : streams) {
            if (!s.isScaled()) {
                continue;
            }
            Entry e = s.entry();
            Quota copy = s.driven();
            switch (e.level()) {
                case DEFAULT -> b.defaultQuota(copy);
                case METHODS_DEFAULT -> b.methodDefault(e.op(), copy);
                case RESOURCE -> {
                    ResourceQuotas rq = resources.get(e.bucket());
                    resources.put(e.bucket(), new ResourceQuotas(copy, rq.prefixes()));
                }
                case PREFIX, PREFIX_METHOD -> {
                    ResourceQuotas rq = resources.get(e.bucket());
                    List<PrefixRule> prefixes = new ArrayList<>(rq.prefixes());
                    PrefixRule p = prefixes.get(e.prefix());
                    if (e.level() == QuotaLevel.PREFIX) {
                        prefixes.set(e.prefix(), new PrefixRule(p.prefix(), copy, p.methods()));
                    } else {
                        Map<S3Operation, Quota> methods = new LinkedHashMap<>(p.methods());
                        methods.put(e.op(), copy);
                        prefixes.set(e.prefix(), new PrefixRule(p.prefix(), p.quota(), methods));
                    }
                    resources.put(e.bucket(), new ResourceQuotas(rq.quota(), prefixes));
                }
                default -> throw new IllegalStateException("no entry for level " + e.level());
            }
        }
        return b.resources(resources).build();
    }
}
