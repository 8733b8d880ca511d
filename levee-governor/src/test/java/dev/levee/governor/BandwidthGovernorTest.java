package dev.levee.governor;

import static dev.levee.governor.BandwidthGovernorScenarioTest.KiB;
import static dev.levee.governor.BandwidthGovernorScenarioTest.MS;
import static dev.levee.governor.BandwidthGovernorScenarioTest.MiB;
import static dev.levee.governor.BandwidthGovernorScenarioTest.SEC;
import static dev.levee.governor.BandwidthGovernorScenarioTest.runUntilDone;
import static dev.levee.governor.Direction.DOWNLOAD;
import static dev.levee.governor.Direction.UPLOAD;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/** Behaviour of {@link BandwidthGovernor} piece by piece (docs/design.md §8), on a fake clock. */
class BandwidthGovernorTest {

    private final FakeClock clock = new FakeClock(Long.MAX_VALUE - 2 * SEC);
    private final GrantLog log = new GrantLog();

    private DrrBandwidthGovernor governor(GovernorConfig config) {
        return new DrrBandwidthGovernor(config, clock, clock, OwnershipCheck.alwaysOwned(), log);
    }

    /** Spins (real time, only as a failure guard) until another thread has reached a state. */
    static void awaitCondition(BooleanSupplier condition) {
        long deadline = System.nanoTime() + 10 * SEC;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("condition not reached within 10 s");
            }
            Thread.onSpinWait();
        }
    }

    @Test
    void fastPathGrantsAtOnceWithoutTimerAndReturnsOneSharedCompletedStage() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, MiB, MiB));
        GovernedStream s = g.openStream("A");
        CompletionStage<Void> first = s.acquireAsync(64 * KiB);
        CompletionStage<Void> second = s.acquireAsync(32 * KiB);
        assertThat((Object) first).isSameAs(second);
        assertThat(first.toCompletableFuture()).isCompleted();
        s.acquire(1);
        assertThat(s.tryAcquire(1)).isTrue();
        assertThat(clock.scheduledCount()).isZero();
        assertThat(g.stats().grantedBytes()).isEqualTo(96 * KiB + 2);
        assertThat(g.stats().grantedQuanta()).isEqualTo(4);
    }

    @Test
    void zeroBytesAreGrantedAtOnceAndNegativeBytesAreRejected() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, 1_000, 0));
        GovernedStream s = g.openStream("A");
        s.acquireAsync(100).toCompletableFuture().join(); // empty the bucket
        assertThat(s.acquireAsync(0).toCompletableFuture()).isCompleted();
        assertThat(s.tryAcquire(0)).isTrue();
        assertThatThrownBy(() -> s.acquireAsync(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.acquire(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThat(g.stats().grantedBytes()).isEqualTo(100);
    }

    @Test
    void disabledCeilingsGrantEverythingAtOnceInQuantaOf64KiB() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, 0, 0));
        GovernedStream s = g.openStream("A");
        assertThat(s.quantumBytes()).isEqualTo(64 * KiB);
        assertThat(s.acquireAsync(10 * MiB).toCompletableFuture()).isCompleted();
        assertThat(log.grants).hasSize(160);
        assertThat(clock.scheduledCount()).isZero();
    }

    @Test
    void tryAcquireNeverQueuesAndNeverOvertakesAWaiter() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, MiB, 0));
        GovernedStream a = g.openStream("A");
        GovernedStream b = g.openStream("B");
        assertThat(a.tryAcquire(64 * KiB + 1)).isFalse(); // more than one quantum
        assertThat(a.tryAcquire(64 * KiB)).isTrue();
        CompletableFuture<Void> waitingA = a.acquireAsync(64 * KiB).toCompletableFuture(); // 40 KiB left: waits
        assertThat(waitingA).isNotDone();
        assertThat(b.tryAcquire(KiB)).as("B may not take the shared refill ahead of A").isFalse();
        assertThat(g.stats().waitingQuanta()).isEqualTo(1);
        runUntilDone(clock, waitingA);
        assertThat(b.tryAcquire(KiB)).isFalse(); // the bucket was just emptied for A
    }

    @Test
    void streamsOfOnePrincipalShareOneBucketSoParallelConnectionsDoNotMultiplyItsRate() throws Exception {
        long rate = 100 * KiB;
        DrrBandwidthGovernor g = governor(GovernorConfig.of(DOWNLOAD, 0, rate));
        List<Pump> pumps = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            pumps.add(Pump.start(g.openStream("A"), 8 * KiB, 1L << 40, clock::read));
        }
        clock.advance(20 * SEC);
        log.assertCeiling("A", rate);
        assertThat((double) log.total("A")).isCloseTo(rate * 20.0 + GovernorConfig.burstBytes(rate), within(8.0 * KiB));
        assertThat(pumps).allSatisfy(p -> assertThat(p.granted).isPositive());
    }

    @Test
    void principalWaitingForItsOwnBucketHoldsUpNobody() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.builder(UPLOAD).rate(10 * MiB).principalRate(MiB)
                .principalRate("slow", 1_000).build());
        GovernedStream slow = g.openStream("slow");
        slow.acquireAsync(100).toCompletableFuture().join(); // empties slow's bucket (burst 100 B)
        CompletableFuture<Void> slowWait = slow.acquireAsync(100).toCompletableFuture();
        assertThat(slowWait).isNotDone(); // blocked for 100 ms on its own bucket
        GovernedStream fast = g.openStream("fast");
        for (int i = 0; i < 10; i++) {
            assertThat(fast.acquireAsync(10 * KiB).toCompletableFuture()).as("fast is not held up").isCompleted();
        }
        assertThat(clock.pending()).isEqualTo(1);
        assertThat(clock.nextDue() - clock.read()).isEqualTo(100 * MS);
        clock.advance(100 * MS);
        assertThat(slowWait).isCompleted();
    }

    @Test
    void smallQuantaOfOthersDoNotOvertakeAReadyPrincipalWaitingForTheSharedBucket() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, MiB, 0));
        GovernedStream a = g.openStream("A");
        a.acquireAsync(100 * KiB).toCompletableFuture().join(); // 2.4 KiB left in the shared bucket
        CompletableFuture<Void> big = a.acquireAsync(64 * KiB).toCompletableFuture();
        List<CompletableFuture<Void>> small = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            small.add(g.openStream("S" + i).acquireAsync(KiB).toCompletableFuture());
        }
        assertThat(small).noneMatch(CompletableFuture::isDone); // 2.4 KiB would pay two of them
        runUntilDone(clock, big);
        long bigAt = clock.read();
        assertThat(small).noneMatch(CompletableFuture::isDone);
        small.forEach(f -> runUntilDone(clock, f));
        assertThat(log.grants.stream().filter(gr -> gr.principal().startsWith("S")))
                .allSatisfy(gr -> assertThat(gr.at() - bigAt).isPositive());
    }

    @Test
    void oneTimerPerDirectionIsReArmedOnlyWhenTheEarliestMomentMovesEarlier() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.builder(UPLOAD).principalRate("p10", 10)
                .principalRate("p100", 100).principalRate("p50", 50).build());
        GovernedStream p10 = g.openStream("p10");   // burst 1 B, 1 byte per 100 ms
        GovernedStream p100 = g.openStream("p100"); // burst 10 B, 1 byte per 10 ms
        GovernedStream p50 = g.openStream("p50");   // burst 5 B, 1 byte per 20 ms
        p10.acquire(1);
        p100.acquire(10);
        p50.acquire(5);
        p10.acquireAsync(1);                         // ready in 100 ms
        assertThat(clock.scheduledCount()).isEqualTo(1);
        assertThat(clock.nextDue() - clock.read()).isEqualTo(100 * MS);
        p100.acquireAsync(1);                        // ready in 10 ms: earlier, re-armed
        assertThat(clock.scheduledCount()).isEqualTo(2);
        assertThat(clock.cancelledCount()).isEqualTo(1);
        assertThat(clock.nextDue() - clock.read()).isEqualTo(10 * MS);
        p50.acquireAsync(1);                         // ready in 20 ms: later, not re-armed
        assertThat(clock.scheduledCount()).isEqualTo(2);
        assertThat(clock.pending()).isEqualTo(1);
        clock.advance(200 * MS);
        assertThat(g.stats().waitingQuanta()).isZero();
        assertThat(clock.scheduledCount()).isEqualTo(4); // 10 ms, then 20 ms, then 100 ms
        assertThat(clock.pending()).isZero();
    }

    @Test
    void cancellingAWaitingRequestRemovesItAndGrantedBytesAreNotRefunded() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.of(DOWNLOAD, 0, 100 * KiB));
        GovernedStream s = g.openStream("A");
        CompletableFuture<Void> f = s.acquireAsync(MiB).toCompletableFuture();
        clock.advance(SEC / 2 + 1); // 6 quanta of 10 KiB granted
        assertThat(s.cancel()).isTrue();
        assertThat(s.cancel()).isFalse();
        assertThat(f).isCancelled();
        GovernorStats st = g.stats();
        assertThat(st.grantedBytes()).isEqualTo(60 * KiB);
        assertThat(st.cancellations()).isEqualTo(1);
        assertThat(st.waitingQuanta()).isZero();
        // not refunded: 50 ms later the bucket holds only what it earned since the last grant, 5 KiB
        clock.advance(50 * MS);
        assertThat(s.tryAcquire(10 * KiB)).isFalse();
        assertThat(s.tryAcquire(5 * KiB)).isTrue();
    }

    @Test
    void cancellingTheFutureCancelsTheRequestButAStaleFutureCannotCancelTheNextOne() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.of(DOWNLOAD, 0, 100 * KiB));
        GovernedStream s = g.openStream("A");
        s.acquire(10 * KiB);
        CompletableFuture<Void> first = s.acquireAsync(10 * KiB).toCompletableFuture();
        assertThat(first.cancel(true)).isTrue();
        assertThat(g.stats().waitingQuanta()).isZero();
        CompletableFuture<Void> second = s.acquireAsync(10 * KiB).toCompletableFuture();
        assertThat(first.cancel(true)).isTrue(); // already cancelled, stays so
        assertThat(second).isNotDone();
        assertThat(g.stats().waitingQuanta()).isEqualTo(1);
        runUntilDone(clock, second);
        assertThat(second.cancel(true)).isFalse(); // granted: too late
    }

    @Test
    void cancellingTheHeadOfTheLineLetsTheNextPrincipalProceed() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, MiB, 0));
        GovernedStream a = g.openStream("A");
        a.acquire(100 * KiB);
        CompletableFuture<Void> big = a.acquireAsync(64 * KiB).toCompletableFuture();
        CompletableFuture<Void> small = g.openStream("B").acquireAsync(2 * KiB).toCompletableFuture();
        assertThat(small).isNotDone();
        a.cancel();
        assertThat(big).isCancelled();
        assertThat(small).as("2 KiB of the 2.4 KiB left are granted at once").isCompleted();
    }

    @Test
    void aStreamAllowsOneOutstandingRequestAndNoneAfterClose() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, 0, 1_000));
        GovernedStream s = g.openStream("A");
        s.acquire(100);
        CompletionStage<Void> waiting = s.acquireAsync(50);
        assertThatThrownBy(() -> s.acquireAsync(1)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("outstanding");
        assertThatThrownBy(() -> s.acquire(1)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> s.tryAcquire(1)).isInstanceOf(IllegalStateException.class);
        s.close();
        assertThat(waiting.toCompletableFuture()).isCancelled();
        s.close();
        assertThatThrownBy(() -> s.acquireAsync(1)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        assertThat(g.stats().cancellations()).isEqualTo(1);
    }

    @Test
    void principalTableIsBoundedAndExistingPrincipalsKeepWorking() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.builder(UPLOAD).maxPrincipals(3).build());
        g.openStream("a");
        g.openStream("b");
        g.openStream("c");
        assertThatThrownBy(() -> g.openStream("d")).isInstanceOf(PrincipalTableFullException.class)
                .hasMessageContaining("3");
        assertThat(g.openStream("a").tryAcquire(1)).isTrue();
        assertThat(g.stats().principals()).isEqualTo(3);
        assertThat(g.stats().refusedPrincipalTable()).isEqualTo(1);
        assertThatThrownBy(() -> g.openStream(" ")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void blockingAcquireOnAVirtualThreadWaitsForTheTimerWithoutSleeping() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, 0, 100 * KiB));
        GovernedStream s = g.openStream("A");
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = acquireOnVirtualThread(s, 50 * KiB, failure); // 10 KiB at once, then 4 quanta at 0.1 s intervals
        awaitCondition(() -> g.stats().grantedBytes() == 10 * KiB && clock.pending() == 1);
        clock.advance(399 * MS);
        assertThat(t.isAlive()).isTrue();
        clock.advance(MS);
        t.join();
        assertThat(failure.get()).isNull();
        assertThat(g.stats().grantedBytes()).isEqualTo(50 * KiB);
    }

    @Test
    void interruptingABlockedAcquireCancelsItsRequest() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, 0, 100 * KiB));
        GovernedStream s = g.openStream("A");
        s.acquire(10 * KiB);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = acquireOnVirtualThread(s, 10 * KiB, failure);
        awaitCondition(() -> g.stats().waitingQuanta() == 1);
        t.interrupt();
        t.join();
        assertThat(failure.get()).isInstanceOf(InterruptedException.class);
        assertThat(g.stats().cancellations()).isEqualTo(1);
        assertThat(g.stats().waitingQuanta()).isZero();
        s.acquireAsync(1); // the stream is free again
        assertThat(g.stats().waitingQuanta()).isEqualTo(1);
    }

    @Test
    void cancellingAStreamFromAnotherThreadWakesItsBlockedAcquireWithCancellation() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, 0, 100 * KiB));
        GovernedStream s = g.openStream("A");
        s.acquire(10 * KiB);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = acquireOnVirtualThread(s, 10 * KiB, failure);
        awaitCondition(() -> g.stats().waitingQuanta() == 1);
        assertThat(s.cancel()).isTrue();
        t.join();
        assertThat(failure.get()).isInstanceOf(CancellationException.class);
    }

    @Test
    void closeWakesBlockedThreadsWithGovernorClosed() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, 1_000, 0));
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
        g.openStream("X").acquire(100);
        for (int i = 0; i < 20; i++) {
            GovernedStream s = g.openStream("P" + i);
            threads.add(Thread.ofVirtual().start(() -> {
                try {
                    s.acquire(50);
                } catch (Throwable e) {
                    failures.add(e);
                }
            }));
        }
        awaitCondition(() -> g.stats().waitingQuanta() == 20);
        g.close();
        for (Thread t : threads) {
            t.join();
        }
        assertThat(failures).hasSize(20).allSatisfy(e -> assertThat(e).isInstanceOf(GovernorClosedException.class));
        g.close(); // idempotent
        assertThat(g.stats().refusedClosed()).isEqualTo(20);
    }

    @Test
    void reconfigureAppliesNewRatesAtOnceAndKeepsWaitersInPlace() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, 0, 1_000));
        GovernedStream s = g.openStream("A");
        s.acquire(100);
        CompletableFuture<Void> f = s.acquireAsync(100).toCompletableFuture(); // 100 ms at 1 000 B/s
        assertThat(clock.nextDue() - clock.read()).isEqualTo(100 * MS);
        clock.advance(50 * MS); // 50 bytes earned
        g.reconfigure(g.config().toBuilder().principalRate(10_000).build()); // burst 1 000 B
        assertThat(clock.nextDue() - clock.read()).as("re-armed earlier: 50 bytes at 10 kB/s").isEqualTo(5 * MS);
        clock.advance(5 * MS);
        assertThat(f).isCompleted();
        assertThat(s.quantumBytes()).isEqualTo(1_000);
        assertThatThrownBy(() -> g.reconfigure(GovernorConfig.of(DOWNLOAD, 0, 0)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void loweringTheBurstBelowAWaitingRequestsQuantumStillGrantsIt() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.of(UPLOAD, 0, MiB));
        GovernedStream s = g.openStream("A");
        s.acquire(100 * KiB);
        CompletableFuture<Void> f = s.acquireAsync(64 * KiB).toCompletableFuture();
        g.reconfigure(g.config().toBuilder().principalRate(10_000).build()); // quantum 1 000 B
        runUntilDone(clock, f);
        assertThat(log.grants.subList(0, 2)).extracting(GrantLog.Grant::bytes).containsExactly(64 * KiB, 36 * KiB);
        assertThat(log.grants.subList(2, log.grants.size()))
                .allSatisfy(gr -> assertThat(gr.bytes()).isLessThanOrEqualTo(1_000));
    }

    @Test
    void statsAreAggregatedWithoutPrincipalIds() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.of(DOWNLOAD, MiB, 0));
        GovernedStream s = g.openStream("svc-secret-account");
        s.acquire(100 * KiB);
        s.acquireAsync(10 * KiB);
        GovernorStats st = g.stats();
        assertThat(st.toString()).doesNotContain("svc-secret-account");
        assertThat(st.direction()).isEqualTo(DOWNLOAD);
        assertThat(st.waitingQuanta()).isEqualTo(1);
        assertThat(st.principals()).isEqualTo(1);
        assertThat(st.refusals()).isZero();
    }

    @Test
    void refusedStageFailsAtOnceWithTheDedicatedException() throws Exception {
        DrrBandwidthGovernor g = governor(GovernorConfig.builder(UPLOAD).rate(1_000).maxWaitingQuanta(1).build());
        g.openStream("A").acquire(100);
        g.openStream("B").acquireAsync(1);
        CompletableFuture<Void> refused = g.openStream("C").acquireAsync(1).toCompletableFuture();
        assertThatThrownBy(refused::join).isInstanceOf(CompletionException.class)
                .cause().isInstanceOf(WaitQueueFullException.class).hasMessageContaining("UPLOAD")
                .hasMessageContaining("1 waiting");
        assertThat(refused.exceptionNow()).isInstanceOf(RefusedException.class);
    }

    /** Starts {@code s.acquire(bytes)} on a virtual thread; what it throws lands in {@code failure}. */
    static Thread acquireOnVirtualThread(GovernedStream s, long bytes, AtomicReference<Throwable> failure) {
        return Thread.ofVirtual().start(() -> {
            try {
                s.acquire(bytes);
            } catch (Throwable e) {
                failure.set(e);
            }
        });
    }
}
