package dev.levee.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

/** {@link Gcra#reserve}: request-lease reservations of conformance slots (docs/design.md §12). */
class GcraReserveTest {

    private static final long MS = 1_000_000L;

    @Test
    void freshKeyReservesConsecutiveSlotsFromNow() {
        GcraLimit limit = GcraLimit.of(100, 3, 1); // T = 10 ms, τ = 20 ms
        Gcra.State s = new Gcra.State(limit.horizonNs());
        long now = Long.MAX_VALUE - 5 * MS;
        Gcra.Reservation r = Gcra.reserve(s, limit, now, 0, 5, 200 * MS);
        assertThat(r).isEqualTo(new Gcra.Reservation(5, 0, 10 * MS, 20 * MS, 0));
        assertThat(s.tat() - now).isEqualTo(50 * MS);
        assertThat(r.lifetimeNs()).isEqualTo(50 * MS);
        // TAT − now = 50 ms > τ: the next request is refused with the wait until TAT − τ
        assertThat(Gcra.attempt(s, limit, now)).isEqualTo(-30 * MS);
        assertThat(Gcra.reserve(s, limit, now, 0, 1, 200 * MS)).isEqualTo(new Gcra.Reservation(0, 0, 10 * MS,
                20 * MS, 30 * MS));
        // the horizon covers the reserved debt, so the table does not expire the key with it
        assertThat(s.horizonNs).isEqualTo(50 * MS);
    }

    @Test
    void leadMovesTheFirstSlotOnlyWhenTheKeyIsNotAlreadyFurtherAhead() {
        GcraLimit limit = GcraLimit.of(100, 3, 1); // T = 10 ms, τ = 20 ms
        Gcra.State s = new Gcra.State(limit.horizonNs());
        Gcra.Reservation a = Gcra.reserve(s, limit, 0, 3 * MS, 2, 200 * MS);
        assertThat(a.firstNs()).isEqualTo(3 * MS);
        assertThat(s.tat()).isEqualTo(23 * MS);
        // at 10 ms TAT − now = 13 ms ≤ τ: granted from TAT, the lead (1 ms) being behind it
        Gcra.Reservation b = Gcra.reserve(s, limit, 10 * MS, MS, 1, 200 * MS);
        assertThat(b.firstNs()).isEqualTo(13 * MS);
        assertThat(b.slots()).isEqualTo(1);
    }

    @Test
    void lifetimeCapsTheSlotsButNeverBelowOne() {
        GcraLimit limit = GcraLimit.of(100, 3, 1); // T = 10 ms, τ = 20 ms, τ + T = 30 ms
        Gcra.State s = new Gcra.State(limit.horizonNs());
        assertThat(Gcra.reserve(s, limit, 0, 0, 1000, 100 * MS).slots()).isEqualTo(10);
        assertThat(s.tat()).isEqualTo(100 * MS);
        // a lifetime below the key's own τ + T still lets one slot (ahead 20 ms ≤ τ: attempt would admit it)
        Gcra.State u = new Gcra.State(limit.horizonNs());
        Gcra.reserve(u, limit, 0, 0, 2, 100 * MS); // TAT 20 ms
        Gcra.Reservation r = Gcra.reserve(u, limit, 0, 0, 5, 0);
        assertThat(r.slots()).isEqualTo(1);
        assertThat(r.firstNs()).isEqualTo(20 * MS);
        assertThat(r.lifetimeNs()).isEqualTo(30 * MS);
        // and a lead larger than the lifetime allows is cut to fit one slot
        Gcra.State w = new Gcra.State(limit.horizonNs());
        Gcra.Reservation far = Gcra.reserve(w, limit, 0, 500 * MS, 3, 100 * MS);
        assertThat(far.firstNs()).isEqualTo(90 * MS);
        assertThat(far.slots()).isEqualTo(1);
    }

    @Test
    void blockedQuotaRefusesWithOneSecond() {
        GcraLimit limit = GcraLimit.of(0, 3, 1);
        Gcra.Reservation r = Gcra.reserve(new Gcra.State(0), limit, 0, 0, 3, 100 * MS);
        assertThat(r.granted()).isFalse();
        assertThat(r.waitNs()).isEqualTo(GcraLimit.BLOCKED_RETRY_NS);
    }

    @Test
    void badArgumentsAreRefusedByName() {
        GcraLimit limit = GcraLimit.of(10, 3, 1);
        Gcra.State s = new Gcra.State(limit.horizonNs());
        assertThatThrownBy(() -> Gcra.reserve(s, limit, 0, -1, 1, 0)).hasMessageContaining("leadNs");
        assertThatThrownBy(() -> Gcra.reserve(s, limit, 0, 0, 0, 0)).hasMessageContaining("slots");
        assertThatThrownBy(() -> Gcra.reserve(s, limit, 0, 0, 1, -1)).hasMessageContaining("maxLifetimeNs");
    }

    @Test
    void aLimitChangeRescalesAsAttemptDoes() {
        GcraLimit a = GcraLimit.of(100, 3, 1);
        GcraLimit b = GcraLimit.of(50, 3, 1);
        Gcra.State viaAttempt = new Gcra.State(a.horizonNs());
        Gcra.State viaReserve = new Gcra.State(a.horizonNs());
        Gcra.attempt(viaAttempt, a, 0);
        Gcra.attempt(viaReserve, a, 0);
        Gcra.attempt(viaAttempt, b, 5 * MS);
        Gcra.Reservation r = Gcra.reserve(viaReserve, b, 5 * MS, 0, 1, 0);
        assertThat(r.slots()).isEqualTo(1);
        assertThat(viaReserve.tat()).isEqualTo(viaAttempt.tat());
    }

    /**
     * In any mix of attempts and reservations under one limit: a reservation refuses exactly where an attempt would
     * (same wait), and the virtual times of all admitted requests and slots are at least T apart, each attempt
     * admitted within [v − τ, v] and each slot's window ending within the lifetime.
     */
    @Property(tries = 300)
    void reservationsKeepVirtualTimesApartAndRefuseAsAttemptWould(
            @ForAll @DoubleRange(min = 0.5, max = 5000) double rate,
            @ForAll @IntRange(min = 0, max = 40) int burst,
            @ForAll @IntRange(min = 1, max = 4) int g,
            @ForAll @LongRange(min = Long.MIN_VALUE, max = Long.MAX_VALUE) long origin,
            @ForAll @LongRange(min = 0, max = 300_000_000L) long maxLifetime,
            @ForAll @Size(min = 1, max = 120) List<@LongRange(min = 0, max = 30_000_000L) Long> gaps,
            @ForAll @Size(min = 120, max = 120) List<@IntRange(min = 0, max = 12) Integer> asks) {
        GcraLimit limit = GcraLimit.of(rate, burst, g);
        long t = limit.emissionIntervalNs();
        Gcra.State s = new Gcra.State(limit.horizonNs());
        List<Long> virtual = new ArrayList<>(); // offsets from origin
        long offset = 0;
        for (int i = 0; i < gaps.size(); i++) {
            offset += gaps.get(i);
            long now = origin + offset;
            int ask = asks.get(i);
            Gcra.State probe = copy(s);
            long single = Gcra.attempt(probe, limit, now);
            if (ask == 0) {
                long vOffset = s.used() && s.tat() - now > 0 ? s.tat() - origin : offset;
                long r = Gcra.attempt(s, limit, now);
                if (Gcra.admitted(r)) {
                    assertThat(vOffset - offset).isBetween(0L, limit.toleranceNs());
                    virtual.add(vOffset);
                }
            } else {
                long lead = (ask % 3) * t / 2;
                Gcra.Reservation r = Gcra.reserve(s, limit, now, lead, ask, maxLifetime);
                assertThat(r.granted()).isEqualTo(Gcra.admitted(single));
                if (!r.granted()) {
                    assertThat(r.waitNs()).isEqualTo(-single);
                    continue;
                }
                assertThat(r.slots()).isBetween(1, ask);
                assertThat(r.lifetimeNs()).isLessThanOrEqualTo(Math.max(maxLifetime, limit.horizonNs()));
                assertThat(s.tat() - now).isEqualTo(r.lifetimeNs());
                assertThat(s.horizonNs).isGreaterThanOrEqualTo(s.tat() - now);
                for (int k = 0; k < r.slots(); k++) {
                    virtual.add(offset + r.firstNs() + k * t);
                }
            }
        }
        for (int i = 1; i < virtual.size(); i++) {
            assertThat(virtual.get(i) - virtual.get(i - 1)).isGreaterThanOrEqualTo(t);
        }
    }

    private static Gcra.State copy(Gcra.State s) {
        Gcra.State c = new Gcra.State(s.horizonNs);
        c.tat = s.tat;
        c.used = s.used;
        c.limit = s.limit;
        return c;
    }
}
