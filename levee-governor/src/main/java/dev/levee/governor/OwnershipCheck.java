package dev.levee.governor;

/**
 * Answers whether this process still owns its bandwidth budget (fencing, docs/design.md §8 and §10).
 *
 * <p>A {@link BandwidthGovernor} consults it when a request arrives and before each grant; while
 * it answers {@code false}, requests are refused with {@link OwnershipLostException} — the
 * governor never falls back to unlimited. It is called with the governor's lock held, so it must
 * be cheap and must not block or call back into the governor (reading a {@code volatile} flag
 * kept by the lease keeper is the intended implementation).
 */
@FunctionalInterface
public interface OwnershipCheck {

    /** Returns an ownership check that always answers {@code true} (a standalone gateway). */
    static OwnershipCheck alwaysOwned() {
        return () -> true;
    }

    /** Returns whether the budget is owned right now. */
    boolean owned();
}
