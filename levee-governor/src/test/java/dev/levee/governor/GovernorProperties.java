package dev.levee.governor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.From;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * Invariants of the governor and the admission queue for arbitrary sequences of requests, sizes,
 * principals, cancellations and idle gaps, and arbitrary clock origins (docs/design.md §8).
 */
class GovernorProperties {

    static final int STREAMS = 10;
    static final int PRINCIPALS = 5;

    enum Kind { ACQUIRE, TRY_ACQUIRE, CANCEL, CANCEL_FUTURE, CLOSE_STREAM, TOGGLE_OWNERSHIP, ADVANCE, IDLE }

    record Action(Kind kind, int stream, long amount) {
    }

    @Provide
    Arbitrary<Long> rates() {
        return Arbitraries.frequencyOf(
                Tuple.of(1, Arbitraries.just(0L)),
                Tuple.of(1, Arbitraries.longs().between(10, 10_000)),
                Tuple.of(5, Arbitraries.longs().between(10_000, 4_000_000)),
                Tuple.of(1, Arbitraries.longs().between(4_000_000, 40_000_000)));
    }

    @Provide
    Arbitrary<Long> origins() {
        return Arbitraries.oneOf(
                Arbitraries.of(0L, -1L, Long.MIN_VALUE, Long.MAX_VALUE, Long.MAX_VALUE - 5_000_000_000L),
                Arbitraries.longs());
    }

    @Provide
    Arbitrary<Action> actions() {
        Arbitrary<Integer> stream = Arbitraries.integers().between(0, STREAMS - 1);
        return Arbitraries.frequencyOf(
                Tuple.of(8, Combinators.combine(stream, Arbitraries.longs().between(0, 150_000))
                        .as((s, n) -> new Action(Kind.ACQUIRE, s, n))),
                Tuple.of(2, Combinators.combine(stream, Arbitraries.longs().between(0, 70_000))
                        .as((s, n) -> new Action(Kind.TRY_ACQUIRE, s, n))),
                Tuple.of(2, stream.map(s -> new Action(Kind.CANCEL, s, 0))),
                Tuple.of(1, stream.map(s -> new Action(Kind.CANCEL_FUTURE, s, 0))),
                Tuple.of(1, stream.map(s -> new Action(Kind.CLOSE_STREAM, s, 0))),
                Tuple.of(1, Arbitraries.just(new Action(Kind.TOGGLE_OWNERSHIP, 0, 0))),
                Tuple.of(6, Arbitraries.longs().between(0, 300_000_000L)
                        .map(ns -> new Action(Kind.ADVANCE, 0, ns))),
                Tuple.of(1, Arbitraries.longs().between(1_000_000_000L, 30_000_000_000L)
                        .map(ns -> new Action(Kind.IDLE, 0, ns))));
    }

    /**
     * For every window of the timeline (in particular those starting at creation or at a full
     * bucket): bytes granted ≤ rate × elapsed + burst, for the shared bucket and for each
     * principal; no grant exceeds its quantum; nothing is granted without ownership (fencing);
     * the waiting requests are exactly the incomplete futures and never more than the bound;
     * after close every request has ended.
     */
    @Property(tries = 500)
    void grantedBytesNeverExceedRateTimesElapsedPlusBurst(
            @ForAll("rates") long sharedRate,
            @ForAll @Size(PRINCIPALS) List<@From("rates") Long> principalRates,
            @ForAll @IntRange(min = 1, max = 12) int maxWaiting,
            @ForAll("origins") long origin,
            @ForAll @Size(min = 30, max = 200) List<@From("actions") Action> actions) {
        GovernorConfig.Builder b = GovernorConfig.builder(Direction.UPLOAD).rate(sharedRate).maxWaitingQuanta(maxWaiting);
        for (int i = 0; i < PRINCIPALS; i++) {
            b.principalRate("P" + i, principalRates.get(i));
        }
        GovernorConfig config = b.build();
        FakeClock clock = new FakeClock(origin);
        GrantLog log = new GrantLog();
        AtomicBoolean owned = new AtomicBoolean(true);
        DrrBandwidthGovernor g = new DrrBandwidthGovernor(config, clock, clock, owned::get, log);
        GovernedStream[] streams = new GovernedStream[STREAMS];
        for (int i = 0; i < STREAMS; i++) {
            streams[i] = g.openStream("P" + i % PRINCIPALS);
        }
        List<CompletableFuture<Void>> last = new ArrayList<>(Collections.nCopies(STREAMS, null));
        List<CompletableFuture<Void>> all = new ArrayList<>();

        for (Action a : actions) {
            int i = a.stream();
            GovernedStream s = streams[i];
            boolean outstanding = last.get(i) != null && !last.get(i).isDone();
            boolean ownedBefore = owned.get();
            int grantsBefore = log.grants.size();
            switch (a.kind()) {
                case ACQUIRE -> {
                    if (outstanding) {
                        assertThatThrownBy(() -> s.acquireAsync(a.amount())).isInstanceOf(IllegalStateException.class);
                    } else {
                        last.set(i, s.acquireAsync(a.amount()).toCompletableFuture());
                        all.add(last.get(i));
                    }
                }
                case TRY_ACQUIRE -> {
                    if (outstanding) {
                        assertThatThrownBy(() -> s.tryAcquire(a.amount())).isInstanceOf(IllegalStateException.class);
                    } else if (!owned.get()) {
                        assertThat(s.tryAcquire(a.amount()) && a.amount() > 0).as("granted while fenced").isFalse();
                    } else {
                        s.tryAcquire(a.amount());
                    }
                }
                case CANCEL -> assertThat(s.cancel()).isEqualTo(outstanding);
                case CANCEL_FUTURE -> {
                    if (last.get(i) != null) {
                        last.get(i).cancel(true);
                    }
                }
                case CLOSE_STREAM -> {
                    s.close();
                    if (!owned.get()) { // fenced: a new stream is refused; reopen as the owner regains it
                        assertThatThrownBy(() -> g.openStream(s.principalId())).isInstanceOf(OwnershipLostException.class);
                        owned.set(true);
                        streams[i] = g.openStream(s.principalId());
                        owned.set(false);
                    } else {
                        streams[i] = g.openStream(s.principalId());
                    }
                    last.set(i, null);
                }
                case TOGGLE_OWNERSHIP -> {
                    owned.set(!owned.get());
                    if (owned.get()) {
                        g.wake(); // what the lease keeper does when it regains the budget
                    }
                }
                case ADVANCE, IDLE -> clock.advance(a.amount());
            }
            if (!ownedBefore && !owned.get()) {
                assertThat(log.grants).as("granted without ownership").hasSize(grantsBefore);
            }
            long incomplete = all.stream().filter(f -> !f.isDone()).count();
            GovernorStats st = g.stats();
            assertThat(st.waitingQuanta()).isEqualTo(incomplete).isLessThanOrEqualTo(maxWaiting);
            assertThat(st.grantedBytes()).isEqualTo(log.total());
        }
        g.close();
        assertThat(all).allMatch(CompletableFuture::isDone);
        assertThat(g.stats().waitingQuanta()).isZero();
        assertThat(clock.pending()).isZero();

        log.assertCeiling(sharedRate);
        for (int p = 0; p < PRINCIPALS; p++) {
            String id = "P" + p;
            log.assertCeiling(id, principalRates.get(p));
            long quantum = config.quantumBytes(id);
            assertThat(log.of(id)).allSatisfy(gr -> assertThat(gr.bytes()).isBetween(1L, quantum));
        }
    }

    enum AdmissionKind { ADMIT, RELEASE, CANCEL, ADVANCE }

    record AdmissionAction(AdmissionKind kind, int principal, AdmissionClass admissionClass, long amount) {
    }

    @Provide
    Arbitrary<AdmissionAction> admissionActions() {
        Arbitrary<Integer> principal = Arbitraries.integers().between(0, 3);
        Arbitrary<AdmissionClass> cls = Arbitraries.of(AdmissionClass.class);
        return Arbitraries.frequencyOf(
                Tuple.of(6, Combinators.combine(principal, cls)
                        .as((p, c) -> new AdmissionAction(AdmissionKind.ADMIT, p, c, 0))),
                Tuple.of(4, Combinators.combine(principal, cls, Arbitraries.longs().between(0, 1000))
                        .as((p, c, n) -> new AdmissionAction(AdmissionKind.RELEASE, p, c, n))),
                Tuple.of(1, Combinators.combine(principal, cls, Arbitraries.longs().between(0, 1000))
                        .as((p, c, n) -> new AdmissionAction(AdmissionKind.CANCEL, p, c, n))),
                Tuple.of(2, Arbitraries.longs().between(0, 3_000_000_000L)
                        .map(ns -> new AdmissionAction(AdmissionKind.ADVANCE, 0, AdmissionClass.DOWNLOAD, ns))));
    }

    /**
     * Per principal and class: in flight never exceeds the limit; a request waits only while its
     * principal and class are at the limit (a blocked principal holds up nobody else); requests
     * are admitted in FIFO order; waiters never exceed their bound; every request ends admitted,
     * refused or cancelled; once everything is released and the queue closed, the gauges are zero.
     */
    @Property(tries = 300)
    void admissionRespectsLimitsAndServesEachPrincipalInOrder(
            @ForAll @IntRange(min = 1, max = 3) int uploads,
            @ForAll @IntRange(min = 1, max = 4) int downloads,
            @ForAll @IntRange(min = 0, max = 8) int maxWaiters,
            @ForAll("origins") long origin,
            @ForAll @Size(min = 1, max = 150) List<@From("admissionActions") AdmissionAction> actions) {
        AdmissionConfig config = new AdmissionConfig(uploads, downloads, maxWaiters, 2_000_000_000L);
        FakeClock clock = new FakeClock(origin);
        AdmissionQueue q = AdmissionQueue.create(config, clock, clock);
        Map<String, List<Request>> byKey = new HashMap<>();
        List<Request> all = new ArrayList<>();
        long seq = 0;
        for (AdmissionAction a : actions) {
            String key = "P" + a.principal() + "/" + a.admissionClass();
            List<Request> rs = byKey.computeIfAbsent(key, k -> new ArrayList<>());
            switch (a.kind()) {
                case ADMIT -> {
                    Request r = new Request(a.admissionClass(), seq++,
                            q.admitAsync("P" + a.principal(), a.admissionClass()).toCompletableFuture());
                    rs.add(r);
                    all.add(r);
                }
                case RELEASE -> {
                    if (!rs.isEmpty()) {
                        Request r = rs.get((int) (a.amount() % rs.size()));
                        if (r.admitted()) {
                            r.future.join().close(); // a second close is a no-op
                            r.released = true;
                        }
                    }
                }
                case CANCEL -> {
                    if (!rs.isEmpty()) {
                        rs.get((int) (a.amount() % rs.size())).future.cancel(true);
                    }
                }
                case ADVANCE -> clock.advance(a.amount());
            }
            int waiting = 0;
            int[] inFlight = new int[2];
            for (List<Request> list : byKey.values()) {
                if (list.isEmpty()) {
                    continue;
                }
                AdmissionClass c = list.get(0).admissionClass;
                long held = list.stream().filter(Request::held).count();
                long waiters = list.stream().filter(r -> !r.future.isDone()).count();
                inFlight[c.ordinal()] += (int) held;
                waiting += (int) waiters;
                assertThat(held).isLessThanOrEqualTo(config.limit(c));
                if (waiters > 0) {
                    assertThat(held).as("waits only at the limit").isEqualTo(config.limit(c));
                }
                long oldestWaiting = list.stream().filter(r -> !r.future.isDone()).mapToLong(r -> r.seq).min()
                        .orElse(Long.MAX_VALUE);
                assertThat(list.stream().filter(Request::admitted).mapToLong(r -> r.seq))
                        .as("FIFO").allSatisfy(x -> assertThat(x).isLessThan(oldestWaiting));
            }
            AdmissionStats st = q.stats();
            assertThat(st.waiting()).isEqualTo(waiting).isLessThanOrEqualTo(maxWaiters);
            assertThat(st.inFlightUploads()).isEqualTo(inFlight[AdmissionClass.MUTATING_UPLOAD.ordinal()]);
            assertThat(st.inFlightDownloads()).isEqualTo(inFlight[AdmissionClass.DOWNLOAD.ordinal()]);
        }
        q.close();
        assertThat(all).allMatch(r -> r.future.isDone());
        for (Request r : all) {
            if (r.held()) {
                r.future.join().close();
            }
        }
        AdmissionStats st = q.stats();
        assertThat(st.inFlightUploads()).isZero();
        assertThat(st.inFlightDownloads()).isZero();
        assertThat(st.waiting()).isZero();
        assertThat(clock.pending()).isZero();
    }

    /** One admission request of the property above. */
    static final class Request {
        final AdmissionClass admissionClass;
        final long seq;
        final CompletableFuture<Admission> future;
        boolean released;

        Request(AdmissionClass admissionClass, long seq, CompletableFuture<Admission> future) {
            this.admissionClass = admissionClass;
            this.seq = seq;
            this.future = future;
        }

        boolean admitted() {
            return future.isDone() && !future.isCompletedExceptionally();
        }

        boolean held() {
            return admitted() && !released;
        }
    }
}
