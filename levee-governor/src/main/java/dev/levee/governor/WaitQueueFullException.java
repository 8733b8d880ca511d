package dev.levee.governor;

/**
 * Signals that a request was refused at once because the wait queue is full: 256 waiting quanta
 * per {@link BandwidthGovernor} direction by default, or the {@link AdmissionQueue}'s bound on
 * waiters (docs/design.md §8).
 */
public final class WaitQueueFullException extends RefusedException {

    private static final long serialVersionUID = 1L;

    /** Creates the exception; {@code limit} is the bound that was reached. */
    public WaitQueueFullException(String what, int limit) {
        super(what + " wait queue is full (" + limit + " waiting)");
    }
}
