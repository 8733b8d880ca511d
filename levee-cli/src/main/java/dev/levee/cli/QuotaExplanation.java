package dev.levee.cli;

import dev.levee.client.LeveeClient;
import dev.levee.core.GcraLimit;
import dev.levee.core.Rendezvous;
import dev.levee.quota.PrefixRule;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaLevel;
import dev.levee.quota.ResolvedQuota;
import dev.levee.quota.ResourceQuotas;
import dev.levee.s3.S3Classification;
import dev.levee.s3.S3Operation;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The answer of {@code levee quota explain} ({@link QuotaExplainCommand}), computed once with the services'
 * own code and printed as text (80 columns) or JSON.
 *
 * @param g         the group size the client sends: {@code min(DF, active)}, or DF when the membership is unknown
 * @param group     the top {@code g} limiters by HRW; null when the membership is unknown
 * @param spillOver the next {@code g} by HRW rank, asked when the whole group failed
 * @param leaseThreshold the clients' {@code --lease-threshold}, requests per second, to say when the key is leased
 */
record QuotaExplanation(QuotaExplainCommand.Input in, S3Classification c, QuotaConfig cfg, String quotaSource,
                        QuotaExplainCommand.Membership membership, int factor, ResolvedQuota rq, String entry, int g,
                        GcraLimit limit, List<LeveeClient.Member> group, List<LeveeClient.Member> spillOver,
                        double leaseThreshold) {

    static QuotaExplanation of(QuotaExplainCommand.Input in, S3Classification c, QuotaConfig cfg, String quotaSource,
                                QuotaExplainCommand.Membership membership) {
        return of(in, c, cfg, quotaSource, membership, dev.levee.client.RequestLeases.Settings.DEFAULT_THRESHOLD);
    }

    static QuotaExplanation of(QuotaExplainCommand.Input in, S3Classification c, QuotaConfig cfg, String quotaSource,
                                QuotaExplainCommand.Membership membership, double leaseThreshold) {
        ResolvedQuota rq = cfg.resolve(c.resource(), c.key(), c.operation());
        int factor = membership != null && membership.factor() != null ? membership.factor() : cfg.factor();
        List<LeveeClient.Member> group = null;
        List<LeveeClient.Member> spill = null;
        int g = factor;
        if (membership != null) {
            g = Rendezvous.groupSize(factor, membership.members().size());
            List<LeveeClient.Member> ranked = Rendezvous.top(membership.members(), LeveeClient.Member::id,
                    c.resource(), 2 * g);
            group = ranked.subList(0, Math.min(g, ranked.size()));
            spill = ranked.subList(Math.min(g, ranked.size()), ranked.size());
        }
        GcraLimit limit = g < 1 ? null : GcraLimit.of(rq.quota().rate(), rq.quota().burst(), g);
        return new QuotaExplanation(in, c, cfg, quotaSource, membership, factor, rq, entry(cfg, c, rq), g, limit, group,
                spill, leaseThreshold);
    }

    /**
     * Whether the request's enforced counter may be leased to a client (issue 23 item 2; docs/quotas.md, "Request
     * leases"), judged as levee-client judges it ({@link dev.levee.client.RequestLeases#resolve}: the enforced quota,
     * {@link QuotaConfig#leaseEligible}).
     *
     * @param eligible whether the counter may be leased
     * @param why      which setting says so
     * @param setting  the path of that setting in the quota file's form, or null for none (the default)
     */
    record Lease(boolean eligible, String why, String setting) {
    }

    Lease lease() {
        ResolvedQuota enforced = cfg.resolveEnforced(c.resource(), c.key(), c.operation());
        if (enforced == null) {
            return new Lease(false, "only shadow quotas apply, nothing to lease", null);
        }
        String at = entry(cfg, c, enforced);
        if (enforced.quota().lease() != null) {
            // the entry is on the matched or enforced line above: named, not repeated (80 columns)
            return new Lease(enforced.quota().lease(), "lease: " + enforced.quota().lease() + " on the "
                    + (at.equals(entry) ? "matched" : "enforced") + " quota", at);
        }
        return new Lease(cfg.defaultLease(), cfg.defaultLease() ? "no lease setting, the default (true)"
                : "top-level lease: false", cfg.defaultLease() ? null : "lease");
    }

    /**
     * Returns why a limiter would never lease the enforced key at this group size (docs/design.md §12), or null; null
     * too when no limiter is active (the group size, and so {@code τ + T}, is not known).
     */
    String neverLeased() {
        ResolvedQuota enforced = cfg.resolveEnforced(c.resource(), c.key(), c.operation());
        if (enforced == null || limit == null) {
            return null;
        }
        return dev.levee.lease.RequestLeaseRules.DEFAULTS.neverLeased(enforced.limit(g), enforced.quota().burst());
    }

    /**
     * Returns the rate at a levee client above which the enforced key is leased, requests/s: the larger of
     * {@code --lease-threshold} and {@code LeaseSizer.lastingRate} (docs/design.md §12, "Slots that last"), or the
     * threshold alone when the group size is not known or the key is blocked.
     */
    double leasedAbove() {
        ResolvedQuota enforced = cfg.resolveEnforced(c.resource(), c.key(), c.operation());
        if (enforced == null || limit == null || enforced.limit(g).blocked()) {
            return leaseThreshold;
        }
        return Math.max(leaseThreshold, dev.levee.lease.LeaseSizer.DEFAULTS.lastingRate(g, enforced.limit(g)));
    }

    /**
     * Returns whether NGINX may admit this bucket's requests from batches of the key's leased slots (docs/design.md
     * §12, "Batches in NGINX"): null when it may, else why not.
     */
    String noBatches() {
        ResolvedQuota enforced = cfg.resolveEnforced(c.resource(), c.key(), c.operation());
        ResolvedQuota whole = cfg.wholeResource(c.resource());
        if (whole != null && enforced != null && whole.limitKey().equals(enforced.limitKey())) {
            return null;
        }
        ResourceQuotas configured = cfg.resources().get(c.resource());
        if (configured != null && !configured.prefixes().isEmpty()) {
            return "the bucket has prefix entries (NGINX tells requests apart by bucket only)";
        }
        if (configured == null && !cfg.methodsDefault().isEmpty()) {
            return "methods_default counts each operation apart (NGINX tells requests apart by bucket only)";
        }
        return "the bucket's requests are not all counted on this enforced key";
    }

    /** Names the configured entry that matched, as the quota file writes it. */
    static String entry(QuotaConfig cfg, S3Classification c, ResolvedQuota rq) {
        String r = quoted(c.resource());
        return switch (rq.level()) {
            case DEFAULT -> "default";
            case METHODS_DEFAULT -> "methods_default." + rq.matchedOperation();
            case RESOURCE -> "resources." + r + ".quota";
            case PREFIX, PREFIX_METHOD -> {
                ResourceQuotas q = cfg.resources().get(c.resource());
                int index = -1;
                for (int i = 0; q != null && i < q.prefixes().size(); i++) {
                    PrefixRule p = q.prefixes().get(i);
                    if (p.prefix().equals(rq.matchedPrefix())) {
                        index = i;
                        break;
                    }
                }
                String at = "resources." + r + ".prefixes[" + index + "] (prefix " + quoted(rq.matchedPrefix()) + ")";
                yield rq.level() == QuotaLevel.PREFIX ? at + ".quota" : at + ".methods." + rq.matchedOperation();
            }
        };
    }

    private static String quoted(String s) {
        return '"' + dev.levee.runtime.LogText.escape(s, 200).replace("\"", "") + '"';
    }

    /** Requests per second one limiter admits: the quota's rate divided by g (docs/design.md §5). */
    double ratePerLimiter() {
        return g < 1 ? 0 : rq.quota().rate() / g;
    }

    Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        if (in.request() != null) {
            Map<String, Object> req = new LinkedHashMap<>();
            req.put("method", in.request().method());
            req.put("host", in.request().host());
            req.put("path", in.request().path());
            req.put("query", in.request().query());
            req.put("copySource", in.request().hasCopySource());
            m.put("request", req);
        }
        Map<String, Object> cls = new LinkedHashMap<>();
        cls.put("resource", c.resource());
        cls.put("key", c.key());
        cls.put("operation", c.operation().name());
        m.put("classification", cls);
        m.put("quotas", quotaSource);
        m.put("factor", factor);
        Map<String, Object> match = new LinkedHashMap<>();
        match.put("level", rq.level().label());
        match.put("entry", entry);
        match.put("prefix", rq.matchedPrefix());
        match.put("operation", rq.matchedOperation() == null ? null : rq.matchedOperation().name());
        m.put("match", match);
        m.put("limitKey", rq.limitKey());
        Map<String, Object> quota = new LinkedHashMap<>();
        quota.put("rate", rq.quota().rate());
        quota.put("burst", rq.quota().burst());
        m.put("quota", quota);
        boolean shadow = cfg.isShadow(rq);
        m.put("mode", shadow ? "shadow" : "enforce");
        if (shadow) {
            ResolvedQuota enforced = cfg.resolveEnforced(c.resource(), c.key(), c.operation());
            Map<String, Object> enf = null;
            if (enforced != null) {
                enf = new LinkedHashMap<>();
                enf.put("level", enforced.level().label());
                enf.put("entry", entry(cfg, c, enforced));
                enf.put("limitKey", enforced.limitKey());
                enf.put("rate", enforced.quota().rate());
                enf.put("burst", enforced.quota().burst());
            }
            m.put("enforced", enf);
        }
        Lease lease = lease();
        Map<String, Object> leased = new LinkedHashMap<>();
        leased.put("eligible", lease.eligible());
        leased.put("why", lease.why());
        leased.put("setting", lease.setting());
        leased.put("threshold", leaseThreshold);
        leased.put("leasedAbove", leasedAbove());
        String never = lease.eligible() ? neverLeased() : null;
        leased.put("leased", lease.eligible() && never == null);
        leased.put("never", never);
        String noBatches = noBatches();
        leased.put("batches", lease.eligible() && never == null && noBatches == null);
        leased.put("noBatches", noBatches);
        m.put("lease", leased);
        m.put("g", g);
        Map<String, Object> per = new LinkedHashMap<>();
        per.put("rate", ratePerLimiter());
        per.put("burst", rq.quota().burst());
        if (limit != null) {
            per.put("capacity", limit.capacity());
            per.put("emissionIntervalNs", limit.blocked() ? null : limit.emissionIntervalNs());
            per.put("blocked", limit.blocked());
        }
        m.put("perLimiter", per);
        if (membership != null) {
            Map<String, Object> grp = new LinkedHashMap<>();
            grp.put("membership", membership.source());
            grp.put("active", membership.members().size());
            grp.put("limiters", members(group));
            grp.put("spillOver", members(spillOver));
            if (membership.note() != null) {
                grp.put("note", membership.note());
            }
            m.put("group", grp);
        } else {
            m.put("group", null);
        }
        return m;
    }

    private static List<Map<String, Object>> members(List<LeveeClient.Member> list) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (LeveeClient.Member x : list) {
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("id", x.id());
            e.put("address", x.address());
            out.add(e);
        }
        return out;
    }

    void print(PrintStream out) {
        if (in.request() != null) {
            out.printf("request     %s%n", printable(in.shown()));
        }
        out.printf("classified  resource=%s key=%s operation=%s%n", dev.levee.runtime.LogText.escape(c.resource()),
                dev.levee.runtime.LogText.escape(c.key()), c.operation());
        if (c.operation() == S3Operation.Unknown) {
            out.println("            (no S3 operation: only quotas that do not name an operation apply)");
        }
        out.printf("quotas      %s (factor %d)%n", quotaSource, cfg.factor());
        out.printf("matched     %s: %s%n", rq.level().label(), entry);
        if (c.operation() == S3Operation.ListObjectsV2 && rq.matchedOperation() == S3Operation.ListObjects) {
            out.println("            (ListObjectsV2 counted with the ListObjects quota of that level)");
        }
        out.printf("limit key   %s%n", dev.levee.runtime.LogText.escape(rq.limitKey()));
        out.printf(Locale.ROOT, "quota       rate %s/s for the group, burst %d per limiter%n", num(rq.quota().rate()),
                rq.quota().burst());
        if (cfg.isShadow(rq)) {
            ResolvedQuota enforced = cfg.resolveEnforced(c.resource(), c.key(), c.operation());
            out.println("mode        shadow: decided, logged and counted (would_reject), never refuses");
            out.printf("shadow key  %s%n", dev.levee.runtime.LogText.escape("shadow:" + rq.limitKey()));
            if (enforced == null) {
                out.println("enforced    nothing: only shadow quotas apply, every request is admitted");
            } else {
                out.printf(Locale.ROOT, "enforced    %s: %s, key %s, rate %s/s, burst %d%n",
                        enforced.level().label(), entry(cfg, c, enforced),
                        dev.levee.runtime.LogText.escape(enforced.limitKey()), num(enforced.quota().rate()),
                        enforced.quota().burst());
            }
        }
        Lease lease = lease();
        out.printf("lease       %s: %s%n", lease.eligible() ? "eligible" : "never", lease.why());
        if (lease.eligible()) {
            String never = neverLeased();
            if (never != null) {
                out.printf(Locale.ROOT, "            never leased: %s%n", never);
            } else {
                double above = leasedAbove();
                if (above > leaseThreshold) {
                    out.printf(Locale.ROOT, "            leased when hot: above %.1f req/s at a levee client%n", above);
                    out.println("            (slower, a lease's slots would end unused: g / (T + τ/4))");
                } else {
                    out.printf(Locale.ROOT, "            leased when hot: above %s req/s at a levee client%n",
                            num(leaseThreshold));
                }
                String noBatches = noBatches();
                out.printf("            %s%n", noBatches == null ? "NGINX batches: yes, the whole bucket"
                        : "NGINX batches: no, " + noBatches);
            }
        }
        if (limit == null) {
            out.println("per limiter none: no active limiter (every check answers failed, passed by the failure policy)");
        } else if (limit.blocked()) {
            out.printf("per limiter g=%d: rate 0 blocks every request%n", g);
        } else {
            out.printf(Locale.ROOT, "per limiter g=%d: rate %s/s, burst %d (GCRA: T = %d ns, capacity %d)%n", g,
                    num(ratePerLimiter()), rq.quota().burst(), limit.emissionIntervalNs(), limit.capacity());
        }
        if (membership == null) {
            out.printf("group       g = DF = %d assumed; membership not given (--limiters, --observer or --etcd)%n", g);
            return;
        }
        out.printf("group       g = min(DF %d, %d active) = %d, by HRW over %s:%n", factor,
                membership.members().size(), g, membership.source());
        int rank = 1;
        for (LeveeClient.Member x : group) {
            out.printf("            %d. %s%s%n", rank++, x.id(), x.address() == null ? "" : "  " + x.address());
        }
        if (!spillOver.isEmpty()) {
            List<String> next = new ArrayList<>();
            spillOver.forEach(x -> next.add(x.id()));
            out.printf("spill-over  %s (asked when every group member failed)%n", String.join(", ", next));
        }
        if (membership.note() != null) {
            out.printf("note        %s%n", membership.note());
        }
    }

    /** Escapes control characters as log lines do, without quoting the whole text. */
    private static String printable(String s) {
        List<String> parts = new ArrayList<>();
        for (String part : s.split(" ")) {
            parts.add(part.isEmpty() ? "" : dev.levee.runtime.LogText.escape(part, 400));
        }
        return String.join(" ", parts);
    }

    private static String num(double d) {
        return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d)
                : new java.math.BigDecimal(d).round(new java.math.MathContext(6)).stripTrailingZeros().toPlainString();
    }
}
