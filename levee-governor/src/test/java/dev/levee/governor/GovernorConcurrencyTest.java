package dev.levee.governor;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.core.Ticker;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Races the governor and the admission queue with real threads: many virtual threads plus the
 * timer's platform thread. Bounded in count and in time: a hang fails the test instead of
 * blocking the build.
 */
class GovernorConcurrencyTest {

    static final long KiB = 1024;
    static final long MiB = 1024 * KiB;

    private final ScheduledThreadPoolExecutor timerThread = new ScheduledThreadPoolExecutor(1);
    private final GovernorTimer timer = (delayNs, task) -> {
        ScheduledFuture<?> f = timerThread.schedule(task, delayNs, TimeUnit.NANOSECONDS);
        return () -> f.cancel(false);
    };
    /** Real time is the point of this test; production code never reads it directly. */
    private final Ticker ticker = System::nanoTime;

    @AfterEach
    void stopTimer() {
        timerThread.shutdownNow();
    }

    private enum Outcome { GRANTED, REFUSED, CANCELLED, NOT_GRANTED }

    /**
     * Race: 96 virtual threads acquire (blocking, asynchronous, try), cancel their own requests,
     * close and reopen streams and interrupt one another at random, while the timer's thread
     * grants and publishes outside the lock. Every request must end granted, refused, cancelled
     * (or, for tryAcquire, not granted) — none hangs — and the ceiling rate × window + burst must
     * hold for the shared bucket and for each principal.
     */
    @Test
    void virtualThreadsAcquiringCancellingAndInterruptingAtRandomAllEndUnderTheCeiling() throws Exception {
        long shared = 8 * MiB;
        long perPrincipal = 2 * MiB;
        int principals = 8;
        GrantLog log = new GrantLog();
        DrrBandwidthGovernor g = new DrrBandwidthGovernor(GovernorConfig.builder(Direction.DOWNLOAD).rate(shared)
                .principalRate(perPrincipal).maxWaitingQuanta(48).build(), ticker, timer,
                OwnershipCheck.alwaysOwned(), log);
        int threads = 96;
        int ops = 25;
        AtomicLong[] outcomes = {new AtomicLong(), new AtomicLong(), new AtomicLong(), new AtomicLong()};
        AtomicLong issued = new AtomicLong();
        List<Thread> workers = new CopyOnWriteArrayList<>();
        AtomicReference<Throwable> unexpected = new AtomicReference<>();
        ExecutorService vts = Executors.newVirtualThreadPerTaskExecutor();
        for (int t = 0; t < threads; t++) {
            String principal = "P" + t % principals;
            vts.execute(() -> {
                workers.add(Thread.currentThread());
                ThreadLocalRandom rnd = ThreadLocalRandom.current();
                GovernedStream s = g.openStream(principal);
                try {
                    for (int op = 0; op < ops; op++) {
                        if (rnd.nextInt(8) == 0) { // chaos: interrupt someone
                            workers.get(rnd.nextInt(workers.size())).interrupt();
                        }
                        if (rnd.nextInt(20) == 0) {
                            s.close();
                            s = g.openStream(principal);
                        }
                        issued.incrementAndGet();
                        Outcome o = request(s, rnd.nextLong(1, 32 * KiB), rnd);
                        outcomes[o.ordinal()].incrementAndGet();
                    }
                } catch (Throwable e) {
                    unexpected.compareAndSet(null, e);
                }
            });
        }
        vts.shutdown();
        assertThat(vts.awaitTermination(60, TimeUnit.SECONDS)).as("every worker finished: no request hangs").isTrue();
        assertThat(unexpected.get()).isNull();
        long ended = 0;
        for (AtomicLong o : outcomes) {
            ended += o.get();
        }
        assertThat(ended).isEqualTo(issued.get()).isEqualTo((long) threads * ops);
        assertThat(outcomes[Outcome.GRANTED.ordinal()].get()).isPositive();
        g.close(); // also publishes the grant log to this thread (the log is written under the lock)
        GovernorStats st = g.stats();
        assertThat(st.waitingQuanta()).isZero();
        assertThat(st.grantedBytes()).isEqualTo(log.total());
        log.assertCeiling(shared);
        for (int p = 0; p < principals; p++) {
            log.assertCeiling("P" + p, perPrincipal);
        }
    }

    private static Outcome request(GovernedStream s, long bytes, ThreadLocalRandom rnd) {
        try {
            switch (rnd.nextInt(10)) {
                case 0, 1, 2, 3, 4 -> {
                    s.acquire(bytes);
                    return Outcome.GRANTED;
                }
                case 5 -> {
                    return s.tryAcquire(Math.min(bytes, s.quantumBytes())) ? Outcome.GRANTED : Outcome.NOT_GRANTED;
                }
                default -> {
                    CompletableFuture<Void> f = s.acquireAsync(bytes).toCompletableFuture();
                    int cancel = rnd.nextInt(4);
                    if (cancel == 0) {
                        Thread.yield();
                        f.cancel(true);
                    } else if (cancel == 1) {
                        s.cancel();
                    }
                    try {
                        f.get();
                        return Outcome.GRANTED;
                    } catch (InterruptedException e) {
                        f.cancel(true);
                        return classify(f.handle((v, x) -> x).join());
                    } catch (ExecutionException e) {
                        return classify(e.getCause());
                    }
                }
            }
        } catch (RefusedException e) {
            return Outcome.REFUSED;
        } catch (CancellationException | InterruptedException e) {
            return Outcome.CANCELLED;
        }
    }

    private static Outcome classify(Throwable failure) {
        if (failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null) {
            failure = failure.getCause();
        }
        if (failure == null) {
            return Outcome.GRANTED;
        }
        if (failure instanceof RefusedException) {
            return Outcome.REFUSED;
        }
        if (failure instanceof CancellationException) {
            return Outcome.CANCELLED;
        }
        throw new AssertionError("unexpected outcome", failure);
    }

    /**
     * Race: close() while 64 virtual threads are blocked in or entering acquire. Every one of them
     * must return promptly with GovernorClosedException (or a grant made before the close).
     */
    @Test
    void closeWhileVirtualThreadsAreAcquiringEndsEveryoneWithoutHanging() throws Exception {
        DrrBandwidthGovernor g = new DrrBandwidthGovernor(GovernorConfig.builder(Direction.UPLOAD).rate(MiB)
                .maxWaitingQuanta(256).build(), ticker, timer, OwnershipCheck.alwaysOwned(),
                DrrBandwidthGovernor.GrantObserver.NONE);
        int threads = 64;
        CountDownLatch started = new CountDownLatch(threads);
        AtomicInteger closedSeen = new AtomicInteger();
        ExecutorService vts = Executors.newVirtualThreadPerTaskExecutor();
        for (int t = 0; t < threads; t++) {
            int id = t;
            vts.execute(() -> {
                GovernedStream s = g.openStream("P" + id % 10);
                started.countDown();
                while (true) {
                    try {
                        s.acquire(64 * KiB);
                    } catch (GovernorClosedException e) {
                        closedSeen.incrementAndGet();
                        return;
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
        }
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
        g.close();
        vts.shutdown();
        assertThat(vts.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        assertThat(closedSeen.get()).isEqualTo(threads);
        assertThat(g.stats().waitingQuanta()).isZero();
    }

    /**
     * Race: 64 virtual threads of 6 principals admit, hold briefly and release, cancel and time
     * out at random while the timer thread expires waiters. In flight per principal and class
     * never exceeds the limit, every request ends admitted or refused or cancelled, and the gauges
     * return to zero.
     */
    @Test
    void admissionUnderRealThreadsNeverExceedsTheLimitAndEveryRequestEnds() throws Exception {
        AdmissionQueue q = AdmissionQueue.create(new AdmissionConfig(1, 3, 32, 20_000_000L), ticker, timer);
        int principals = 6;
        AtomicInteger[][] inFlight = new AtomicInteger[principals][2];
        for (AtomicInteger[] row : inFlight) {
            row[0] = new AtomicInteger();
            row[1] = new AtomicInteger();
        }
        AtomicLong admitted = new AtomicLong();
        AtomicLong refused = new AtomicLong();
        AtomicLong cancelled = new AtomicLong();
        AtomicReference<Throwable> unexpected = new AtomicReference<>();
        ExecutorService vts = Executors.newVirtualThreadPerTaskExecutor();
        int threads = 64;
        int ops = 40;
        for (int t = 0; t < threads; t++) {
            int p = t % principals;
            vts.execute(() -> {
                ThreadLocalRandom rnd = ThreadLocalRandom.current();
                try {
                    for (int op = 0; op < ops; op++) {
                        AdmissionClass c = rnd.nextBoolean() ? AdmissionClass.DOWNLOAD : AdmissionClass.MUTATING_UPLOAD;
                        CompletableFuture<Admission> f = q.admitAsync("P" + p, c).toCompletableFuture();
                        if (rnd.nextInt(6) == 0) {
                            f.cancel(true);
                        }
                        Throwable failure = f.handle((a, x) -> x).join();
                        if (failure instanceof CancellationException) {
                            cancelled.incrementAndGet();
                            continue;
                        }
                        if (failure != null) {
                            assertThat(failure).isInstanceOf(RefusedException.class);
                            refused.incrementAndGet();
                            continue;
                        }
                        Admission a = f.join();
                        int now = inFlight[p][c.ordinal()].incrementAndGet();
                        assertThat(now).isLessThanOrEqualTo(q.config().limit(c));
                        admitted.incrementAndGet();
                        for (int spin = rnd.nextInt(200); spin > 0; spin--) {
                            Thread.onSpinWait();
                        }
                        Thread.yield();
                        inFlight[p][c.ordinal()].decrementAndGet();
                        a.close();
                    }
                } catch (Throwable e) {
                    unexpected.compareAndSet(null, e);
                }
            });
        }
        vts.shutdown();
        assertThat(vts.awaitTermination(60, TimeUnit.SECONDS)).as("no admission request hangs").isTrue();
        assertThat(unexpected.get()).isNull();
        assertThat(admitted.get() + refused.get() + cancelled.get()).isEqualTo((long) threads * ops);
        assertThat(admitted.get()).isPositive();
        AdmissionStats st = q.stats();
        assertThat(st.inFlightDownloads()).isZero();
        assertThat(st.inFlightUploads()).isZero();
        assertThat(st.waiting()).isZero();
        assertThat(st.admitted()).isEqualTo(admitted.get());
        q.close();
    }
}
