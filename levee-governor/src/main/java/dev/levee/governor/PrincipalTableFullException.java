package dev.levee.governor;

/**
 * Signals that a {@link BandwidthGovernor} refused a principal it has not seen because its table
 * of principals is full (1000 by default, docs/design.md §8). Existing principals are never evicted.
 */
public final class PrincipalTableFullException extends RefusedException {

    private static final long serialVersionUID = 1L;

    /** Creates the exception; {@code limit} is the table's capacity. */
    public PrincipalTableFullException(int limit) {
        super("principal table is full (" + limit + " principals)");
    }
}
