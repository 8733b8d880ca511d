package dev.levee.governor;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;

/**
 * Records every grant through the governor's test seam and checks the ceiling of docs/design.md §8:
 * for every window [s, e] of grant times, bytes granted ≤ burst + rate × (e − s). The governor
 * calls {@link #granted} under its lock, so the list needs no other synchronisation; read it after
 * the governor's lock was last taken (e.g. after {@code stats()} or {@code close()}).
 */
final class GrantLog implements DrrBandwidthGovernor.GrantObserver {

    record Grant(String principal, long bytes, long at) {
    }

    final List<Grant> grants = new ArrayList<>();

    @Override
    public void granted(String principalId, long bytes, long nowNs) {
        grants.add(new Grant(principalId, bytes, nowNs));
    }

    long total() {
        return grants.stream().mapToLong(Grant::bytes).sum();
    }

    long total(String principal) {
        return grants.stream().filter(g -> g.principal.equals(principal)).mapToLong(Grant::bytes).sum();
    }

    List<Grant> of(String principal) {
        return grants.stream().filter(g -> g.principal.equals(principal)).toList();
    }

    /** Checks the ceiling for the shared bucket (all grants). */
    void assertCeiling(long rate) {
        assertCeiling(grants, rate, "shared");
    }

    /** Checks the ceiling for one principal's grants. */
    void assertCeiling(String principal, long rate) {
        assertCeiling(of(principal), rate, principal);
    }

    /**
     * Checks, in O(n), that for every s ≤ e: 1e9 × (F(e) − F(s−1)) ≤ 1e9 × burst + rate × (t(e) − t(s)),
     * where F is the running sum. Equivalently 1e9 × F(e) − rate × t(e) ≤ 1e9 × burst + min over
     * s ≤ e of (1e9 × F(s−1) − rate × t(s)). Times are taken relative to the first grant
     * (differences of ticker readings), so any clock origin works. A rate of 0 checks nothing.
     */
    static void assertCeiling(List<Grant> grants, long rate, String what) {
        if (rate == 0 || grants.isEmpty()) {
            return;
        }
        BigInteger nano = BigInteger.valueOf(1_000_000_000L);
        BigInteger r = BigInteger.valueOf(rate);
        BigInteger burst = BigInteger.valueOf(GovernorConfig.burstBytes(rate)).multiply(nano);
        long t0 = grants.get(0).at();
        BigInteger f = BigInteger.ZERO;
        BigInteger minStart = null;
        for (int i = 0; i < grants.size(); i++) {
            Grant g = grants.get(i);
            BigInteger t = BigInteger.valueOf(g.at() - t0);
            BigInteger start = f.multiply(nano).subtract(r.multiply(t));
            minStart = minStart == null || start.compareTo(minStart) < 0 ? start : minStart;
            f = f.add(BigInteger.valueOf(g.bytes()));
            BigInteger end = f.multiply(nano).subtract(r.multiply(t));
            if (end.compareTo(burst.add(minStart)) > 0) {
                throw new AssertionError(what + ": ceiling exceeded at grant " + i + " (t = " + (g.at() - t0)
                        + " ns after the first grant): granted − rate × window exceeds the burst of "
                        + GovernorConfig.burstBytes(rate) + " bytes");
            }
        }
    }
}
