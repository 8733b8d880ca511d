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
        state.horizonNs = limit.horizonNs();
        if (ahead > tau) {
            return -(ahead - tau);
        }
        long newAhead = ahead + t; // ≤ τ + T ≤ 2^62: no overflow
        state.tat = now + newAhead;
        state.used = true;
        return newAhead > tau ? 0 : (tau - newAhead) / t + 1;
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
