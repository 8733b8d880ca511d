package dev.levee.core;

/**
 * Decides one request with the Generic Cell Rate Algorithm (docs/design.md §6; ITU-T I.371 virtual
 * scheduling form).
 *
 * <h2>Model</h2>
 * Each limit key has one theoretical arrival time (TAT), in nanoseconds of a monotonic clock. With
 * emission interval {@code T} and capacity {@code c = max(burst, 1)}, the tolerance is
 * {@code τ = (c − 1) × T}. A request at {@code now} is admitted iff {@code TAT − now ≤ τ}; then
 * {@code TAT = max(TAT, now) + T}. A key never seen (or idle: {@code TAT ≤ now}) therefore admits
 * exactly {@code c} requests at once and then one every {@code T}. A rejected request changes
 * nothing. Over any window of length {@code t}, admitted ≤ {@code c + t / T}.
 *
 * <p>All comparisons of times are by subtraction, so any origin of the clock works, including
 * values near {@link Long#MAX_VALUE} and negative ones.
 *
 * <h2>Result encoding</h2>
 * To keep the hot path free of allocation, {@link #attempt} returns one {@code long}: a value
 * {@code ≥ 0} means admitted and is the remaining allowance (requests that would be admitted at
 * the same instant); a value {@code < 0} means rejected and {@code -value} is the wait in
 * nanoseconds until a request would be admitted (≥ 1).
 *
 * <h2>Reservations</h2>
 * {@link #reserve} takes up to {@code n} conformance slots of a key at once, for a request lease
 * (docs/design.md §12). Each admitted request or slot has a <em>virtual time</em> {@code v}: for
 * {@link #attempt} {@code v = max(TAT, now)} and the request is admitted at {@code now ∈ [v − τ, v]};
 * a reservation gives its slots {@code v_k = v_1 + (k − 1) × T} with {@code v_1 = max(TAT, now + lead)}
 * and moves TAT to {@code v_n + T}. Either way the virtual times of one state (under one limit) are at
 * least {@code T} apart, which is all the bound of docs/design.md §12 needs from this class. A reservation
 * refuses exactly where {@link #attempt} would refuse its first slot, with the same wait, and rescales
 * the state on a limit change the same way. The state's expiry horizon grows to cover a TAT that a
 * reservation pushed beyond {@code τ + T}, so {@link GcraTable} never forgets reserved debt.
 */
public final class Gcra {

    private Gcra() {
    }

    /**
     * Mutable per-key state: the TAT and whether it was ever set. Not thread-safe by itself:
     * callers serialise access to one state (the {@link GcraTable} locks on it).
     */
    public static final class State {
        long tat;
        boolean used;
        GcraLimit limit;
        volatile long horizonNs;
        /** Whether a reservation was ever granted on this state ({@link GcraTable#reserve}): slots may be in use. */
        boolean leased;

        /** Creates the state of a fresh key, expiring {@code horizonNs} after its last use. */
        public State(long horizonNs) {
            this.horizonNs = horizonNs;
        }

        /** Returns the TAT in ns, meaningful only when {@link #used()} is true. */
        public long tat() {
            return tat;
        }

        /** Returns whether any request was ever admitted on this state. */
        public boolean used() {
            return used;
        }
    }

    /**
     * Decides one request at {@code now} and, when admitted, advances the state.
     *
     * @param state the key's state (not null)
     * @param limit the per-limiter parameters (not null)
     * @param now   the current monotonic time in ns
     * @return ≥ 0: admitted, the remaining allowance; &lt; 0: rejected, minus the wait in ns (≥ 1)
     */
    public static long attempt(State state, GcraLimit limit, long now) {
        if (limit.blocked()) {
            return -GcraLimit.BLOCKED_RETRY_NS;
        }
        long t = limit.emissionIntervalNs();
        long tau = limit.toleranceNs();
        long ahead = state.used ? state.tat - now : 0; // TAT − now, may be negative when idle
        if (ahead < 0) {
            ahead = 0;
        }
        GcraLimit old = state.limit;
        if (old != limit && ahead > 0 && old != null && !old.equals(limit)) {
            ahead = rescale(ahead, old, limit);
            state.tat = now + ahead; // the carried-over debt is the state from now on, admitted or not
        }
        state.limit = limit;
        // the state expires one horizon of the limit in force after its last use, refused or not: a key refused under a
        // longer horizon (its group grew, its rate fell) owes more than the old one covered (GcraTableTest)
        // a reservation may have put TAT further ahead than τ + T: the horizon then covers it (reserve)
        state.horizonNs = Math.max(limit.horizonNs(), ahead);
        if (ahead > tau) {
            return -(ahead - tau);
        }
        long newAhead = ahead + t; // ≤ τ + T ≤ 2^62: no overflow
        state.tat = now + newAhead;
        state.used = true;
        return newAhead > tau ? 0 : (tau - newAhead) / t + 1;
    }

    /**
     * The answer to {@link #reserve}: either {@code slots ≥ 1} granted slots, or a refusal ({@code slots == 0})
     * with the wait. Offsets are relative to the {@code now} of the decision, in ns of the limiter's clock.
     *
     * @param slots        slots granted, ≥ 1; 0 = refused
     * @param firstNs      {@code v_1 − now}, ≥ 0: the virtual time of the first slot; slot {@code k} (1-based)
     *                     has {@code v_k − now = firstNs + (k − 1) × intervalNs}
     * @param intervalNs   {@code T}, ns between the virtual times of two slots
     * @param toleranceNs  {@code τ}: slot {@code k} may be used in {@code [v_k − τ, v_k + T)}
     * @param waitNs       for a refusal, ns until a reservation (or an {@link #attempt}) would be admitted, ≥ 1;
     *                     0 when granted
     */
    public record Reservation(int slots, long firstNs, long intervalNs, long toleranceNs, long waitNs) {

        /** Returns whether slots were granted. */
        public boolean granted() {
            return slots > 0;
        }

        /** Returns {@code v_n + T − now}: when, after the decision, the last slot's window ends (ns). */
        public long lifetimeNs() {
            return slots == 0 ? 0 : firstNs + slots * intervalNs;
        }
    }

    /**
     * Reserves up to {@code slots} consecutive conformance slots of one key at {@code now} (docs/design.md §12).
     *
     * <p>Refused, with the wait {@link #attempt} would give, exactly when {@code attempt} at {@code now} would
     * refuse (TAT − now &gt; τ, or rate 0); the state then changes only as a refused {@code attempt} changes it
     * (a limit change rescales the debt). Otherwise the first slot's virtual time is {@code v_1 = max(TAT,
     * now + lead)} and the grant holds {@code m = min(slots, ⌊(L − (v_1 − now)) / T⌋) ≥ 1} slots, where
     * {@code L = max(maxLifetimeNs, τ + T)} caps the lifetime: every slot's window ends by {@code now + L}
     * (one slot always fits, since {@code v_1 − now ≤ τ} when the lead does not move it). TAT becomes
     * {@code v_m + T}.
     *
     * @param state         the key's state (not null)
     * @param limit         the per-limiter parameters (not null)
     * @param now           the current monotonic time in ns
     * @param leadNs        the earliest virtual time of the first slot after {@code now}, ns, ≥ 0 (a client that
     *                      cannot use a slot before its grant arrives asks for about one round trip); capped so
     *                      that one slot fits the lifetime
     * @param slots         slots asked for, ≥ 1
     * @param maxLifetimeNs the longest time after {@code now} a slot's window may end, ns, ≥ 0; a key's own
     *                      {@code τ + T} is allowed whatever this says
     * @return the grant, or the refusal with its wait
     * @throws IllegalArgumentException when {@code leadNs < 0}, {@code slots < 1} or {@code maxLifetimeNs < 0}
     */
    public static Reservation reserve(State state, GcraLimit limit, long now, long leadNs, int slots,
                                      long maxLifetimeNs) {
        if (leadNs < 0) {
            throw new IllegalArgumentException("leadNs must be >= 0, got " + leadNs);
        }
        if (slots < 1) {
            throw new IllegalArgumentException("slots must be >= 1, got " + slots);
        }
        if (maxLifetimeNs < 0) {
            throw new IllegalArgumentException("maxLifetimeNs must be >= 0, got " + maxLifetimeNs);
        }
        long t = limit.emissionIntervalNs();
        long tau = limit.toleranceNs();
        if (limit.blocked()) {
            return new Reservation(0, 0, t, tau, GcraLimit.BLOCKED_RETRY_NS);
        }
        long ahead = state.used ? state.tat - now : 0;
        if (ahead < 0) {
            ahead = 0;
        }
        GcraLimit old = state.limit;
        if (old != limit && ahead > 0 && old != null && !old.equals(limit)) {
            ahead = rescale(ahead, old, limit);
            state.tat = now + ahead;
        }
        state.limit = limit;
        if (ahead > tau) {
            state.horizonNs = Math.max(limit.horizonNs(), ahead);
            return new Reservation(0, 0, t, tau, ahead - tau);
        }
        long life = Math.min(GcraLimit.MAX_SPAN_NS, Math.max(maxLifetimeNs, limit.horizonNs())); // ≥ τ + T
        long first = Math.max(ahead, Math.min(leadNs, life - t)); // ≤ life − T: one slot fits
        long fit = (life - first) / t; // ≥ 1
        int granted = (int) Math.min(slots, fit);
        long newAhead = first + granted * t; // ≤ life ≤ 2^61: no overflow
        state.tat = now + newAhead;
        state.used = true;
        state.horizonNs = Math.max(limit.horizonNs(), newAhead);
        return new Reservation(granted, first, t, tau, 0);
    }

    /**
     * Carries a key's used allowance over to a changed quota proportionally (docs/decisions.md, issue 3):
     * the share of the old span {@code τ + T} the key had used becomes the same share of the new span.
     * A key that had used half its burst has used half of the new one; a key is never held longer than the
     * new quota's own span allows.
     *
     * @param ahead {@code TAT − now} under the old limit, ns, &gt; 0
     * @param old   the limit the state was built with
     * @param now   the new limit
     * @return {@code TAT − now} under the new limit, ns, in {@code [0, τ' + T']}
     */
    static long rescale(long ahead, GcraLimit old, GcraLimit now) {
        long oldSpan = old.toleranceNs() + old.emissionIntervalNs();
        long newSpan = now.toleranceNs() + now.emissionIntervalNs();
        if (oldSpan <= 0) {
            return 0;
        }
        double share = Math.min(1.0, (double) ahead / (double) oldSpan);
        return Math.min(newSpan, (long) Math.ceil(share * newSpan));
    }

    /** Returns whether an {@link #attempt} result means admitted. */
    public static boolean admitted(long result) {
        return result >= 0;
    }

    /**
     * Converts a rejected result into a {@code Retry-After} value: seconds, rounded up, never 0.
     *
     * @param result a result of {@link #attempt}; for an admitted result this returns 0
     * @return whole seconds to wait, ≥ 1 for a rejection
     */
    public static long retryAfterSeconds(long result) {
        if (result >= 0) {
            return 0;
        }
        long waitNs = -result;
        return Math.max(1, (waitNs + 999_999_999L) / 1_000_000_000L);
    }
}
