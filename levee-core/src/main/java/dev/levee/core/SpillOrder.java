package dev.levee.core;

import java.util.function.IntPredicate;

/**
 * The order in which one check asks limiters, given their HRW ranks ({@link Rendezvous#top}) for its resource
 * (docs/design.md §5 and docs/decisions.md, "Spill-over"). Pure: fed the ranking's size, the group size, a
 * round-robin position and which ranks are in local back-off; no I/O, no clock.
 *
 * <p>The model: the first {@code g} ranks are the group, the next (up to {@code g}) are those the check may
 * <em>spill over</em> to when every member of the group failed or is backed off. A check asks the group's
 * members not in back-off from the round-robin position on; then the limiters beyond the group not in
 * back-off, round-robin among them from the same position; then the group's members in back-off; then those
 * beyond it in back-off. Each rank is asked at most once, so at most {@code 2g} limiters per check; and over
 * any number of checks at most {@code g} limiters decide for one resource (a limiter beyond the group is asked
 * only when the group's are failing), which keeps admitted ≤ rate × t + g × burst.
 *
 * <p>A check with no limiter in back-off (the usual case) keeps no array: {@link #plainRank} gives the rank of
 * each step from the round-robin position reduced by {@link #position}.
 */
public final class SpillOrder {

    private SpillOrder() {
    }

    /**
     * Returns the asking order of one check.
     *
     * @param n         how many limiters were ranked: the group and those beyond it, {@code g ≤ n ≤ 2g}
     *                  unless fewer are active ({@code n < g} is read as a group of {@code n}); ≥ 1
     * @param g         the group size {@code min(DF, active)} ({@link Rendezvous#groupSize}), ≥ 1
     * @param start     the round-robin position (any long; taken modulo the set's size)
     * @param backedOff whether the limiter at an HRW rank ({@code 0..n-1}) is in local back-off
     * @return HRW ranks in asking order, each of {@code 0..n-1} once; ranks {@code ≥ g} are beyond the group
     */
    public static int[] order(int n, int g, long start, IntPredicate backedOff) {
        int inGroup = Math.min(g, n);
        int out = n - inGroup;
        int[] order = new int[n];
        int k = 0;
        int first = (int) Math.floorMod(start, (long) inGroup);
        int firstOut = out == 0 ? 0 : (int) Math.floorMod(start, (long) out);
        for (int pass = 0; pass < 2; pass++) {
            boolean wantBackedOff = pass == 1;
            for (int j = 0; j < inGroup; j++) {
                int r = (first + j) % inGroup;
                if (backedOff.test(r) == wantBackedOff) {
                    order[k++] = r;
                }
            }
            for (int j = 0; j < out; j++) {
                int r = inGroup + (firstOut + j) % out;
                if (backedOff.test(r) == wantBackedOff) {
                    order[k++] = r;
                }
            }
        }
        return order;
    }

    /**
     * Returns the HRW rank asked at step {@code k} when no limiter is in back-off: {@code order(n, g, start,
     * none)[k]} without the array — the group's members from the round-robin position on, then those beyond it.
     *
     * @param n     as {@link #order}
     * @param g     as {@link #order}
     * @param start the round-robin position, or the int {@link #position} reduced it to
     * @param k     the step, {@code 0 ≤ k < n}
     * @return the HRW rank asked at step {@code k}
     */
    public static int plainRank(int n, int g, long start, int k) {
        // the ranks of a plain order depend on start only modulo inGroup and modulo out: position() keeps both
        int inGroup = Math.min(g, n);
        if (k < inGroup) {
            return (int) ((Math.floorMod(start, (long) inGroup) + k) % inGroup);
        }
        int out = n - inGroup;
        return inGroup + (int) ((Math.floorMod(start, (long) out) + k - inGroup) % out);
    }

    /**
     * Reduces a round-robin position to an int that gives the same plain order ({@link #plainRank}): {@code start}
     * modulo {@code inGroup × out}, which both divide.
     *
     * @param n     as {@link #order}
     * @param g     as {@link #order}
     * @param start the round-robin position (any long)
     * @return the reduced position, ≥ 0; -1 when {@code inGroup × out} exceeds an int (never, for fewer than
     *         92 000 ranked limiters: then the order is kept as an array)
     */
    public static int position(int n, int g, long start) {
        int inGroup = Math.min(g, n);
        long period = (long) inGroup * Math.max(1, n - inGroup);
        return period > Integer.MAX_VALUE ? -1 : (int) Math.floorMod(start, period);
    }
}
