package dev.levee.governor;

/**
 * Signals that a request waited in the {@link AdmissionQueue} for the configured timeout without
 * being admitted (docs/design.md §8).
 */
public final class AdmissionTimeoutException extends RefusedException {

    private static final long serialVersionUID = 1L;

    /** Creates the exception; {@code timeoutNs} is the wait that elapsed, in nanoseconds. */
    public AdmissionTimeoutException(long timeoutNs) {
        super("not admitted within " + timeoutNs + " ns");
    }
}
