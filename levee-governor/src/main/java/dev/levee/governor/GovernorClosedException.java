package dev.levee.governor;

/**
 * Signals that a {@link BandwidthGovernor} or an {@link AdmissionQueue} is closed: waiting
 * requests fail with it at {@code close()}, later requests at once (docs/design.md §8, {@code preClose}).
 */
public final class GovernorClosedException extends RefusedException {

    private static final long serialVersionUID = 1L;

    /** Creates the exception for the named component. */
    public GovernorClosedException(String what) {
        super(what + " is closed");
    }
}
