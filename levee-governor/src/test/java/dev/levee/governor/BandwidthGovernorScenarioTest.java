package dev.levee.governor;

import static dev.levee.governor.Direction.DOWNLOAD;
import static dev.levee.governor.Direction.UPLOAD;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * Reproduces the acceptance scenarios of issue 5 (docs/design.md §8) on a fake clock and fake
 * timer: whole timelines, no sleeps. Clocks start near {@link Long#MAX_VALUE} or below zero so
 * that times wrap during the tests.
 */
class BandwidthGovernorScenarioTest {

    static final long KiB = 1024;
    static final long MiB = 1024 * KiB;
    static final long GiB = 1024 * MiB;
    static final long MS = 1_000_000L;
    static final long SEC = 1_000_000_000L;

    static DrrBandwidthGovernor governor(GovernorConfig config, FakeClock clock, GrantLog log) {
        return new DrrBandwidthGovernor(config, clock, clock, OwnershipCheck.alwaysOwned(), log);
    }

    /** Runs timer tasks until {@code f} completes; fails if the governor stalls (no task pending). */
    static void runUntilDone(FakeClock clock, CompletableFuture<?> f) {
        while (!f.isDone()) {
            assertThat(clock.runNext()).as("governor stalled: nothing scheduled but the request waits").isTrue();
        }
    }

    @Test
    void smallRequestOfAnotherPrincipalIsGrantedWithinOneRoundWhileOneStreamsFullQuanta() {
        FakeClock clock = new FakeClock(Long.MAX_VALUE - 3 * SEC); // wraps after 3 s
        GrantLog log = new GrantLog();
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, MiB, 0), clock, log);
        Pump a = Pump.start(g.openStream("A"), 64 * KiB, 1L << 50, clock::read);
        clock.advance(2 * SEC);
        GovernedStream b = g.openStream("B");
        long worst = 0;
        for (int k = 0; k < 80; k++) {
            clock.advance(29 * MS + k * 1_234_567L); // B arrives at every phase of A's 62.5 ms cycle
            long asked = clock.read();
            CompletableFuture<Void> f = b.acquireAsync(1500).toCompletableFuture();
            runUntilDone(clock, f);
            f.join();
            worst = Math.max(worst, clock.read() - asked);
        }
        assertThat(worst).as("B's worst latency, ns").isLessThanOrEqualTo(70 * MS);
        assertThat(a.failure).isNull();
        assertThat(a.granted).isGreaterThan(0);
        log.assertCeiling(MiB);
    }

    @Test
    void largeQuantaAreNeverStarvedByTwentyPrincipalsFloodingSmallQuanta() {
        FakeClock clock = new FakeClock(-7 * SEC);
        GrantLog log = new GrantLog();
        DrrBandwidthGovernor g = governor(GovernorConfig.of(DOWNLOAD, MiB, 0), clock, log);
        List<String> principals = new ArrayList<>();
        principals.add("A");
        Pump a = Pump.start(g.openStream("A"), 64 * KiB, 1L << 50, clock::read);
        List<Pump> flood = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            String id = "F" + i;
            principals.add(id);
            for (int s = 0; s < 12; s++) { // 1 + 20 × 12 = 241 streams ≤ 256 waiting quanta
                flood.add(Pump.start(g.openStream(id), KiB, 1L << 50, clock::read));
            }
        }
        long start = clock.read();
        long[] atStart = null;
        long maxSpread = 0;
        for (int sample = 0; sample < 600; sample++) { // 60 s, sampled every 100 ms
            clock.advance(100 * MS);
            long[] totals = principals.stream().mapToLong(log::total).toArray();
            if (sample == 9) {
                atStart = totals; // measure shares from 1 s on, once every stream is queued
            }
            if (atStart != null) {
                long min = Long.MAX_VALUE;
                long max = Long.MIN_VALUE;
                for (int i = 0; i < totals.length; i++) {
                    long d = totals[i] - atStart[i];
                    min = Math.min(min, d);
                    max = Math.max(max, d);
                }
                maxSpread = Math.max(maxSpread, max - min);
            }
        }
        assertThat(a.failure).isNull();
        assertThat(flood).allSatisfy(p -> assertThat(p.failure).isNull());
        assertThat(g.stats().refusals()).isZero();
        // never starved: a round is 21 principals × one 64 KiB quantum at 1 MiB/s = 1.3125 s
        List<GrantLog.Grant> aGrants = log.of("A");
        long maxGap = 0;
        for (int i = 1; i < aGrants.size(); i++) {
            maxGap = Math.max(maxGap, aGrants.get(i).at() - aGrants.get(i - 1).at());
        }
        assertThat(maxGap).as("A's longest wait between grants, ns").isLessThanOrEqualTo(1_320 * MS);
        // equal shares: every backlogged principal gets one quantum (64 KiB) per round, so at any
        // sample the shares differ by at most the quantum of the round in progress
        assertThat(maxSpread).as("largest spread of byte shares, bytes").isLessThanOrEqualTo(64 * KiB);
        long aShare = log.total("A") - atStart[0];
        long elapsedRounds = (clock.read() - start) / (1_312_500 * 1000L);
        assertThat(aShare).isGreaterThanOrEqualTo((elapsedRounds - 2) * 64 * KiB);
        log.assertCeiling(MiB);
    }

    @Test
    void oneMiBChunkAtPrincipalRate100KiBpsIsSplitIntoBurstSizedQuantaAndNeverStalls() {
        FakeClock clock = new FakeClock(Long.MAX_VALUE - 4 * SEC);
        GrantLog log = new GrantLog();
        long rate = 100 * KiB;
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, 0, rate), clock, log);
        GovernedStream s = g.openStream("A");
        assertThat(s.quantumBytes()).isEqualTo(10 * KiB); // burst = rate / 10
        long t0 = clock.read();
        CompletableFuture<Void> f = s.acquireAsync(MiB).toCompletableFuture();
        runUntilDone(clock, f);
        f.join();
        double seconds = (clock.read() - t0) / 1e9;
        // The first 10 KiB come from the full bucket: (1 MiB − 10 KiB) / 100 KiB/s = 10.14 s.
        // (The "10 s" is the decimal-unit figure; see the next test.)
        assertThat(seconds).isCloseTo(10.14, within(0.1));
        assertThat(log.grants).allSatisfy(gr -> assertThat(gr.bytes()).isLessThanOrEqualTo(10 * KiB));
        assertThat(log.total()).isEqualTo(MiB);
        for (int i = 1; i < log.grants.size(); i++) { // never stalls: a quantum every 0.1 s
            assertThat(log.grants.get(i).at() - log.grants.get(i - 1).at()).isLessThanOrEqualTo(SEC / 10 + 1);
        }
        log.assertCeiling("A", rate);
    }

    @Test
    void oneMegabyteChunkAtPrincipalRate100kBpsFinishesAtTenSecondsWithinATenth() {
        FakeClock clock = new FakeClock(0);
        GrantLog log = new GrantLog();
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, 0, 100_000), clock, log);
        GovernedStream s = g.openStream("A");
        CompletableFuture<Void> f = s.acquireAsync(1_000_000).toCompletableFuture();
        runUntilDone(clock, f);
        assertThat(clock.read() / 1e9).isCloseTo(10.0, within(0.1)); // 9.9 s: 100 quanta of 10 kB
        assertThat(log.grants).hasSize(100).allSatisfy(gr -> assertThat(gr.bytes()).isEqualTo(10_000));
        log.assertCeiling("A", 100_000);
    }

    @Test
    void oneGiBIn1MiBChunksAt10MiBpsHoldsTheCeilingAtEverySampleAndTakes102point4Seconds() {
        FakeClock clock = new FakeClock(Long.MIN_VALUE + SEC);
        GrantLog log = new GrantLog();
        long rate = 10 * MiB;
        DrrBandwidthGovernor g = governor(GovernorConfig.of(DOWNLOAD, rate, 0), clock, log);
        long t0 = clock.read();
        Pump p = Pump.start(g.openStream("A"), MiB, GiB, clock::read);
        long burst = GovernorConfig.burstBytes(rate);
        while (!p.finished) {
            assertThat(clock.runNext()).isTrue();
            long elapsed = clock.read() - t0;
            // sample after every wake-up: granted ≤ rate × t + burst
            assertThat((double) g.stats().grantedBytes()).isLessThanOrEqualTo(rate * (elapsed / 1e9) + burst);
        }
        assertThat(p.failure).isNull();
        assertThat(p.granted).isEqualTo(GiB);
        assertThat((p.finishedAt - t0) / 1e9).isCloseTo(102.4, within(102.4 * 0.005));
        assertThat(log.grants).allSatisfy(gr -> assertThat(gr.bytes()).isLessThanOrEqualTo(64 * KiB));
        log.assertCeiling(rate);
    }

    @Test
    void threeThousandBytesPerSecondIsAchievedWithinHalfAPercentThenTenGBpsAfterIdleDoesNotOverflow() {
        FakeClock clock = new FakeClock(Long.MAX_VALUE - 70 * SEC); // the 30 s idle crosses the wrap
        GrantLog log = new GrantLog();
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, 3_000, 0), clock, log);
        long t0 = clock.read();
        Pump p = Pump.start(g.openStream("A"), 1_000, Long.MAX_VALUE / 4, clock::read);
        clock.advance(60 * SEC);
        p.stop();
        long achieved = log.total();
        assertThat((double) achieved).isCloseTo(3_000 * 60, within(3_000 * 60 * 0.005));
        log.assertCeiling(3_000);
        assertThat(log.grants).allSatisfy(gr -> assertThat(gr.bytes()).isLessThanOrEqualTo(300));

        long tenGBps = 10_000_000_000L;
        g.reconfigure(g.config().toBuilder().rate(tenGBps).build());
        clock.runNext(); // the stopped pump's last chunk, if any, completes
        assertThat(clock.pending()).isZero();
        clock.advance(30 * SEC);
        int before = log.grants.size();
        long t1 = clock.read();
        List<CompletableFuture<Void>> flood = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            flood.add(g.openStream("B" + i).acquireAsync(64 * KiB).toCompletableFuture());
        }
        long atOnce = log.grants.subList(before, log.grants.size()).stream()
                .filter(gr -> gr.at() == t1).mapToLong(GrantLog.Grant::bytes).sum();
        assertThat(atOnce).as("granted at the first instant after 30 s idle at 10 GB/s")
                .isEqualTo(GovernorConfig.burstBytes(tenGBps)).isEqualTo(MiB);
        assertThat(flood.stream().filter(CompletableFuture::isDone).count()).isEqualTo(16);
        clock.advance(SEC);
        assertThat(flood).allSatisfy(f -> assertThat(f).isCompleted());
        assertThat(log.grants.subList(before, log.grants.size()))
                .allSatisfy(gr -> assertThat(gr.bytes()).isPositive().isLessThanOrEqualTo(64 * KiB));
        GrantLog.assertCeiling(log.grants.subList(before, log.grants.size()), tenGBps, "shared at 10 GB/s");
        assertThat(clock.read() - t0).isBetween(91 * SEC, 91 * SEC + SEC / 100);
    }

    @Test
    void idleTenSecondsThenFloodNeverExceedsRateTimesWindowPlusBurst() {
        FakeClock clock = new FakeClock(-3 * SEC); // crosses zero during the idle
        GrantLog log = new GrantLog();
        long shared = MiB;
        long perPrincipal = 256 * KiB;
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, shared, perPrincipal), clock, log);
        List<GovernedStream> streams = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            streams.add(g.openStream("P" + i % 8));
        }
        clock.advance(10 * SEC);
        List<Pump> pumps = new ArrayList<>();
        for (int i = 0; i < streams.size(); i++) {
            pumps.add(Pump.start(streams.get(i), (i % 5 + 1) * 16 * KiB, 1L << 40, clock::read));
        }
        clock.advance(20 * SEC);
        assertThat(pumps).allSatisfy(p -> assertThat(p.failure).isNull());
        log.assertCeiling(shared);
        for (int i = 0; i < 8; i++) {
            log.assertCeiling("P" + i, perPrincipal);
        }
        // the ceiling is also approached: 20 s at 1 MiB/s plus the burst, within one quantum per principal
        assertThat(log.total()).isGreaterThan(20 * MiB).isLessThanOrEqualTo(20 * MiB + GovernorConfig.burstBytes(shared));
    }

    @Test
    void twoHundredFiftySeventhWaitingQuantumIsRefusedAndCloseFailsEveryWaiterPromptly() {
        FakeClock clock = new FakeClock(Long.MAX_VALUE);
        GrantLog log = new GrantLog();
        DrrBandwidthGovernor g = governor(GovernorConfig.of(DOWNLOAD, MiB, 0), clock, log);
        GovernedStream first = g.openStream("drain");
        first.acquireAsync(GovernorConfig.burstBytes(MiB)).toCompletableFuture().join(); // empty the bucket
        List<CompletableFuture<Void>> waiting = new ArrayList<>();
        List<GovernedStream> streams = new ArrayList<>();
        for (int i = 0; i < 256; i++) {
            GovernedStream s = g.openStream("P" + i % 30);
            streams.add(s);
            waiting.add(s.acquireAsync(KiB).toCompletableFuture());
        }
        assertThat(waiting).noneMatch(CompletableFuture::isDone);
        assertThat(g.stats().waitingQuanta()).isEqualTo(256);
        assertThat(clock.pending()).isEqualTo(1); // one timer for the whole direction

        CompletableFuture<Void> refused = g.openStream("late").acquireAsync(KiB).toCompletableFuture();
        assertThat(refused).isCompletedExceptionally();
        assertThatThrownBy(refused::join).hasCauseInstanceOf(WaitQueueFullException.class);
        assertThatThrownBy(() -> g.openStream("late2").acquire(KiB)).isInstanceOf(WaitQueueFullException.class);
        assertThat(g.stats().refusedQueueFull()).isEqualTo(2);

        g.close(); // no clock advance: failures are prompt
        assertThat(waiting).allSatisfy(f -> assertThatThrownBy(f::join)
                .isInstanceOf(CompletionException.class).hasCauseInstanceOf(GovernorClosedException.class));
        GovernorStats stats = g.stats();
        assertThat(stats.waitingQuanta()).isZero();
        assertThat(stats.refusedClosed()).isEqualTo(256);
        assertThat(clock.pending()).isZero();
        assertThatThrownBy(() -> g.openStream("P1")).isInstanceOf(GovernorClosedException.class);
        assertThat(streams.get(0).acquireAsync(KiB).toCompletableFuture())
                .failsWithin(java.time.Duration.ZERO).withThrowableOfType(java.util.concurrent.ExecutionException.class)
                .withCauseInstanceOf(GovernorClosedException.class);
        assertThatThrownBy(() -> streams.get(1).acquire(KiB)).isInstanceOf(GovernorClosedException.class);
    }

    @Test
    void admissionKeepsFourOfEightDownloadsOfAInFlightAdmitsBAtOnceAndAStaysUnderItsRate() {
        FakeClock clock = new FakeClock(Long.MAX_VALUE - 10 * SEC);
        GrantLog log = new GrantLog();
        long rateA = 256 * KiB;
        DrrBandwidthGovernor g = governor(GovernorConfig.builder(DOWNLOAD).rate(10 * MiB).principalRate(rateA).build(),
                clock, log);
        AdmissionQueue q = AdmissionQueue.create(AdmissionConfig.defaults(16), clock, clock);
        List<CompletableFuture<Admission>> a = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            a.add(q.admitAsync("A", AdmissionClass.DOWNLOAD).toCompletableFuture());
        }
        CompletableFuture<Admission> b = q.admitAsync("B", AdmissionClass.DOWNLOAD).toCompletableFuture();
        assertThat(a.subList(0, 4)).allMatch(CompletableFuture::isDone);
        assertThat(a.subList(4, 8)).noneMatch(CompletableFuture::isDone);
        assertThat(b).isCompleted();
        AdmissionStats st = q.stats();
        assertThat(st.inFlightDownloads()).isEqualTo(5);
        assertThat(st.waiting()).isEqualTo(4);

        // every admitted download of A transfers 512 KiB through the governor, then releases its slot
        List<Pump> pumps = new ArrayList<>();
        for (CompletableFuture<Admission> f : a) {
            f.thenAccept(adm -> pumps.add(Pump.start(g.openStream("A"), 64 * KiB, 512 * KiB, clock::read, adm::close)));
        }
        Pump pb = Pump.start(g.openStream("B"), 64 * KiB, 512 * KiB, clock::read);
        clock.advance(30 * SEC);
        assertThat(pumps).hasSize(8).allSatisfy(p -> assertThat(p.finished).isTrue());
        assertThat(pb.finished).isTrue();
        assertThat(log.total("A")).isEqualTo(8 * 512 * KiB);
        log.assertCeiling("A", rateA);
        log.assertCeiling("B", rateA);
        log.assertCeiling(10 * MiB);
        // A's 4 MiB at 256 KiB/s: 16 s less the initial 25.6 KiB burst, however many streams it opens
        long aDone = log.of("A").getLast().at() - (Long.MAX_VALUE - 10 * SEC);
        assertThat(aDone / 1e9).isCloseTo((4.0 * MiB - GovernorConfig.burstBytes(rateA)) / rateA, within(0.01));
        b.join().close();
        assertThat(q.stats().inFlightDownloads()).isZero();
        assertThat(q.stats().admitted()).isEqualTo(9);
    }

    @Test
    void ownershipLostMidTransferStallsTheStreamAndRefusesNewOnes() {
        FakeClock clock = new FakeClock(-SEC / 2);
        GrantLog log = new GrantLog();
        AtomicBoolean owned = new AtomicBoolean(true);
        DrrBandwidthGovernor g = new DrrBandwidthGovernor(GovernorConfig.of(UPLOAD, 0, 100 * KiB), clock, clock,
                owned::get, log);
        GovernedStream s = g.openStream("A");
        CompletableFuture<Void> f = s.acquireAsync(MiB).toCompletableFuture();
        clock.advance(2 * SEC + SEC / 20); // quanta at 0, 0.1, …, 2.0 s
        int grantsSoFar = log.grants.size();
        assertThat(grantsSoFar).isEqualTo(21);
        owned.set(false);
        clock.advance(SEC);
        assertThat(f).isNotDone(); // stalled, not failed: the transfer waits under back-pressure
        assertThat(log.grants).hasSize(grantsSoFar); // nothing granted while fenced
        assertThat(g.stalled()).isTrue();
        assertThat(g.stats().waitingQuanta()).isEqualTo(1);
        assertThatThrownBy(() -> g.openStream("B")).isInstanceOf(OwnershipLostException.class);
        assertThat(g.stats().refusedOwnershipLost()).isEqualTo(1);
        owned.set(true); // ownership regained: the owner wakes the governor, quanta flow again
        g.wake();
        assertThat(log.grants).hasSizeGreaterThan(grantsSoFar);
        clock.advance(9 * SEC);
        assertThat(f).isCompleted();
        assertThat(g.stalled()).isFalse();
        assertThat(g.stats().grantedBytes()).isEqualTo(MiB);
    }

    @Test
    void heldPrincipalWaitsUntilItsRateIsSetAndThenStartsEmpty() {
        FakeClock clock = new FakeClock(0);
        GrantLog log = new GrantLog();
        DrrBandwidthGovernor g = new DrrBandwidthGovernor(GovernorConfig.builder(UPLOAD).rate(10 * MiB)
                .principalRate(GovernorConfig.HELD).build(), clock, clock, OwnershipCheck.alwaysOwned(), log);
        GovernedStream s = g.openStream("A");
        CompletableFuture<Void> f = s.acquireAsync(100 * KiB).toCompletableFuture();
        clock.advance(5 * SEC);
        assertThat(log.grants).isEmpty();
        g.reconfigure(GovernorConfig.builder(UPLOAD).rate(10 * MiB).principalRate(GovernorConfig.HELD)
                .principalRate("A", 100 * KiB).build());
        assertThat(log.grants).as("a share just obtained starts empty: no burst").isEmpty();
        clock.advance(SEC + SEC / 10);
        assertThat(f).isCompleted();
        log.assertCeiling("A", 100 * KiB);
    }
}
