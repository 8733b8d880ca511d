package dev.levee.client;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.levee.client.LeveeClient.Member;
import dev.levee.client.LeveeClient.View;
import dev.levee.core.GcraLimit;
import dev.levee.lease.LeaseSizer;
import dev.levee.lease.RequestLease;
import dev.levee.lease.RequestLeaseHolder;
import dev.levee.lease.RequestLeaseRules;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.ResolvedQuota;
import dev.levee.s3.S3Classification;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Completable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Decides the checks of hot keys from request leases at the client (docs/design.md §12; issue 23 item 2), before
 * {@link LeveeClient} would send them to a limiter. Made by {@link LeveeClient} only with request leases on
 * ({@code levee client}'s default).
 *
 * <h2>Which checks</h2>
 * A check whose limit key {@link RequestLeases} finds {@link RequestLeases.Heat#HOT}, whose request no shadow quota
 * matches (a shadow quota is decided per request on the limiter, docs/decisions.md "Shadow quotas"), and whose
 * per-limiter limit {@code rq.limit(g)} is worth leasing at the round trip measured from lease asks
 * ({@link RequestLeaseRules#worthLeasing}; burst 0 never is). Every other check goes to a limiter as without leases,
 * and so does every warm-up self-check ({@code dev.levee.runtime.Warmup}): they warm the per-request path.
 *
 * <h2>Admission</h2>
 * One {@link RequestLeaseHolder} per limit key, in a Caffeine cache of {@value #MAX_KEYS} keys (an evicted holder
 * loses its slots: capacity lost, never gained), moved to the client's epoch — (quota revision, view revision) as
 * this client knows them — before each admission, so a lease of another epoch is never used. Under the key's lock,
 * {@link RequestLeaseHolder#admit} at the check's ticker reading:
 * <ul>
 *   <li>a slot: {@code ACCEPTED} at once, no limiter asked ({@code attempts=0}); {@code limiter} is the address of
 *   the group member that granted the lease; level, limit key, rate and burst are the client's own resolution;
 *   {@code remaining} is the slots this client still holds for the key after this one, at most the quota's
 *   {@code max(burst, 1)}; {@code reset} is {@code ⌈(max(burst, 1) − remaining) × T⌉} seconds, at least 1 (the
 *   limiter's own formula for an admission, {@code Decider.resetSeconds}, with the held slots as the allowance).
 *   Logged by {@link CheckResults#leased} with {@code lease=<id> lease_limiter=<limiter id>};</li>
 *   <li>no usable slot but a held one later: {@code REJECTED} with {@code Retry-After} = the wait rounded up to
 *   seconds, at least 1, {@code remaining} 0 and {@code reset} {@code ⌈(wait + τ)⌉} s (as a limiter's refusal),
 *   no limiter named; logged with {@code lease=waiting};</li>
 *   <li>no held lease has a slot: the per-request path, exactly as without leases.</li>
 * </ul>
 * Counted in {@code levee_client_lease_admissions_total{result=admitted|waiting}} besides
 * {@code levee_client_results_total}. Fail closed: a slot is used only inside its local window, so a client cut off
 * from its limiters admits nothing from a lease once the last window ended.
 *
 * <h2>Asking</h2>
 * For each member of the key's group (the top {@code g} by HRW, as the per-request path ranks them) at most one ask
 * in flight; a member is asked when the slots held from it fall to half of {@link LeaseSizer#slots} or below, and
 * not before a refusal's wait has passed ({@link LeaseAsks}). No member is asked while the key's rate here is below
 * {@link LeaseSizer#lastingRate}, where a grant's slots would end before they are used (its checks go to a limiter,
 * as when the key is cold).
 *
 * <p>Time: every reading comes from the client's ticker, passed in. Thread-safe: a key's holder and asking state
 * are guarded by the key's lock.
 */
final class LeaseAdmission {

    /** The rules of every grant and slot window: the defaults of docs/design.md §12. */
    static final RequestLeaseRules RULES = RequestLeaseRules.DEFAULTS;
    /** Limit keys whose holders are kept at most: {@value}. */
    static final long MAX_KEYS = 16_384;
    /** The most slots one batch hands to NGINX: {@value} (a grant's most, {@link RequestLeaseRules#maxSlots}). */
    static final int BATCH_MAX_SLOTS = 4096;

    /**
     * The most slots one batch takes when the client asks for leases of {@code slots}: half of it, so that the holder
     * keeps slots for the checks NGINX sends while its next batch is on the way (the requests of other buckets and
     * those that find the batch used up), instead of sending them to a limiter per request, and a member's leases
     * fall to half of {@code slots} with the batch, which asks that member again at once.
     */
    static int batchSlots(int slots) {
        return Math.max(1, Math.min(BATCH_MAX_SLOTS, slots / 2));
    }
    /**
     * The least time a batch must leave NGINX to use it, ns: {@value} (2 ms). A lease whose next slot's window ends
     * sooner gives no batch; its slots go one check at a time until one that ends later is next.
     */
    static final long BATCH_MIN_LIFE_NS = 2_000_000L;

    private final RequestLeases leases;
    private final LeaseSizer sizer;
    private final CheckResults results;
    private final LeaseAsks asks;
    private final Cache<String, KeyLease> keys = Caffeine.newBuilder().maximumSize(MAX_KEYS)
            .executor(Runnable::run).build();
    private final Function<String, KeyLease> newKey;
    private final Counter admitted;
    private final Counter waiting;
    private final Counter batchSlots;
    /** The last epoch made, reused while neither revision moves (one object, not one per check). */
    private volatile RequestLease.Epoch lastEpoch = new RequestLease.Epoch(Long.MIN_VALUE, Long.MIN_VALUE);

    /**
     * @param leases  the resolution and hot-key estimate
     * @param http    the client's HTTP client, for the asks
     * @param ticker  the client's clock
     * @param options the client's settings: the asks' timeout is {@code checkTimeout}, their warnings' interval
     *                {@code warnInterval}
     * @param results where results are counted and logged
     * @param view    the client's view of the limiters (its revision is half the epoch)
     */
    LeaseAdmission(RequestLeases leases, io.vertx.core.http.HttpClientAgent http, dev.levee.core.Ticker ticker,
                   LeveeClient.Options options, CheckResults results, java.util.function.Supplier<View> view,
                   MeterRegistry registry) {
        this.leases = leases;
        this.results = results;
        this.sizer = new LeaseSizer(LeaseSizer.DEFAULTS.windowNs(), leases.settings().threshold(), RULES.maxSlots());
        this.newKey = k -> new KeyLease(new RequestLeaseHolder(RULES, epoch(leases.revision(), view.get().revision())));
        this.asks = new LeaseAsks(http, ticker, options, () -> epoch(leases.revision(), view.get().revision()), registry);
        this.admitted = admissions(registry, "admitted");
        this.waiting = admissions(registry, "waiting");
        this.batchSlots = Counter.builder("levee_client_lease_batch_slots_total")
                .description("leased slots handed to NGINX in batches, with admissions (docs/design.md §12)")
                .register(registry);
    }

    private static Counter admissions(MeterRegistry registry, String result) {
        return Counter.builder("levee_client_lease_admissions_total")
                .description("checks decided at the client from request leases: admitted from a slot, or refused"
                        + " while a held slot is not yet usable").tag("result", result).register(registry);
    }

    /**
     * Decides a check from the key's leases, or leaves it to a limiter.
     *
     * @param c      the classification, clamped
     * @param v      the view the check was ranked under
     * @param ranked the group and those beyond it in HRW rank order (the group first)
     * @param g      the group size
     * @param now    the check's ticker reading
     * @param batch  {@code < 0}: the caller takes no batch; else it does, and admitted this many requests to the
     *               request's bucket from its last batch since its last check (counted as arrivals on the key)
     * @param done   takes the decision when this decides
     * @return true when this decided the check (admitted or refused from a lease); false: the per-request path
     */
    boolean decide(S3Classification c, View v, List<Member> ranked, int g, long now, int batch,
                   Completable<ClientDecision> done) {
        if (dev.levee.runtime.Warmup.RESOURCE.equals(c.resource())) {
            return false; // a warm-up self-check warms the per-request path: never leased, asked for nor counted here
        }
        RequestLeases.Look look = leases.look(c, now, Math.max(0, batch));
        if (look.heat() != RequestLeases.Heat.HOT) {
            return false;
        }
        QuotaConfig cfg = look.config();
        ResolvedQuota rq = look.resolution().quota();
        if (cfg.hasShadow() && cfg.isShadow(cfg.resolve(c.resource(), c.key(), c.operation()))) {
            return false; // a shadow quota matched: the limiter decides it per request, as without leases
        }
        GcraLimit limit = rq.limit(g);
        if (!RULES.worthLeasing(limit, rq.quota().burst(), asks.rttNs(now))) {
            return false;
        }
        RequestLease.Epoch epoch = epoch(look.revision(), v.revision());
        KeyLease k = keys.get(rq.limitKey(), newKey);
        int slots = sizer.slots(look.rate(), g, limit);
        // below the lasting rate every slot of a grant would end unused: the held ones are used, no member is asked
        boolean asking = look.rate() >= sizer.lastingRate(g, limit);
        RequestLease used;
        RequestLeaseHolder.Batch taken = null;
        String address = null;
        long wait = 0;
        long remaining = 0;
        List<LeaseAsks.Member> ask = null;
        synchronized (k) {
            k.epoch(epoch);
            RequestLeaseHolder h = k.holder;
            used = h.admit(now);
            if (used != null && batch >= 0 && wholeBucket(cfg, c, rq)) {
                // before the asks below: a holder emptied by the batch asks again at once
                taken = h.take(now, batchSlots(slots), BATCH_MIN_LIFE_NS);
            }
            if (used != null) {
                remaining = Math.min(h.unused(now), limit.capacity());
                LeaseAsks.Member granting = k.members.get(used.limiterId());
                address = granting == null ? used.limiterId() : granting.address;
            } else {
                wait = h.waitNs(now);
            }
            for (int i = 0; asking && i < g && i < ranked.size(); i++) {
                LeaseAsks.Member m = k.due(ranked.get(i), now, slots);
                if (m != null) {
                    if (ask == null) {
                        ask = new ArrayList<>(g);
                    }
                    ask.add(m);
                }
            }
        }
        if (ask != null) {
            String quotas = cfg.resolutionDigest(c.resource());
            for (LeaseAsks.Member m : ask) {
                asks.send(k, m, c, rq.limitKey(), g, slots, sizer.leadNs(look.rate(), g, limit, slots), epoch, limit,
                        quotas);
            }
        }
        if (used != null) {
            double ns = (double) (limit.capacity() - remaining) * limit.emissionIntervalNs();
            ClientDecision.Batch b = taken == null ? null : new ClientDecision.Batch(taken.slots(), taken.endNs() - now,
                    taken.lease().id(), taken.lease().limiterId(), taken.firstSlot());
            ClientDecision d = new ClientDecision(ClientDecision.Result.ACCEPTED, 0, remaining, address,
                    rq.level().label(), rq.limitKey(), c, 0, rq.quota().rate(), rq.quota().burst(), seconds(ns), false, b);
            admitted.increment();
            if (b != null) {
                batchSlots.increment(b.slots());
            }
            done.succeed(results.leased(d, used));
            return true;
        }
        if (wait > 0) {
            ClientDecision d = new ClientDecision(ClientDecision.Result.REJECTED, seconds(wait), 0, null,
                    rq.level().label(), rq.limitKey(), c, 0, rq.quota().rate(), rq.quota().burst(),
                    seconds((double) wait + limit.toleranceNs()), false);
            waiting.increment();
            done.succeed(results.leased(d, null));
            return true;
        }
        return false; // RequestLeaseHolder.NO_LEASE: no held lease has a slot
    }

    /**
     * Whether every request to the check's bucket is counted on the key {@code rq} names, so that NGINX, which tells
     * requests apart by bucket only, may admit them from a batch ({@link QuotaConfig#wholeResource}).
     */
    private static boolean wholeBucket(QuotaConfig cfg, S3Classification c, ResolvedQuota rq) {
        ResolvedQuota whole = cfg.wholeResource(c.resource());
        return whole != null && whole.limitKey().equals(rq.limitKey());
    }

    /** Seconds, rounded up, at least 1, of {@code ns} (as the limiter's Retry-After and reset). */
    static long seconds(double ns) {
        return Math.max(1, (long) Math.min(Math.ceil(ns / 1e9), (double) (1L << 40)));
    }

    /** The epoch of these revisions: the last one made when neither moved. */
    private RequestLease.Epoch epoch(long configRevision, long viewRevision) {
        RequestLease.Epoch e = lastEpoch;
        if (e.configRevision() == configRevision && e.membershipVersion() == viewRevision) {
            return e;
        }
        e = new RequestLease.Epoch(configRevision, viewRevision);
        lastEpoch = e;
        return e;
    }

    /** Returns the holder of a limit key, or null when none is kept (tests). */
    RequestLeaseHolder holder(String limitKey) {
        KeyLease k = keys.getIfPresent(limitKey);
        return k == null ? null : k.holder;
    }

    /**
     * One limit key at this client: its holder and, per member of its group, the asking state. Guarded by its own
     * lock ({@code synchronized (this)}), taken by admissions and by the answers of asks.
     */
    static final class KeyLease {
        final RequestLeaseHolder holder;
        /** Per limiter id: the member's address, whether an ask is in flight, when it may be asked again. */
        final Map<String, LeaseAsks.Member> members = new HashMap<>(8);

        KeyLease(RequestLeaseHolder holder) {
            this.holder = holder;
        }

        /**
         * Moves to {@code e} (the holder drops every lease of another epoch) and forgets the members without an ask in
         * flight, so that the map holds the members of recent groups only. Caller holds the lock.
         */
        void epoch(RequestLease.Epoch e) {
            if (!e.equals(holder.epoch())) {
                holder.epoch(e);
                members.values().removeIf(m -> !m.inFlight);
            }
        }

        /**
         * Returns member {@code m}'s asking state when it is to be asked now — no ask in flight, its wait over, and the
         * slots held from it at half of {@code slots} or below — marked in flight; else null. Caller holds the lock.
         */
        LeaseAsks.Member due(Member m, long now, int slots) {
            LeaseAsks.Member a = members.get(m.id());
            if (a == null) {
                a = new LeaseAsks.Member(m.id(), m.address());
                members.put(m.id(), a);
            }
            if (a.inFlight || (a.holdOff && now - a.notBefore < 0)) {
                return null;
            }
            if (2 * holder.unused(now, m.id()) > slots) {
                return null;
            }
            a.inFlight = true;
            a.holdOff = false;
            a.address = m.address();
            return a;
        }
    }
}
