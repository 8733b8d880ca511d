package dev.levee.lease;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class RequestLeaseHolderTest {

    private static final RequestLeaseRules EXACT = new RequestLeaseRules(0, 0, 1_000_000_000L, 100);
    private static final RequestLease.Epoch E1 = new RequestLease.Epoch(1, 1);
    private static final RequestLease.Epoch E2 = new RequestLease.Epoch(2, 1);

    /** T 10, τ 0, first slot at 0: slot k usable in local [r + 10(k − 1) + 1 (k > 1), s + 10k − 1). */
    private static RequestLease lease(long id, String limiter, RequestLease.Epoch e, int slots, long s) {
        return new RequestLease(id, e, limiter, 0, 10, 0, slots, s, s);
    }

    @Test
    void admitsInOrderThenWaitsForTheNextSlotThenAsksTheLimiter() {
        RequestLeaseHolder h = new RequestLeaseHolder(EXACT, E1);
        long base = Long.MAX_VALUE - 15; // the clock wraps during the test
        assertThat(h.waitNs(base)).isEqualTo(RequestLeaseHolder.NO_LEASE);
        assertThat(h.offer(lease(1, "a", E1, 3, base))).isTrue();
        assertThat(h.admit(base).id()).isEqualTo(1);
        assertThat(h.lastSlot()).isEqualTo(1);
        assertThat(h.admit(base)).isNull(); // slot 2 opens at base + 11
        assertThat(h.waitNs(base)).isEqualTo(11);
        assertThat(h.admit(base + 11)).isNotNull();
        assertThat(h.lastSlot()).isEqualTo(2);
        assertThat(h.unused(base + 11)).isEqualTo(1);
        // slot 3 ends at base + 29: past it, the slot is lost and the limiter must be asked
        assertThat(h.admit(base + 29)).isNull();
        assertThat(h.waitNs(base + 29)).isEqualTo(RequestLeaseHolder.NO_LEASE);
        assertThat(h.held()).isZero();
    }

    @Test
    void aBatchTakesTheUsableSlotsInOrderUntilTheFirstOnesWindowEnds() {
        RequestLeaseHolder h = new RequestLeaseHolder(EXACT, E1);
        // T 10, τ 25: slots 1–3 are usable at 0 (slot k from 10(k − 1) − 25), slot 4 from 6, slot 5 from 16
        h.offer(new RequestLease(1, E1, "a", 0, 10, 25, 6, 0, 0));
        assertThat(h.admit(0)).isNotNull(); // slot 1, the check's own
        RequestLeaseHolder.Batch b = h.take(0, 10, 0);
        assertThat(b.firstSlot()).isEqualTo(2);
        assertThat(b.slots()).isEqualTo(2); // slots 2 and 3: slot 4 is not usable yet
        assertThat(b.endNs()).isEqualTo(EXACT.slotEndNs(b.lease(), 2)).isEqualTo(19);
        assertThat(h.unused(0)).isEqualTo(3); // taken slots are gone from the holder
        assertThat(h.take(0, 10, 0)).isNull(); // nothing usable at 0 any more
        RequestLeaseHolder.Batch c = h.take(20, 1, 0); // slot 4 (until 39), at most 1
        assertThat(c.firstSlot()).isEqualTo(4);
        assertThat(c.slots()).isEqualTo(1);
        // slot 5's window ends at 49: no batch when it must last 30 ns from 20
        assertThat(h.take(20, 5, 30)).isNull();
        assertThat(h.take(20, 5, 29).slots()).isEqualTo(1);
    }

    @Test
    void slotsPastTheirWindowAreSkippedNotUsedLate() {
        RequestLeaseHolder h = new RequestLeaseHolder(EXACT, E1);
        h.offer(lease(1, "a", E1, 5, 0));
        assertThat(h.admit(35)).isNotNull();
        assertThat(h.lastSlot()).isEqualTo(4); // slots 1–3 ended at 9, 19, 29
        assertThat(h.unused(35)).isEqualTo(1);
    }

    @Test
    void takesTheUsableSlotThatEndsFirst() {
        RequestLeaseHolder h = new RequestLeaseHolder(EXACT, E1);
        h.offer(new RequestLease(1, E1, "a", 0, 10, 50, 3, 0, 0)); // slot 1 until 9
        h.offer(new RequestLease(2, E1, "b", 0, 100, 0, 1, 0, 0)); // slot 1 until 99
        assertThat(h.admit(5).limiterId()).isEqualTo("a");
        assertThat(h.admit(5).limiterId()).isEqualTo("a"); // slot 2 (τ 50) is open too and ends at 19
        assertThat(h.unused(5, "a")).isEqualTo(1);
        assertThat(h.unused(5, "b")).isEqualTo(1);
    }

    @Test
    void anEpochChangeDropsTheOldLeasesAndRefusesTheirLateGrants() {
        RequestLeaseHolder h = new RequestLeaseHolder(EXACT, E1);
        h.offer(lease(1, "a", E1, 3, 0));
        assertThat(h.epoch(E1)).isZero();
        assertThat(h.epoch(E2)).isEqualTo(1);
        assertThat(h.admit(0)).isNull();
        assertThat(h.offer(lease(2, "a", E1, 3, 0))).isFalse(); // a reply to a request sent under the old epoch
        assertThat(h.offer(lease(3, "a", E2, 3, 0))).isTrue();
        assertThat(h.epoch()).isEqualTo(E2);
    }

    /** Found by RequestLeaseModelTest: a duplicated reply arriving after the lease's only slot was used was used again. */
    @Test
    void aDuplicatedGrantArrivingAfterItsSlotsWereUsedIsRefused() {
        RequestLeaseHolder h = new RequestLeaseHolder(EXACT, E1);
        RequestLease one = lease(1, "a", E1, 1, 0); // its slot's window ends at 9
        assertThat(h.offer(one)).isTrue();
        assertThat(h.admit(2)).isSameAs(one);
        assertThat(h.waitNs(3)).isEqualTo(RequestLeaseHolder.NO_LEASE);
        assertThat(h.offer(one)).isFalse();
        assertThat(h.admit(4)).isNull();
        // past its last window the lease is forgotten, and a duplicate then has no window left
        assertThat(h.held()).isEqualTo(1);
        assertThat(h.admit(9)).isNull();
        assertThat(h.held()).isZero();
        assertThat(h.offer(one)).isTrue();
        assertThat(h.admit(9)).isNull();
    }

    @Test
    void aDuplicatedGrantIsHeldOnce() {
        RequestLeaseHolder h = new RequestLeaseHolder(EXACT, E1);
        assertThat(h.offer(lease(1, "a", E1, 1, 0))).isTrue();
        assertThat(h.offer(lease(1, "a", E1, 1, 0))).isFalse();
        assertThat(h.offer(lease(1, "b", E1, 1, 0))).isTrue(); // same id from another limiter is another lease
        for (int i = 0; i < 20; i++) {
            h.offer(lease(100 + i, "c", E1, 1, 0)); // grows past the initial capacity
        }
        assertThat(h.unused(0)).isEqualTo(22);
        h.clear();
        assertThat(h.admit(0)).isNull();
    }
}
