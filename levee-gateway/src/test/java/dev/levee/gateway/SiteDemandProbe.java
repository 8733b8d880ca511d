package dev.levee.gateway;

/** Opens {@link SiteShares#demand} to the site simulation (test code only). */
public final class SiteDemandProbe {

    private SiteDemandProbe() {
    }

    /** {@link SiteShares#demand}, bytes/s. */
    public static long demand(long grantedBytes, long waitedBytes, int waitingNow, long dtNanos, long share, long budget,
                              int gateways) {
        SiteShares.Round r = SiteShares.Round.of(grantedBytes, waitedBytes, waitingNow, dtNanos);
        return SiteShares.demand(r.used(), r.limited(), share, budget, gateways); // one round, no median
    }
}
