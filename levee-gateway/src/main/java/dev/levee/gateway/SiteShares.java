package dev.levee.gateway;

import dev.levee.core.Ticker;
import dev.levee.etcd.Etcd;
import dev.levee.etcd.EtcdShareStore;
import dev.levee.governor.BandwidthGovernor;
import dev.levee.governor.Direction;
import dev.levee.governor.GovernorConfig;
import dev.levee.lease.DemandEstimator;
import dev.levee.lease.LeaseLog;
import dev.levee.lease.Resource;
import dev.levee.lease.ShareKeeper;
import dev.levee.lease.ShareStore;
import dev.levee.lease.SiteBudget;
import dev.levee.lease.SiteLease;
import io.etcd.jetcd.Client;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Connects a gateway's governors to its {@link ShareKeeper} (docs/design.md §10): estimates demand from
 * the governors' usage, and turns shares into governor rates.
 *
 * <h2>Rates</h2>
 * For a direction with a site budget, the shared bucket's rate is the gateway's share, capped by
 * {@code --download-rate}/{@code --upload-rate} when set; with no share yet it is {@link
 * GovernorConfig#HELD} (requests wait). For a principal with a site ceiling, its bucket's rate is
 * its share, capped by its local rate; held without a share. Directions and principals without a
 * site budget keep their local rates.
 *
 * <h2>Demand</h2>
 * One {@link DemandEstimator} per resource, fed each round with the governor's cumulative counters
 * (bytes granted, bytes granted after a wait, requests waiting now): what the clients take when the
 * share is not the bottleneck, with hysteresis (docs/site-bandwidth.md "Demand"). A direction that
 * probes while part of its budget lies unclaimed asks for all of that part at once. A direction's
 * evidence of waiting leaves out principals held back by their own bucket (a site ceiling or a
 * local rate): they wait for that bucket, not for the direction's share.
 *
 * <h2>One value</h2>
 * The rates, the governors' ownership check ({@link #owned}) and the gateway's fail-closed state
 * (its 503s, {@code /health/ready}, the failing-closed WARN) all read the keeper's one published
 * {@link SiteLease}: rates from the value handed to {@link #apply}, the others from {@link
 * ShareKeeper#lease()} and {@link ShareKeeper#status()}, which read it whole.
 */
final class SiteShares implements ShareKeeper.DemandSource, ShareKeeper.ShareListener, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(SiteShares.class);

    private final GovernanceSettings settings;
    private final ScheduledExecutorService loop;
    private final Client client;
    private final ShareKeeper keeper;
    private final Ticker ticker;
    /** The principals that may open streams: the accounts and the anonymous principal. */
    private final java.util.Set<String> principals;
    private final Map<Direction, BandwidthGovernor> governors = new EnumMap<>(Direction.class);
    private long previousAt;
    /** The demand estimate of each resource this gateway serves (loop thread only). */
    private final Map<Resource, DemandEstimator> estimators = new HashMap<>();
    /** Each principal's cumulative {granted, waited} at the previous round, by resource (loop thread only). */
    private final Map<Resource, long[]> counts = new HashMap<>();
    /** Per direction, cumulative bytes granted after a wait for the direction's share (loop thread only). */
    private final Map<Direction, long[]> directionWaited = new EnumMap<>(Direction.class);

    SiteShares(GovernanceSettings settings, Ticker ticker) {
        this(settings, ticker, null);
    }

    SiteShares(GovernanceSettings settings, Ticker ticker, ShareStore store) {
        this.settings = settings;
        this.ticker = ticker;
        java.util.Set<String> ids = new java.util.HashSet<>();
        settings.principals().accounts().forEach(a -> ids.add(a.id()));
        ids.add(settings.anonymousPrincipal());
        this.principals = java.util.Set.copyOf(ids);
        SiteSettings site = settings.site();
        this.loop = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "levee-site-leases");
            t.setDaemon(true);
            return t;
        });
        this.client = store == null ? Etcd.client(site.etcdEndpoints(), site.maxMessageBytes()) : null;
        ShareStore s = store != null ? store : new EtcdShareStore(client, site.prefix());
        this.keeper = new ShareKeeper(site.keeper(), s, ticker, new ShareKeeper.Loop() {
            @Override
            public void execute(Runnable task) {
                if (!loop.isShutdown()) {
                    loop.execute(task);
                }
            }

            @Override
            public void schedule(Runnable task, long delayNanos) {
                if (!loop.isShutdown()) {
                    loop.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
                }
            }
        }, this, this, new Slf4jLeaseLog(LoggerFactory.getLogger(ShareKeeper.class)));
        this.previousAt = ticker.read();
    }

    ShareKeeper keeper() {
        return keeper;
    }

    /** Whether the governors of {@code d} may grant now (fencing). */
    boolean owned(Direction d) {
        return keeper.owned(d);
    }

    /** Gives the governors and runs the first round. */
    void start(Map<Direction, BandwidthGovernor> governors) {
        this.governors.putAll(governors);
        keeper.start();
    }

    /** A stream opened: when its direction or principal holds no share yet, ask for a round now. */
    void opened(Direction d, String principal) {
        SiteLease l = keeper.lease();
        SiteBudget b = l.budget();
        if (b == null) {
            return;
        }
        if ((b.budget(d) > 0 && l.share(Resource.of(d)) == 0)
                || (b.ceiling(d, principal) > 0 && l.share(Resource.of(d, principal)) == 0)) {
            keeper.requestRound();
        }
    }

    @Override
    public Map<Resource, Long> demands(SiteBudget budget, Map<Resource, Long> shares, int gateways, long now) {
        return demands(budget, shares, Map.of(), gateways, now);
    }

    @Override
    public Map<Resource, Long> demands(SiteBudget budget, Map<Resource, Long> shares, Map<Resource, Long> free,
                                       int gateways, long now) {
        long since = previousAt;
        previousAt = now;
        Map<Resource, Long> out = new HashMap<>();
        for (Direction d : Direction.values()) {
            BandwidthGovernor g = governors.get(d);
            if (g == null) {
                continue;
            }
            long[] total = new long[3]; // granted (cumulative), waited this round, waiting now
            long directionBudget = budget.budget(d);
            GovernorConfig config = g.config();
            long dt = Math.max(1, now - since);
            g.usage((id, granted, waited, waitingNow) -> {
                long ceiling = budget.ceiling(d, id);
                Resource r = Resource.of(d, id);
                long share = shares.getOrDefault(r, 0L);
                long[] before = counts.get(r); // null: it appeared since the previous round, its counters from 0
                counts.put(r, new long[] {granted, waited});
                long dg = granted - (before == null ? 0 : before[0]);
                long dw = waited - (before == null ? 0 : before[1]);
                // a principal held back by its own bucket (its site share or local rate: held, or used to 90 %) waits
                // for that bucket, not for the direction's share: its waits say nothing of the direction's demand
                long own = config.principalRate(id);
                boolean ownBound = own == GovernorConfig.HELD || (own > 0 && dg * 1e9 / dt >= own * 0.9);
                total[0] += granted;
                total[1] += ownBound ? 0 : Math.max(0, dw);
                total[2] += ownBound ? 0 : waitingNow;
                if (ceiling > 0 && (estimators.containsKey(r) || dg > 0 || waitingNow > 0 || share > 0)) {
                    DemandEstimator e = estimators.computeIfAbsent(r, k -> before == null
                            ? new DemandEstimator(since, 0, 0) : new DemandEstimator(since, before[0], before[1]));
                    out.put(r, e.update(now, granted, waited, waitingNow, share, ceiling, gateways));
                }
            });
            if (directionBudget > 0) {
                Resource r = Resource.of(d);
                long[] w = directionWaited.computeIfAbsent(d, k -> new long[1]);
                w[0] += total[1];
                DemandEstimator e = estimators.computeIfAbsent(r, k -> new DemandEstimator(since, total[0], w[0]));
                long share = shares.getOrDefault(r, 0L);
                long d1 = e.update(now, total[0], w[0], total[2], share, directionBudget, gateways);
                if (log.isDebugEnabled()) {
                    log.debug("site demand {}: {}", d.name().toLowerCase(Locale.ROOT), e.describe());
                }
                if (d1 > share && share > 0 && e.probing()) {
                    // limited while part of the budget lies unclaimed (a gateway gone): ask for all of it at once;
                    // max-min fairness splits it among those who ask
                    d1 = Math.min(directionBudget, Math.max(d1, share + free.getOrDefault(r, 0L)));
                }
                out.put(r, d1);
            }
        }
        // a principal idle (demand 0) or without a ceiling any more: its next appearance starts a new estimate
        estimators.keySet().removeIf(r -> !out.containsKey(r) || (r.perPrincipal() && out.get(r) == 0));
        return out;
    }

    @Override
    public void apply(SiteLease lease) {
        boolean owned;
        for (Direction d : Direction.values()) {
            BandwidthGovernor g = governors.get(d);
            if (g == null) {
                continue;
            }
            GovernorConfig next = config(settings.governorConfig(d), lease.budget(), lease.shares(), g,
                    keeper.status().gateways(), principals);
            owned = lease.owned(d, ticker.read());
            if (!next.equals(g.config())) {
                g.reconfigure(next);
            } else if (owned) {
                g.wake();
            }
        }
    }

    /**
     * The governor configuration for the local one, the budget and the shares.
     *
     * <p>Every principal that can open a stream here and has an override in the budget gets its own
     * rate in the configuration, whether or not it has been seen: a principal whose first stream
     * opens between two rounds takes its rate from this configuration, and without an entry it would
     * take the default principal rate — none, when the budget gives ceilings only as overrides — and
     * pass unbounded by its ceiling until the next change of shares (issue 22).
     *
     * @param principals the ids that may open streams (the accounts and the anonymous principal);
     *                   the governor's table holds no others
     */
    static GovernorConfig config(GovernorConfig local, SiteBudget budget, Map<Resource, Long> shares,
                                 BandwidthGovernor governor, int gateways, java.util.Set<String> principals) {
        Direction d = local.direction();
        GovernorConfig.Builder b = local.toBuilder();
        if (budget.budget(d) > 0) {
            b.rate(capped(local.rateBytesPerSecond(), shares.getOrDefault(Resource.of(d), 0L)));
            // the gateways' bursts together within 5 % of the budget: each at most budget / 20 / gateways
            long cap = budget.budget(d) / 20 / Math.max(1, gateways);
            b.sharedBurstCap(Math.max(1, Math.min(GovernorConfig.MAX_BURST_BYTES, cap)));
        }
        if (budget.principalCeilings(d)) {
            long defaultCeiling = d == Direction.DOWNLOAD ? budget.principalDownload() : budget.principalUpload();
            if (defaultCeiling > 0) {
                b.principalRate(GovernorConfig.HELD);
            }
            Map<String, Boolean> known = new HashMap<>();
            if (governor != null) {
                governor.usage((id, granted, waited, waitingNow) -> known.put(id, Boolean.TRUE));
            }
            local.principalRates().keySet().forEach(id -> known.put(id, Boolean.TRUE));
            for (String id : budget.principals().keySet()) {
                if (principals.contains(id)) {
                    known.put(id, Boolean.TRUE); // not seen yet: its first stream is held, not unbounded
                }
            }
            for (String id : known.keySet()) {
                long ceiling = budget.ceiling(d, id);
                long localRate = local.principalRate(id);
                if (ceiling > 0) {
                    b.principalRate(id, capped(localRate, shares.getOrDefault(Resource.of(d, id), 0L)));
                } else if (defaultCeiling > 0) {
                    b.principalRate(id, localRate); // explicitly no site ceiling: its local rate
                }
            }
        }
        return b.build();
    }

    private static long capped(long localRate, long share) {
        if (share <= 0) {
            return GovernorConfig.HELD;
        }
        long s = Math.max(GovernorConfig.MIN_RATE_BYTES_PER_SECOND, share);
        return localRate > 0 ? Math.min(localRate, s) : s;
    }

    /** Registers the site metrics (aggregated per direction; no principal ids). */
    void bind(io.micrometer.core.instrument.MeterRegistry registry) {
        for (Direction d : Direction.values()) {
            String dir = d.name().toLowerCase(Locale.ROOT);
            io.micrometer.core.instrument.Gauge.builder("levee_gateway_site_share_bytes_per_second",
                    keeper, k -> k.status().shares().get(d)).tag("direction", dir)
                    .description("this gateway's share of the site budget, bytes/s").register(registry);
            io.micrometer.core.instrument.Gauge.builder("levee_gateway_site_budget_bytes_per_second",
                    keeper, k -> k.status().budgets().get(d)).tag("direction", dir)
                    .description("the site budget in force, bytes/s; 0 = none").register(registry);
            io.micrometer.core.instrument.Gauge.builder("levee_gateway_site_demand_bytes_per_second",
                    keeper, k -> k.status().demands().get(d)).tag("direction", dir)
                    .description("the demand this gateway last reported, bytes/s").register(registry);
            io.micrometer.core.instrument.Gauge.builder("levee_gateway_site_failing_closed",
                    keeper, k -> k.status().failingClosed(d) ? 1 : 0).tag("direction", dir)
                    .description("1 while the shares are expired: new requests 503, transfers stall").register(registry);
        }
        io.micrometer.core.instrument.Gauge.builder("levee_gateway_site_valid_seconds", keeper,
                k -> Math.max(0, k.status().validForNanos()) / 1e9)
                .description("how long the shares stay usable without another renewal, s").register(registry);
        io.micrometer.core.instrument.Gauge.builder("levee_gateway_site_gateways", keeper, k -> k.status().gateways())
                .description("live gateways seen in etcd").register(registry);
        io.micrometer.core.instrument.FunctionCounter.builder("levee_gateway_site_renewals_total", keeper,
                k -> k.status().renewalsOk()).tag("result", "ok").register(registry);
        io.micrometer.core.instrument.FunctionCounter.builder("levee_gateway_site_renewals_total", keeper,
                k -> k.status().renewalsFailed()).tag("result", "failed").register(registry);
        io.micrometer.core.instrument.FunctionCounter.builder("levee_gateway_site_writes_total", keeper,
                k -> k.status().writes()).description("entries written to etcd").register(registry);
        io.micrometer.core.instrument.FunctionCounter.builder("levee_gateway_site_conflicts_total", keeper,
                k -> k.status().conflicts()).description("raising writes that met a concurrent raise").register(registry);
        io.micrometer.core.instrument.FunctionCounter.builder("levee_gateway_site_lease_losses_total", keeper,
                k -> k.status().leaseLosses()).register(registry);
        io.micrometer.core.instrument.FunctionCounter.builder("levee_gateway_site_budget_rejected_total", keeper,
                k -> k.status().budgetRejected()).description("budget documents refused").register(registry);
    }

    /** Whether any direction is failing closed now. */
    boolean failingClosed() {
        ShareKeeper.Status s = keeper.status();
        for (Direction d : Direction.values()) {
            if (s.failingClosed(d)) {
                return true;
            }
        }
        return false;
    }

    /** The keeper's log lines, through the gateway's logger. */
    private record Slf4jLeaseLog(Logger log) implements LeaseLog {
        @Override
        public void debug(String pattern, Object... args) {
            log.debug(pattern, args);
        }

        @Override
        public void info(String pattern, Object... args) {
            log.info(pattern, args);
        }

        @Override
        public void warn(String pattern, Object... args) {
            log.warn(pattern, args);
        }

        @Override
        public void error(String pattern, Object... args) {
            log.error(pattern, args);
        }
    }

    @Override
    public void close() {
        keeper.close();
        loop.shutdownNow();
        if (client != null) {
            client.close();
        }
    }
}
