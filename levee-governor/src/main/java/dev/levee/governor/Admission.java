package dev.levee.governor;

/**
 * Holds one admitted request's slot in an {@link AdmissionQueue}; closing it releases the slot
 * and admits the oldest waiter of the same principal and class, if any.
 */
public interface Admission extends AutoCloseable {

    /** Returns the principal (service-account id) admitted. */
    String principalId();

    /** Returns the class the slot belongs to. */
    AdmissionClass admissionClass();

    /** Releases the slot. Idempotent; works after the queue is closed. */
    @Override
    void close();
}
