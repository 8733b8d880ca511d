package dev.levee.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

/**
 * {@link GcraTable#reserve} and the restart fence ({@link GcraTable#attempt(String, GcraLimit, long, long)}): request
 * leases on the table the limiter's checks use (docs/design.md §12).
 */
class GcraTableLeaseTest {

    private static final long MS = 1_000_000L;
    private static final long FENCE = 200 * MS;

    @Test
    void aReservationAndPerRequestChecksShareOneTat() {
        AtomicLong clock = new AtomicLong(Long.MAX_VALUE - FENCE - 5 * MS); // the ticker wraps during the test
        GcraTable table = GcraTable.create(clock::get, 1000);
        GcraLimit limit = GcraLimit.of(100, 3, 1); // T = 10 ms, τ = 20 ms
        long now = clock.addAndGet(FENCE); // past the restart fence (reserve fences a fresh key for its lifetime)
        assertThat(table.reserve("k", limit, now, 0, 2, FENCE)).isEqualTo(new Gcra.Reservation(2, 0, 10 * MS, 20 * MS, 0));
        assertThat(table.attempt("k", limit, now)).as("TAT − now = 20 ms = τ: the last of the burst").isZero();
        assertThat(table.attempt("k", limit, now)).as("the burst is used").isEqualTo(-10 * MS);
        Gcra.Reservation refused = table.reserve("k", limit, now, 0, 1, FENCE);
        assertThat(refused.granted()).isFalse();
        assertThat(refused.waitNs()).as("the wait attempt gives").isEqualTo(10 * MS);
        clock.addAndGet(10 * MS);
        Gcra.Reservation next = table.reserve("k", limit, clock.get(), 0, 3, FENCE);
        assertThat(next.firstNs()).as("continues after the TAT the checks left").isEqualTo(20 * MS);
        assertThat(table.peek("k").tat() - clock.get()).isEqualTo(50 * MS);
    }

    /** A key with reserved debt beyond τ + T keeps it: the entry expires only when TAT is past. */
    @Test
    void aKeyWithReservedSlotsIsNotForgottenBeforeItsTat() {
        AtomicLong clock = new AtomicLong(-3 * MS);
        GcraTable table = GcraTable.create(clock::get, 1000);
        GcraLimit limit = GcraLimit.of(100, 3, 1); // horizon τ + T = 30 ms
        clock.addAndGet(FENCE);
        assertThat(table.reserve("k", limit, clock.get(), 0, 15, FENCE).slots()).isEqualTo(15); // TAT = now + 150 ms
        clock.addAndGet(100 * MS);
        table.cleanUp();
        assertThat(table.peek("k")).as("100 ms later, 50 ms of debt left").isNotNull();
        assertThat(table.attempt("k", limit, clock.get())).as("refused until TAT − τ").isEqualTo(-30 * MS);
        assertThat(table.expirations()).isZero();
        clock.addAndGet(200 * MS);
        table.cleanUp();
        assertThat(table.peek("k")).as("expired once its TAT is past").isNull();
    }

    @Test
    void badArgumentsAndBlockedQuotasMakeNoState() {
        AtomicLong clock = new AtomicLong();
        GcraTable table = GcraTable.create(clock::get, 1000);
        GcraLimit limit = GcraLimit.of(100, 3, 1);
        assertThatThrownBy(() -> table.reserve("k", limit, 0, -1, 1, FENCE)).hasMessageContaining("leadNs");
        assertThatThrownBy(() -> table.reserve("k", limit, 0, 0, 0, FENCE)).hasMessageContaining("slots");
        assertThatThrownBy(() -> table.reserve("k", limit, 0, 0, 1, -1)).hasMessageContaining("maxLifetimeNs");
        assertThat(table.reserve("k", GcraLimit.of(0, 0, 1), 0, 0, 1, FENCE).waitNs()).isEqualTo(GcraLimit.BLOCKED_RETRY_NS);
        assertThat(table.peek("k")).isNull();
    }

    /**
     * The restart fence: a key first decided within F of the table's creation S starts with TAT = S + F; per request
     * it admits again from S + F − τ (v = S + F); a key first seen after F, or decided without a fence, is as before.
     */
    @Test
    void aFencedKeyAdmitsNothingWithAVirtualTimeBeforeTheFence() {
        AtomicLong clock = new AtomicLong(Long.MAX_VALUE - 50 * MS); // S; the fence ends after the wrap
        long start = clock.get();
        GcraTable table = GcraTable.create(clock::get, 1000);
        GcraLimit limit = GcraLimit.of(100, 3, 1); // T = 10 ms, τ = 20 ms
        clock.addAndGet(30 * MS);
        assertThat(table.attempt("fenced", limit, clock.get(), FENCE)).as("wait until S + F − τ").isEqualTo(-150 * MS);
        assertThat(table.attempt("plain", limit, clock.get())).as("no fence: a full burst").isEqualTo(2);
        assertThat(table.freshWithinHorizon()).as("the fenced key lost nothing").isZero();
        clock.set(start + 179 * MS);
        assertThat(table.attempt("fenced", limit, clock.get(), FENCE)).isNegative();
        clock.set(start + 180 * MS);
        assertThat(table.attempt("fenced", limit, clock.get(), FENCE)).as("v = S + F").isZero();
        assertThat(table.peek("fenced").tat()).isEqualTo(start + FENCE + 10 * MS);
        assertThat(table.reserve("fenced-lease", limit, clock.get(), 0, 5, FENCE).firstNs())
                .as("a reservation within the fence: v_1 = S + F").isEqualTo(20 * MS);
        clock.set(start + FENCE);
        assertThat(table.attempt("late", limit, clock.get(), FENCE)).as("first seen after the fence: a full burst")
                .isEqualTo(2);
    }

    /**
     * A key the cap evicts with slots outstanding is treated as restarted (docs/design.md §12): a fenced key made
     * before the evicted TAT starts at it, so the new v's stay T apart from the evicted slots; unfenced keys start
     * with a full burst as before.
     */
    @Test
    void aKeyEvictedWithReservedSlotsStartsAgainAfterThem() {
        AtomicLong clock = new AtomicLong(-FENCE);
        GcraTable table = GcraTable.create(clock::get, 1);
        GcraLimit limit = GcraLimit.of(100, 3, 1); // T = 10 ms, τ = 20 ms
        long now = clock.addAndGet(FENCE);
        assertThat(table.reserve("leased", limit, now, 0, 10, FENCE).slots()).isEqualTo(10); // TAT = now + 100 ms
        for (int i = 0; i < 50 && table.peek("leased") != null; i++) {
            table.attempt("other", limit, now); // W-TinyLFU admits it over "leased" once it is used more often
            table.cleanUp();
        }
        assertThat(table.peek("leased")).as("evicted by the cap of one key").isNull();
        assertThat(table.evictions()).isPositive();
        clock.addAndGet(10 * MS);
        now = clock.get();
        assertThat(table.attempt("plain", limit, now)).as("unfenced: a full burst, as before").isEqualTo(2);
        assertThat(table.attempt("leased", limit, now, FENCE)).as("refused until the evicted TAT − τ")
                .isEqualTo(-70 * MS);
        assertThat(table.reserve("leased", limit, now + 70 * MS, 0, 1, FENCE).firstNs()).as("v_1 = the evicted TAT")
                .isEqualTo(20 * MS);
    }

    /** Keys never leased that the cap evicts fence nothing: a flood of new keys gets a full burst each, as before. */
    @Test
    void evictingKeysThatWereNeverLeasedFencesNothing() {
        AtomicLong clock = new AtomicLong();
        GcraTable table = GcraTable.create(clock::get, 1);
        GcraLimit limit = GcraLimit.of(100, 3, 1);
        long now = clock.addAndGet(FENCE);
        for (int i = 0; i < 20; i++) {
            assertThat(table.attempt("flood-" + i, limit, now, FENCE)).as("flood-%d", i).isEqualTo(2);
            table.cleanUp();
        }
        assertThat(table.evictions()).isPositive();
    }

    /**
     * The restart fence against a model of the old incarnation: whatever an incarnation admitted and granted before it
     * ended (at E), a new table made at S ≥ E and deciding every key behind the fence F gives no virtual time closer
     * than T to any of the old ones, for keys whose τ + T ≤ F (docs/design.md §12: old slots have v ≤ E + F − T, old
     * per-request admissions v ≤ E + τ).
     */
    @Property(tries = 300)
    void aNewIncarnationsFirstVirtualTimeIsAtLeastTAfterTheOldOnes(
            @ForAll @DoubleRange(min = 5, max = 20000) double rate,
            @ForAll @IntRange(min = 1, max = 40) int burst,
            @ForAll @IntRange(min = 1, max = 4) int g,
            @ForAll @LongRange(min = Long.MIN_VALUE / 2, max = Long.MAX_VALUE / 2) long origin,
            @ForAll @Size(min = 1, max = 60) List<@LongRange(min = 0, max = 20_000_000L) Long> oldGaps,
            @ForAll @Size(min = 60, max = 60) List<@IntRange(min = 0, max = 40) Integer> asks,
            @ForAll @LongRange(min = 0, max = 300_000_000L) long restartGap,
            @ForAll @Size(min = 1, max = 60) List<@LongRange(min = 0, max = 20_000_000L) Long> newGaps) {
        GcraLimit limit = GcraLimit.of(rate, burst, g);
        if (limit.horizonNs() > FENCE) {
            return; // not leased, not fenced (docs/decisions.md, "Request leases: the limiter side")
        }
        long t = limit.emissionIntervalNs();
        AtomicLong clock = new AtomicLong(origin);
        GcraTable old = GcraTable.create(clock::get, 1000);
        long lastOld = Long.MIN_VALUE; // offset from origin of the old incarnation's latest virtual time
        long now = origin;
        for (int i = 0; i < oldGaps.size(); i++) {
            now += oldGaps.get(i);
            long[] v = decide(old, limit, now, asks.get(i));
            if (v != null) {
                lastOld = Math.max(lastOld, v[1] - origin);
            }
        }
        clock.set(now + restartGap); // S ≥ E
        GcraTable fresh = GcraTable.create(clock::get, 1000);
        now = clock.get();
        for (int i = 0; i < newGaps.size(); i++) {
            now += newGaps.get(i);
            long[] v = decide(fresh, limit, now, asks.get(asks.size() - 1 - i));
            if (v != null) {
                if (lastOld != Long.MIN_VALUE) {
                    assertThat(v[0] - origin - lastOld).as("new v − old v").isGreaterThanOrEqualTo(t);
                }
                return; // the later ones are T apart from this one (GcraReserveTest)
            }
        }
    }

    /**
     * A check (ask 0) or a reservation of {@code ask} slots behind the fence; returns the first and the last virtual
     * time it gave (v_1 and v_m of a reservation, v twice for a check), or null when refused.
     */
    private static long[] decide(GcraTable table, GcraLimit limit, long now, int ask) {
        if (ask == 0) {
            long r = table.attempt("k", limit, now, FENCE);
            long v = table.peek("k").tat() - limit.emissionIntervalNs();
            return Gcra.admitted(r) ? new long[] {v, v} : null;
        }
        Gcra.Reservation r = table.reserve("k", limit, now, (ask % 3) * MS, ask, FENCE);
        return r.granted() ? new long[] {now + r.firstNs(), now + r.firstNs() + (r.slots() - 1) * r.intervalNs()} : null;
    }
}
