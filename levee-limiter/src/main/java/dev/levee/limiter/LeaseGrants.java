package dev.levee.limiter;

import dev.levee.config.QuotaSource;
import dev.levee.core.Gcra;
import dev.levee.core.GcraLimit;
import dev.levee.core.GcraTable;
import dev.levee.core.Ticker;
import dev.levee.lease.RequestLeaseWire;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.ResolvedQuota;
import dev.levee.runtime.Http;
import dev.levee.runtime.Json;
import dev.levee.runtime.LogText;
import dev.levee.s3.S3Operation;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServerRequest;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The limiter's side of request leases (docs/design.md §12; docs/decisions.md, "Request leases: the limiter side"):
 * {@code POST /v1/lease} with a {@link RequestLeaseWire.Ask}, answered 200 with a {@link RequestLeaseWire.Grant}
 * (granted or not), or 400 naming the field of a malformed ask.
 *
 * <p>An ask is validated as a check is ({@link CheckRequest}) and by {@link RequestLeaseWire.Ask#problem}; its quota is
 * resolved as the {@link Decider} resolves a check's (the enforced quota, one configuration snapshot per ask). A key
 * that may not be leased ({@link Decider#leasable}: no enforced quota, {@code lease: false}, burst 0, rate 0,
 * {@code τ + T} beyond the lease lifetime, the warm-up's resource), or whose request a shadow quota also decides (a
 * leased request would never reach the shadow quota), is {@link RequestLeaseWire#NOT_LEASABLE}; within the restart
 * fence of this incarnation the answer is {@link RequestLeaseWire#FENCED} with the wait until it ends; otherwise
 * {@link GcraTable#reserve} on the table the checks use decides, and a refusal is {@link RequestLeaseWire#REFUSED} with
 * the wait. Each granted or refused ask is one line on the decision log's logger, {@code levee.limiter.decision};
 * each is counted ({@code levee_limiter_lease_asks_total}, {@code levee_limiter_lease_slots_total}); the slots of a
 * grant are recorded in the statistics as admitted at grant time, an upper bound of the requests they admit.
 */
final class LeaseGrants {

    private static final Logger LOG = LoggerFactory.getLogger("levee.limiter.decision");

    private final String id;
    private final QuotaSource config;
    private final GcraTable table;
    private final Ticker ticker;
    private final LimiterMetrics metrics;
    private final DecisionStats stats;
    /** The lease ids of this incarnation: 1, 2, … */
    private final AtomicLong leases = new AtomicLong();

    LeaseGrants(String id, QuotaSource config, GcraTable table, Ticker ticker, LimiterMetrics metrics,
                DecisionStats stats) {
        this.id = id;
        this.config = config;
        this.table = table;
        this.ticker = ticker;
        this.metrics = metrics;
        this.stats = stats;
    }

    /**
     * Completes once this incarnation's restart fence has passed by the ticker (a timer for what is left of it): a
     * started limiter counts as started — heartbeats, {@code /health} 200, the start's future — only then, so that
     * clients that find it through the membership never meet the fence (docs/decisions.md, "Request leases: the
     * limiter side"). The warm-up usually covers it; checks that arrive earlier are fenced by the {@link Decider}.
     */
    Future<Void> fencePassed(Vertx vertx) {
        long left = Decider.LEASE_LIFETIME_NS - table.sinceCreatedNs(ticker.read());
        return left <= 0 ? Future.succeededFuture()
                : vertx.timer((left + 999_999) / 1_000_000, TimeUnit.MILLISECONDS).mapEmpty();
    }

    /**
     * {@code POST /v1/lease}: 200 with the grant or refusal; a malformed ask → 400 naming the field; a decision that
     * fails unexpectedly → 500 (logged with its cause, as a failed check is).
     */
    void lease(HttpServerRequest req, byte[] body) {
        QuotaConfig cfg = config.current(); // one snapshot per ask, as per check
        RequestLeaseWire.Ask ask;
        S3Operation op;
        try {
            ask = Json.parse(body, RequestLeaseWire.Ask.class);
            op = new CheckRequest(ask.resource(), ask.key(), ask.operation(), ask.g()).validate(cfg.factor());
            String problem = ask.problem();
            if (problem != null) {
                throw new IllegalArgumentException(problem);
            }
        } catch (IllegalArgumentException e) {
            metrics.leaseAsks.get(LimiterMetrics.INVALID).increment();
            Http.error(req.response(), 400, e.getMessage());
            return;
        }
        try {
            Http.json(req.response(), 200, decide(cfg, ask, op, ticker.read()));
        } catch (RuntimeException e) {
            LOG.error("lease decision failed resource={} key={} op={}", LogText.escape(ask.resource()),
                    LogText.escape(ask.key()), op, e);
            Http.error(req.response(), 500, "lease decision failed");
        }
    }

    /**
     * Decides one valid ask at {@code now}: counts, records and logs it.
     *
     * @param op the ask's operation, validated
     * @return the answer
     */
    RequestLeaseWire.Grant decide(QuotaConfig cfg, RequestLeaseWire.Ask ask, S3Operation op, long now) {
        ResolvedQuota rq = cfg.resolveEnforced(ask.resource(), ask.key(), op);
        if (ask.quotas() != null && !ask.quotas().equals(cfg.resolutionDigest(ask.resource()))) {
            return refused(ask, op, rq, RequestLeaseWire.QUOTAS_DIFFER, 0);
        }
        GcraLimit limit = rq == null ? null : rq.limit(ask.g());
        if (rq == null || !Decider.leasable(cfg, ask.resource(), rq, limit)
                || cfg.hasShadow() && cfg.isShadow(cfg.resolve(ask.resource(), ask.key(), op))) {
            return refused(ask, op, rq, RequestLeaseWire.NOT_LEASABLE, 0);
        }
        long since = table.sinceCreatedNs(now);
        if (since < Decider.LEASE_LIFETIME_NS) {
            return refused(ask, op, rq, RequestLeaseWire.FENCED, Decider.LEASE_LIFETIME_NS - since);
        }
        Gcra.Reservation r = table.reserve(rq.limitKey(), limit, now, ask.lead(), ask.slots(),
                Decider.LEASE_LIFETIME_NS);
        if (!r.granted()) {
            return refused(ask, op, rq, RequestLeaseWire.REFUSED, r.waitNs());
        }
        long lease = leases.incrementAndGet();
        metrics.leaseAsks.get(LimiterMetrics.GRANTED).increment();
        metrics.leaseSlots.increment(r.slots());
        stats.record(rq.ruleKey(), DecisionStats.Outcome.ADMITTED, r.slots());
        LOG.info("lease granted key={} slots={} lease={} client={} first_ns={} interval_ns={} tolerance_ns={}"
                        + " resource={} op={} g={} limiter={}", LogText.escape(rq.limitKey()), r.slots(), lease,
                LogText.escape(ask.client()), r.firstNs(), r.intervalNs(), r.toleranceNs(),
                LogText.escape(ask.resource()), op, ask.g(), id);
        return RequestLeaseWire.Grant.of(lease, id, rq.limitKey(), r.slots(), r.firstNs(), r.intervalNs(),
                r.toleranceNs());
    }

    private RequestLeaseWire.Grant refused(RequestLeaseWire.Ask ask, S3Operation op, ResolvedQuota rq, String reason,
                                           long waitNs) {
        metrics.leaseAsks.get(reason).increment();
        LOG.info("lease refused reason={} key={} slots={} client={} wait_ns={} resource={} op={} g={} limiter={}",
                reason, rq == null ? "-" : LogText.escape(rq.limitKey()), ask.slots(), LogText.escape(ask.client()),
                waitNs, LogText.escape(ask.resource()), op, ask.g(), id);
        return RequestLeaseWire.Grant.refused(id, reason, waitNs);
    }
}
