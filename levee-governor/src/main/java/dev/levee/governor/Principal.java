package dev.levee.governor;

/**
 * Holds one principal's scheduling state in a {@link DrrBandwidthGovernor}: its bucket, its FIFO
 * of waiting requests, and its place in either the round-robin ring (active) or the heap of
 * principals waiting for their own bucket (blocked). All fields are guarded by the governor's
 * lock.
 */
final class Principal {

    final String id;
    final TokenBucket bucket;
    /** Largest grant, bytes: min(64 KiB, every enabled burst). */
    long quantum;

    /** FIFO of waiting requests (intrusive, through the stream nodes). */
    DrrBandwidthGovernor.StreamNode head;
    DrrBandwidthGovernor.StreamNode tail;

    /** Deficit round robin: bytes this principal may still take in the current visit. */
    long deficit;
    /** Whether the current visit at the head of the ring has already added its quantum. */
    boolean visited;

    /** Circular ring links while active; both null otherwise. */
    Principal prev;
    Principal next;

    /** Bytes granted to this principal since it was created (for demand estimates, docs/design.md §10). */
    long grantedBytes;
    /** Of those, bytes granted to requests that had to wait (queued rather than fast path). */
    long waitedBytes;

    /** Index in the blocked heap, or -1. */
    int heapIndex = -1;
    /** While blocked: ticker time at which the bucket holds the head quantum, ns. */
    long readyAt;

    Principal(String id, TokenBucket bucket, long quantum) {
        this.id = id;
        this.bucket = bucket;
        this.quantum = quantum;
    }

    boolean active() {
        return next != null;
    }

    boolean blocked() {
        return heapIndex >= 0;
    }
}
