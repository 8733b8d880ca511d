package dev.levee.lease;

import static dev.levee.lease.RequestLeaseModel.MS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.core.GcraLimit;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.statistics.Statistics;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

/**
 * The model test of request leases (issue 23, docs/design.md §12) on {@link RequestLeaseModel}: several clients and
 * limiters, grants and per-request checks over a network that loses and delays messages (some longer than a lease
 * lives), client crashes, limiter crashes and restarts without state, clock drift within ρ, quota and membership
 * changes that clients and limiters learn late. The bound is checked at every admission over every window.
 */
class RequestLeaseModelTest {

    private static RequestLeaseRules rules(double rho, long marginNs) {
        return new RequestLeaseRules(rho, marginNs, 200 * MS, 4096);
    }

    /**
     * With one quota and one membership, admissions over every window (up to 2 s) stay within the spec bound
     * {@code rate × w + g × burst + g} (burst 0 included: such a key is not leased), through message loss and delay, client crashes, limiter crashes (restarted
     * behind the fence) and drift.
     */
    @Property(tries = 200)
    void admissionsStayWithinTheSpecBound(
            @ForAll @IntRange(min = 1, max = 3) int clients,
            @ForAll @IntRange(min = 1, max = 4) int limiters,
            @ForAll @IntRange(min = 1, max = 4) int factor,
            @ForAll @DoubleRange(min = 20, max = 2000) double rate,
            @ForAll @IntRange(min = 0, max = 30) int burst,
            @ForAll @DoubleRange(min = 0, max = 0.02) double rho,
            @ForAll boolean margin,
            @ForAll @DoubleRange(min = 0, max = 0.2) double loss,
            @ForAll @DoubleRange(min = 0, max = 0.05) double longDelay,
            @ForAll @DoubleRange(min = 0.3, max = 3) double demand,
            @ForAll boolean limiterCrashes,
            @ForAll boolean clientCrashes,
            @ForAll boolean holdsRate,
            @ForAll long seed) {
        int b = holdsRate ? Math.max(burst, GcraLimit.minimumBurst(rate, Math.min(factor, limiters))) : burst;
        RequestLeaseModel.Knobs k = new RequestLeaseModel.Knobs(clients, limiters, factor, rate, b, rho,
                margin ? 100_000 : 0, 50_000, 2 * MS, loss, longDelay, demand, limiterCrashes, clientCrashes, false,
                false, true, 2_000 * MS, 3_000 * MS);
        RequestLeaseModel m = new RequestLeaseModel(seed, k, rules(rho, k.marginNs())).run();
        collect(m);
        assertThat(m.violation).as("invariant").isNull();
        // a grant of the client's own epoch always has the T and τ the client resolves itself
        assertThat(m.refusedGrants).isZero();
    }

    /**
     * With quota and membership changes mid-lease as well (learned late by every client and limiter), every
     * limiter's admissions under each limit it applied stay within that limit's bound {@code ⌈w / T⌉ + c}
     * over every window, and no client admits from a lease of an epoch it has left.
     */
    @Property(tries = 200)
    void admissionsStayWithinEachLimitsBoundThroughChanges(
            @ForAll @IntRange(min = 1, max = 3) int clients,
            @ForAll @IntRange(min = 1, max = 5) int limiters,
            @ForAll @IntRange(min = 1, max = 4) int factor,
            @ForAll @DoubleRange(min = 20, max = 2000) double rate,
            @ForAll @IntRange(min = 0, max = 30) int burst,
            @ForAll @DoubleRange(min = 0, max = 0.02) double rho,
            @ForAll @DoubleRange(min = 0, max = 0.2) double loss,
            @ForAll @DoubleRange(min = 0, max = 0.05) double longDelay,
            @ForAll @DoubleRange(min = 0.3, max = 3) double demand,
            @ForAll boolean limiterCrashes,
            @ForAll boolean clientCrashes,
            @ForAll boolean configChanges,
            @ForAll boolean membershipChanges,
            @ForAll boolean holdsRate,
            @ForAll long seed) {
        int b = holdsRate ? Math.max(burst, GcraLimit.minimumBurst(rate, Math.min(factor, limiters))) : burst;
        RequestLeaseModel.Knobs k = new RequestLeaseModel.Knobs(clients, limiters, factor, rate, b, rho, 100_000,
                50_000, 2 * MS, loss, longDelay, demand, limiterCrashes, clientCrashes, configChanges,
                membershipChanges, false, 2_000 * MS, 3_000 * MS);
        RequestLeaseModel m = new RequestLeaseModel(seed, k, rules(rho, k.marginNs())).run();
        collect(m);
        assertThat(m.violation).as("invariant").isNull();
        // a grant of the client's own epoch always has the T and τ the client resolves itself
        assertThat(m.refusedGrants).isZero();
    }

    /**
     * With batches handed to NGINX after each leased admission (docs/design.md §12, "Batches in NGINX"), through
     * the same faults, crashes and changes: NGINX keeps admitting from its batch while its client is down or has
     * moved to a new epoch, and still every admission falls in its slot's window and every limit's bound holds over
     * every window (and the spec bound, without changes).
     */
    @Property(tries = 200)
    void batchesInNginxKeepEveryBound(
            @ForAll @IntRange(min = 1, max = 3) int clients,
            @ForAll @IntRange(min = 1, max = 5) int limiters,
            @ForAll @IntRange(min = 1, max = 4) int factor,
            @ForAll @DoubleRange(min = 20, max = 5000) double rate,
            @ForAll @IntRange(min = 0, max = 60) int burst,
            @ForAll @DoubleRange(min = 0, max = 0.02) double rho,
            @ForAll @DoubleRange(min = 0, max = 0.2) double loss,
            @ForAll @DoubleRange(min = 0, max = 0.05) double longDelay,
            @ForAll @DoubleRange(min = 0.3, max = 3) double demand,
            @ForAll boolean faults,
            @ForAll boolean changes,
            @ForAll @IntRange(min = 1, max = 64) int batchMax,
            @ForAll @LongRange(min = 0, max = 5_000_000) long minLifeNs,
            @ForAll boolean holdsRate,
            @ForAll long seed) {
        int b = holdsRate ? Math.max(burst, GcraLimit.minimumBurst(rate, Math.min(factor, limiters))) : burst;
        RequestLeaseModel.Knobs k = new RequestLeaseModel.Knobs(clients, limiters, factor, rate, b, rho, 100_000,
                50_000, 2 * MS, loss, longDelay, demand, faults, faults, changes, changes, !changes, 2_000 * MS,
                3_000 * MS);
        RequestLeaseModel m = new RequestLeaseModel(seed, k, rules(rho, k.marginNs())).withBatches(batchMax, minLifeNs)
                .run();
        Statistics.label("batched share").collect(m.admitted == 0 ? "none admitted"
                : m.admittedBatched * 10 / m.admitted * 10 + "%");
        assertThat(m.violation).as("invariant").isNull();
    }

    /**
     * Clients that each demand 2 × the rate (Poisson arrivals), with round trips far below τ + T and no faults,
     * are admitted at least 0.97 × the rate over 9 s, mostly from leases.
     *
     * <p>Not 1.5 ×: Poisson arrivals at 1.5 × leave lulls that a small burst cannot bridge, per request as much as
     * leased. At 50 req/s, g = 1, burst 5, over seeds 1–300 of this model: per request (no key leased) 4 runs of
     * 300 fell below 0.97 (the lowest 0.964), leased none (the lowest 0.976); at 2 × neither did (the lowest 0.989
     * and 0.996). jqwik found a leased run at 0.965 (seed 233). The closed loops of the integration tests offer far
     * more than 2 × (a refused client sends again at once).
     */
    @Property(tries = 30)
    void hotKeyUsesItsRate(
            @ForAll @IntRange(min = 1, max = 2) int clients,
            @ForAll @IntRange(min = 1, max = 4) int factor,
            @ForAll @DoubleRange(min = 50, max = 5000) double rate,
            @ForAll @DoubleRange(min = 0, max = 0.01) double rho,
            @ForAll @LongRange(min = 50_000, max = 500_000) long oneWay,
            @ForAll long seed) {
        int burst = Math.max(GcraLimit.minimumBurst(rate, factor), (int) Math.round(rate / factor * 0.1));
        RequestLeaseModel.Knobs k = new RequestLeaseModel.Knobs(clients, 4, factor, rate, burst, rho, 100_000,
                oneWay / 2, oneWay, 0, 0, 2.0 * clients, false, false, false, false, false, 0, 10_000 * MS);
        RequestLeaseModel m = new RequestLeaseModel(seed, k, rules(rho, k.marginNs())).run();
        assertThat(m.violation).isNull();
        assertThat(m.admittedRate()).as("admitted/s at rate %s, g %s, burst %s", rate, factor, burst)
                .isGreaterThanOrEqualTo(0.97 * rate);
        assertThat(m.admittedLeased).isGreaterThan(m.admitted / 2);
    }

    /**
     * Shows in the report which share of admissions came from leases, so a model that never leases is seen (a key
     * whose τ + T is too short for the round trip, or with burst 0, is not leased: about half the runs).
     */
    private static void collect(RequestLeaseModel m) {
        Statistics.label("leased share").collect(m.admitted == 0 ? "none admitted"
                : m.admittedLeased * 10 / m.admitted * 10 + "%");
    }
}
