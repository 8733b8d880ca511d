package dev.levee.lease;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.levee.core.GcraLimit;
import org.junit.jupiter.api.Test;

class RequestLeaseRulesTest {

    private static final RequestLease.Epoch E = new RequestLease.Epoch(1, 1);
    private static final long MS = 1_000_000L;

    private static RequestLease lease(long first, long t, long tau, int slots, long s, long r) {
        return new RequestLease(7, E, "l1", first, t, tau, slots, s, r);
    }

    @Test
    void withoutDriftASlotIsUsedFromTheReplyUntilItsEndFromTheSend() {
        RequestLeaseRules exact = new RequestLeaseRules(0, 0, 200 * MS, 100);
        RequestLease l = lease(0, 10, 20, 5, 100, 105); // T 10, τ 20, sent 100, received 105
        assertThat(exact.slotStartNs(l, 1)).isEqualTo(105); // v_1 − τ before the decision: from the reply
        assertThat(exact.slotEndNs(l, 1)).isEqualTo(100 + 10 - 1);
        assertThat(exact.slotStartNs(l, 3)).isEqualTo(105); // d = 20 = τ
        assertThat(exact.slotStartNs(l, 5)).isEqualTo(105 + 20 + 1); // d − τ = 20 after the reply at the earliest
        assertThat(exact.slotEndNs(l, 5)).isEqualTo(100 + 50 - 1);
    }

    @Test
    void driftStartsLaterAndEndsEarlierAndTheMarginEndsEarlier() {
        RequestLeaseRules rules = new RequestLeaseRules(0.01, 2, 200 * MS, 100);
        RequestLease l = lease(0, 10, 20, 5, 100, 105);
        assertThat(rules.slotStartNs(l, 5)).isEqualTo(105 + 21 + 1); // ⌈20 × 1.01⌉ + 1
        assertThat(rules.slotEndNs(l, 5)).isEqualTo(100 + 49 - 1 - 2); // ⌊50 × 0.99⌋ − 1 − ε
    }

    @Test
    void windowsAreComparedBySubtractionAcrossTheClocksWrap() {
        RequestLeaseRules rules = RequestLeaseRules.DEFAULTS;
        long s = Long.MAX_VALUE - 1_000;
        RequestLease l = lease(50 * MS, 10 * MS, 20 * MS, 2, s, s + 200_000);
        assertThat(rules.slotEndNs(l, 1) - rules.slotStartNs(l, 1)).isPositive();
        assertThat(rules.slotStartNs(l, 1) - s).isPositive(); // wrapped past MAX, still after s
    }

    @Test
    void grantsAreCheckedForSizeLifetimeAndTheClientsOwnLimit() {
        RequestLeaseRules rules = new RequestLeaseRules(0.01, 0, 100 * MS, 50);
        GcraLimit limit = GcraLimit.of(100, 3, 1); // T 10 ms, τ 20 ms
        assertThat(rules.problem(lease(0, 10 * MS, 20 * MS, 10, 0, 1), limit)).isNull();
        assertThat(rules.problem(lease(0, 10 * MS, 20 * MS, 51, 0, 1), null)).contains("51 slots");
        assertThat(rules.problem(lease(5 * MS, 10 * MS, 20 * MS, 10, 0, 1), limit)).contains("lasting");
        assertThat(rules.problem(lease(0, 9 * MS, 20 * MS, 10, 0, 1), limit)).contains("the quota gives");
        assertThat(rules.problem(lease(0, 10 * MS, 20 * MS, 1, 0, 1), GcraLimit.of(0, 3, 1))).isNotNull();
        // a key whose own τ + T passes the lifetime may still have one slot that long
        assertThat(rules.problem(lease(20 * MS, 100 * MS, 200 * MS, 1, 0, 1), null)).isNull();
    }

    @Test
    void aRestartedLimiterWaitsOutTheLongestLeaseOrTheKeysHorizon() {
        RequestLeaseRules rules = new RequestLeaseRules(0.01, 0, 100 * MS, 50);
        assertThat(rules.restartFenceNs(GcraLimit.of(100, 3, 1))).isEqualTo(100 * MS);
        assertThat(rules.restartFenceNs(GcraLimit.of(1, 3, 1))).isEqualTo(3_000 * MS);
    }

    @Test
    void leasingPaysOnlyWhenASlotsWindowOutlastsTheRoundTrip() {
        RequestLeaseRules rules = RequestLeaseRules.DEFAULTS; // ρ 1 %, ε 0.1 ms, 200 ms: 2 × (rtt·1.01 + 0.1 + 4) ms
        GcraLimit wide = GcraLimit.of(5000, 125, 4); // τ + T = 100 ms
        GcraLimit narrow = GcraLimit.of(5000, 1, 4); // τ + T = 0.8 ms
        assertThat(rules.worthLeasing(wide, 125, 500_000)).isTrue();
        assertThat(rules.worthLeasing(narrow, 1, 500_000)).isFalse();
        assertThat(rules.worthLeasing(GcraLimit.of(0, 5, 1), 5, 0)).isFalse();
        // burst 0: c = 1 as with burst 1, but §5's bound allows one request per limiter less
        assertThat(rules.worthLeasing(GcraLimit.of(1, 0, 1), 0, 0)).isFalse();
        assertThat(rules.worthLeasing(GcraLimit.of(1, 1, 1), 1, 0)).isTrue();
        assertThatThrownBy(() -> rules.worthLeasing(wide, 125, -1)).hasMessageContaining("rttNs");
        assertThatThrownBy(() -> rules.worthLeasing(wide, -1, 0)).hasMessageContaining("burst");
    }

    @Test
    void badRulesAndGrantsAreRefusedByName() {
        assertThatThrownBy(() -> new RequestLeaseRules(Double.NaN, 0, 1, 1)).hasMessageContaining("drift");
        assertThatThrownBy(() -> new RequestLeaseRules(0.5, 0, 1, 1)).hasMessageContaining("drift");
        assertThatThrownBy(() -> new RequestLeaseRules(0, -1, 1, 1)).hasMessageContaining("marginNs");
        assertThatThrownBy(() -> new RequestLeaseRules(0, 0, 0, 1)).hasMessageContaining("maxLifetimeNs");
        assertThatThrownBy(() -> new RequestLeaseRules(0, 0, 1, 0)).hasMessageContaining("maxSlots");
        assertThatThrownBy(() -> lease(-1, 1, 0, 1, 0, 0)).hasMessageContaining("firstNs");
        assertThatThrownBy(() -> lease(0, 0, 0, 1, 0, 0)).hasMessageContaining("intervalNs");
        assertThatThrownBy(() -> lease(0, 1, -1, 1, 0, 0)).hasMessageContaining("toleranceNs");
        assertThatThrownBy(() -> lease(0, 1, 0, 0, 0, 0)).hasMessageContaining("slots");
        assertThatThrownBy(() -> lease(0, 1, 0, 1, 5, 4)).hasMessageContaining("receivedNs");
    }

    @Test
    void offsetsAndLifetimeSaturateInsteadOfOverflowing() {
        RequestLease huge = lease(0, Long.MAX_VALUE / 2, 0, 4, 0, 0);
        assertThat(huge.offsetNs(4)).isEqualTo(Long.MAX_VALUE);
        assertThat(huge.lifetimeNs()).isEqualTo(Long.MAX_VALUE);
        assertThat(RequestLeaseRules.DEFAULTS.problem(huge, null)).isNotNull();
    }
}
