package dev.levee.lease;

import dev.levee.governor.Direction;
import java.util.Map;
import java.util.Objects;

/**
 * What one gateway may use of the site budgets at one moment (docs/design.md §10): the one value that
 * {@link ShareKeeper} publishes. Immutable; the keeper replaces it whole through one atomic reference,
 * and every reader — the governors' rates, their ownership check, the gateway's fail-closed state, its
 * status — reads one value, so no two of them can see a share of one lease with the deadline or budget
 * of another.
 *
 * @param id       the store's lease id; 0 = no lease held (then nothing budgeted may be used)
 * @param epoch    the number of this value: each value the keeper publishes has the next one; 0 is the
 *                 value before the first round
 * @param budget   the budget in force, with the per-principal ceilings; null before the first budget
 *                 was read (then every direction fails closed)
 * @param shares   the shares to use, by resource, bytes/s; a budgeted resource absent holds no share
 * @param deadline the local deadline, ns on the keeper's {@code Ticker}: {@code sent + ttl × (1 − ρ) − ε}
 *                 of the last acknowledged renewal; meaningful only while {@code id != 0}
 */
public record SiteLease(long id, long epoch, SiteBudget budget, Map<Resource, Long> shares, long deadline) {

    public SiteLease {
        shares = Map.copyOf(Objects.requireNonNull(shares, "shares"));
    }

    /** The value before the first round: no lease, no budget, no share, expired at {@code now}. */
    static SiteLease initial(long now) {
        return new SiteLease(0, 0, null, Map.of(), now);
    }

    /**
     * Returns whether governors of {@code d} may grant at {@code now}: true for a direction without site
     * budgets (neither a direction budget nor a per-principal ceiling); for a budgeted one, only while a
     * lease is held and its local deadline has not passed (docs/design.md §10, fail closed). False for
     * every direction before the first budget was read.
     *
     * @param now a reading of the keeper's {@code Ticker}, ns
     */
    public boolean owned(Direction d, long now) {
        if (budget == null) {
            return false;
        }
        if (budget.budget(d) == 0 && !budget.principalCeilings(d)) {
            return true;
        }
        return id != 0 && deadline - now > 0;
    }

    /** Whether a lease is held (it may still have passed its local deadline). */
    public boolean held() {
        return id != 0;
    }

    /** Time left before the shares stop being used, ns; ≤ 0 when failing closed or when no lease is held. */
    public long validFor(long now) {
        return id == 0 ? 0 : deadline - now;
    }

    /** Returns the share of {@code r} to use, bytes/s; 0 = none. */
    public long share(Resource r) {
        return shares.getOrDefault(r, 0L);
    }

    /** Returns a principal's site-wide ceiling in {@code d}, bytes/s; 0 = none (or no budget read yet). */
    public long ceiling(Direction d, String principal) {
        return budget == null ? 0 : budget.ceiling(d, principal);
    }

    /** This lease under the store's lease {@code newId}, expired at {@code now} until a renewal extends it. */
    SiteLease granted(long newId, long now) {
        return new SiteLease(newId, epoch + 1, budget, shares, now);
    }

    /** No lease any more: no share, expired at {@code now}. */
    SiteLease lost(long now) {
        return new SiteLease(0, epoch + 1, budget, Map.of(), now);
    }

    SiteLease withDeadline(long newDeadline) {
        return new SiteLease(id, epoch + 1, budget, shares, newDeadline);
    }

    SiteLease withBudget(SiteBudget newBudget) {
        return new SiteLease(id, epoch + 1, newBudget, shares, deadline);
    }

    SiteLease withShares(Map<Resource, Long> newShares) {
        return new SiteLease(id, epoch + 1, budget, newShares, deadline);
    }
}
