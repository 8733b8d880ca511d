package dev.levee.governor;

/**
 * Signals that a {@link BandwidthGovernor} or an {@link AdmissionQueue} refused a request; the
 * gateway answers {@code 503 SlowDown} with {@code Retry-After} (docs/design.md §8).
 *
 * <p>Refusals are expected flow control, not bugs, so these exceptions carry no stack trace and
 * cost little to create. The subclass names the reason.
 */
public abstract sealed class RefusedException extends RuntimeException
        permits WaitQueueFullException, GovernorClosedException, OwnershipLostException,
                PrincipalTableFullException, AdmissionTimeoutException {

    private static final long serialVersionUID = 1L;

    RefusedException(String message) {
        super(message, null, false, false);
    }
}
