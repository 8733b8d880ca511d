package dev.levee.governor;

/**
 * Signals that a quantum was refused because the process does not own its bandwidth budget
 * (fencing: {@link OwnershipCheck} answered {@code false}; docs/design.md §8). The governor never grants
 * unlimited in that state.
 */
public final class OwnershipLostException extends RefusedException {

    private static final long serialVersionUID = 1L;

    /** Creates the exception. */
    public OwnershipLostException() {
        super("bandwidth budget not owned: quantum refused");
    }
}
