package dev.levee.lease;

import java.util.Arrays;
import java.util.Comparator;

/**
 * Max-min fair division of a budget among demands (progressive filling, Bertsekas and Gallager,
 * <i>Data Networks</i>, §6.5.2): a demand below the equal share gets what it asks for; what it
 * leaves is split equally among the others, recursively. The shares of docs/design.md §10. Pure integer
 * arithmetic, bytes/s; Σ shares ≤ budget always, and equals {@code min(budget, Σ demands)} up to
 * the remainder of integer division (at most one byte/s per claimant, given to the first).
 */
public final class MaxMinFair {

    private MaxMinFair() {
    }

    /**
     * Returns each claimant's share of {@code budget}.
     *
     * @param budget  the budget, bytes/s, ≥ 0
     * @param demands each claimant's demand, bytes/s, each ≥ 0 (not modified)
     * @return shares in the order of {@code demands}: {@code share[i] ≤ demands[i]} and
     *         Σ share ≤ budget
     * @throws IllegalArgumentException if the budget or a demand is negative
     */
    public static long[] allocate(long budget, long[] demands) {
        if (budget < 0) {
            throw new IllegalArgumentException("budget must be ≥ 0, got " + budget);
        }
        int n = demands.length;
        long[] share = new long[n];
        boolean[] done = new boolean[n];
        int open = 0;
        for (int i = 0; i < n; i++) {
            if (demands[i] < 0) {
                throw new IllegalArgumentException("demand must be ≥ 0, got " + demands[i]);
            }
            if (demands[i] == 0) {
                done[i] = true;
            } else {
                open++;
            }
        }
        long left = budget;
        while (open > 0 && left > 0) {
            long equal = left / open;
            boolean satisfiedSome = false;
            for (int i = 0; i < n; i++) {
                if (!done[i] && demands[i] - share[i] <= equal) {
                    left -= demands[i] - share[i];
                    share[i] = demands[i];
                    done[i] = true;
                    open--;
                    satisfiedSome = true;
                }
            }
            if (!satisfiedSome) {
                long rest = left - equal * open;
                for (int i = 0; i < n; i++) {
                    if (!done[i]) {
                        long extra = equal + (rest > 0 ? 1 : 0);
                        if (rest > 0) {
                            rest--;
                        }
                        share[i] += extra;
                        left -= extra;
                    }
                }
                break;
            }
        }
        return share;
    }

    /**
     * The max-min fair division of {@code cap} among demands (progressive filling), in doubles: what {@code levee
     * demo} shows and offers (the site demo's fair column, the parts of {@code --max-rate}), not the leases' shares,
     * which {@link #allocate} keeps in whole bytes/s.
     *
     * @param wants the demands, each ≥ 0
     * @param cap   what there is to divide, &gt; 0
     * @return each demand's part: its demand when the demands fit, else at most an equal part of what is left
     */
    public static double[] fairShares(double[] wants, double cap) {
        Integer[] order = new Integer[wants.length];
        Arrays.setAll(order, i -> i);
        Arrays.sort(order, Comparator.comparingDouble(i -> wants[i]));
        double[] out = new double[wants.length];
        double left = cap;
        for (int k = 0; k < order.length; k++) {
            int i = order[k];
            out[i] = Math.min(wants[i], left / (order.length - k));
            left -= out[i];
        }
        return out;
    }
}
