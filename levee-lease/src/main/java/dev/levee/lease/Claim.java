package dev.levee.lease;

/**
 * One gateway's claim on one {@link Resource}, as published in etcd (docs/design.md §10).
 *
 * @param share  the share it holds (may be using) until its lease expires, bytes/s, ≥ 0
 * @param demand what it would use if it could, bytes/s, ≥ 0
 */
public record Claim(long share, long demand) {

    public Claim {
        if (share < 0 || demand < 0) {
            throw new IllegalArgumentException("share and demand must be ≥ 0, got " + share + ", " + demand);
        }
    }
}
