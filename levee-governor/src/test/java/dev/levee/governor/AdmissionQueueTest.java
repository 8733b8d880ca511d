package dev.levee.governor;

import static dev.levee.governor.AdmissionClass.DOWNLOAD;
import static dev.levee.governor.AdmissionClass.MUTATING_UPLOAD;
import static dev.levee.governor.BandwidthGovernorScenarioTest.MS;
import static dev.levee.governor.BandwidthGovernorScenarioTest.SEC;
import static dev.levee.governor.BandwidthGovernorTest.awaitCondition;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Per-principal admission (docs/design.md §8) on a fake clock and fake timer. */
class AdmissionQueueTest {

    private final FakeClock clock = new FakeClock(Long.MAX_VALUE - SEC);

    private AdmissionQueue queue(AdmissionConfig config) {
        return AdmissionQueue.create(config, clock, clock);
    }

    private static CompletableFuture<Admission> ask(AdmissionQueue q, String principal, AdmissionClass c) {
        return q.admitAsync(principal, c).toCompletableFuture();
    }

    @Test
    void admitsUpToTheLimitOfEachPrincipalAndClass() {
        AdmissionQueue q = queue(AdmissionConfig.defaults(3));
        List<CompletableFuture<Admission>> downloads = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            downloads.add(ask(q, "A", DOWNLOAD));
        }
        CompletableFuture<Admission> up1 = ask(q, "A", MUTATING_UPLOAD);
        CompletableFuture<Admission> up2 = ask(q, "A", MUTATING_UPLOAD);
        assertThat(downloads.subList(0, 3)).allMatch(CompletableFuture::isDone); // min(4, 3) = 3
        assertThat(downloads.get(3)).isNotDone();
        assertThat(up1).isCompleted();
        assertThat(up2).isNotDone(); // one mutating upload per principal
        assertThat(up1.join().principalId()).isEqualTo("A");
        assertThat(up1.join().admissionClass()).isEqualTo(MUTATING_UPLOAD);
        AdmissionStats st = q.stats();
        assertThat(st.inFlightDownloads()).isEqualTo(3);
        assertThat(st.inFlightUploads()).isEqualTo(1);
        assertThat(st.waiting()).isEqualTo(2);
        assertThat(st.admitted()).isEqualTo(4);
    }

    @Test
    void releaseAdmitsOnlyTheOldestWaiterOfThatPrincipalAndClass() {
        AdmissionQueue q = queue(AdmissionConfig.defaults(1));
        Admission a = ask(q, "A", DOWNLOAD).join();
        Admission b = ask(q, "B", DOWNLOAD).join();
        CompletableFuture<Admission> a2 = ask(q, "A", DOWNLOAD);
        CompletableFuture<Admission> b2 = ask(q, "B", DOWNLOAD);
        CompletableFuture<Admission> a3 = ask(q, "A", DOWNLOAD);
        CompletableFuture<Admission> aUp = ask(q, "A", MUTATING_UPLOAD);
        assertThat(aUp).as("another class is not held up").isCompleted();
        a.close();
        assertThat(a2).isCompleted();
        assertThat(a3).isNotDone();
        assertThat(b2).as("B is not woken by A's release").isNotDone();
        a.close(); // idempotent: does not release a second slot
        assertThat(a3).isNotDone();
        a2.join().close();
        assertThat(a3).isCompleted();
        b.close();
        assertThat(b2).isCompleted();
        assertThat(q.stats().inFlightDownloads()).isEqualTo(2);
    }

    @Test
    void aBlockedPrincipalNeverHoldsUpAnother() {
        AdmissionQueue q = queue(new AdmissionConfig(1, 2, 100, SEC));
        for (int i = 0; i < 50; i++) {
            ask(q, "A", DOWNLOAD);
        }
        assertThat(q.stats().waiting()).isEqualTo(48);
        for (int i = 0; i < 20; i++) {
            assertThat(ask(q, "P" + i, DOWNLOAD)).isCompleted();
        }
    }

    @Test
    void waitersAreBoundedAndTheNextIsRefusedAtOnce() {
        AdmissionQueue q = queue(new AdmissionConfig(1, 1, 3, SEC));
        ask(q, "A", DOWNLOAD);
        for (int i = 0; i < 3; i++) {
            assertThat(ask(q, "A", DOWNLOAD)).isNotDone();
        }
        CompletableFuture<Admission> refused = ask(q, "B", MUTATING_UPLOAD);
        assertThat(refused).as("B would be admitted at once: the bound counts waiters only").isCompleted();
        refused = ask(q, "B", MUTATING_UPLOAD);
        assertThatThrownBy(refused::join).isInstanceOf(CompletionException.class)
                .cause().isInstanceOf(WaitQueueFullException.class).hasMessageContaining("admission queue");
        assertThatCode(() -> q.admit("C", DOWNLOAD)).as("C is admitted at once").doesNotThrowAnyException();
        assertThat(q.stats().refusedQueueFull()).isEqualTo(1);
    }

    @Test
    void zeroWaitersMeansRefuseInsteadOfWaiting() {
        AdmissionQueue q = queue(new AdmissionConfig(1, 1, 0, SEC));
        ask(q, "A", DOWNLOAD).join();
        assertThatThrownBy(() -> q.admit("A", DOWNLOAD)).isInstanceOf(WaitQueueFullException.class);
    }

    @Test
    void aWaiterTimesOutWithAClearExceptionThroughOneTimer() {
        AdmissionQueue q = queue(new AdmissionConfig(1, 1, 10, 5 * SEC));
        Admission held = ask(q, "A", DOWNLOAD).join();
        CompletableFuture<Admission> w1 = ask(q, "A", DOWNLOAD);
        clock.advance(2 * SEC);
        CompletableFuture<Admission> w2 = ask(q, "A", DOWNLOAD);
        assertThat(clock.pending()).isEqualTo(1);
        clock.advance(3 * SEC - 1);
        assertThat(w1).isNotDone();
        clock.advance(1);
        assertThatThrownBy(w1::join).cause().isInstanceOf(AdmissionTimeoutException.class)
                .hasMessageContaining("5000000000 ns");
        assertThat(w2).isNotDone();
        clock.advance(2 * SEC);
        assertThat(w2).isCompletedExceptionally();
        assertThat(q.stats().refusedTimeout()).isEqualTo(2);
        assertThat(q.stats().waiting()).isZero();
        assertThat(clock.scheduledCount()).isEqualTo(2);
        held.close();
        assertThat(q.stats().inFlightDownloads()).isZero();
    }

    @Test
    void cancellingAWaiterRemovesItAndTheNextInLineIsAdmitted() {
        AdmissionQueue q = queue(AdmissionConfig.defaults(1));
        Admission held = ask(q, "A", DOWNLOAD).join();
        CompletableFuture<Admission> w1 = ask(q, "A", DOWNLOAD);
        CompletableFuture<Admission> w2 = ask(q, "A", DOWNLOAD);
        assertThat(w1.cancel(true)).isTrue();
        assertThat(w1).isCancelled();
        assertThat(q.stats().cancellations()).isEqualTo(1);
        held.close();
        assertThat(w2).isCompleted();
        assertThat(w2.cancel(true)).isFalse();
    }

    @Test
    void aSlotNeverLeaksWhenTheFutureIsCompletedBehindTheQueuesBack() {
        AdmissionQueue q = queue(AdmissionConfig.defaults(1));
        Admission held = ask(q, "A", DOWNLOAD).join();
        CompletableFuture<Admission> w = ask(q, "A", DOWNLOAD);
        w.obtrudeException(new IllegalStateException("caller gave up")); // the queue does not learn of it
        held.close(); // hands the slot to w, whose future is already complete: the slot comes back
        assertThat(q.stats().inFlightDownloads()).isZero();
        assertThat(ask(q, "A", DOWNLOAD)).isCompleted();
    }

    @Test
    void closeFailsWaitersRefusesLaterRequestsAndAdmissionsCanStillBeReleased() {
        AdmissionQueue q = queue(AdmissionConfig.defaults(4));
        Admission held = ask(q, "A", MUTATING_UPLOAD).join();
        List<CompletableFuture<Admission>> waiters = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            waiters.add(ask(q, "A", MUTATING_UPLOAD));
        }
        q.close();
        assertThat(waiters).allSatisfy(f -> assertThatThrownBy(f::join).cause()
                .isInstanceOf(GovernorClosedException.class).hasMessageContaining("admission queue"));
        assertThat(ask(q, "B", DOWNLOAD)).isCompletedExceptionally();
        assertThatThrownBy(() -> q.admit("B", DOWNLOAD)).isInstanceOf(GovernorClosedException.class);
        assertThat(clock.pending()).isZero();
        held.close();
        AdmissionStats st = q.stats();
        assertThat(st.inFlightUploads()).isZero();
        assertThat(st.waiting()).isZero();
        assertThat(st.refusedClosed()).isEqualTo(7);
        q.close(); // idempotent
    }

    @Test
    void blockingAdmitOnAVirtualThreadWaitsAndInterruptCancelsTheWait() throws Exception {
        AdmissionQueue q = queue(AdmissionConfig.defaults(1));
        Admission held = q.admit("A", DOWNLOAD);
        AtomicReference<Object> result = new AtomicReference<>();
        Thread admitted = Thread.ofVirtual().start(() -> {
            try {
                result.set(q.admit("A", DOWNLOAD));
            } catch (Throwable e) {
                result.set(e);
            }
        });
        awaitCondition(() -> q.stats().waiting() == 1);
        held.close();
        admitted.join();
        assertThat(result.get()).isInstanceOf(Admission.class);

        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread interrupted = Thread.ofVirtual().start(() -> {
            try {
                q.admit("A", DOWNLOAD);
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        awaitCondition(() -> q.stats().waiting() == 1);
        interrupted.interrupt();
        interrupted.join();
        assertThat(failure.get()).isInstanceOf(InterruptedException.class);
        assertThat(q.stats().waiting()).isZero();
        assertThat(q.stats().cancellations()).isEqualTo(1);
        ((Admission) result.get()).close();
        assertThat(q.stats().inFlightDownloads()).isZero();
    }

    @Test
    void blockingAdmitTimesOutThroughTheTimer() throws Exception {
        AdmissionQueue q = queue(new AdmissionConfig(1, 1, 10, 100 * MS));
        q.admit("A", MUTATING_UPLOAD);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = Thread.ofVirtual().start(() -> {
            try {
                q.admit("A", MUTATING_UPLOAD);
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        awaitCondition(() -> q.stats().waiting() == 1);
        clock.advance(100 * MS);
        t.join();
        assertThat(failure.get()).isInstanceOf(AdmissionTimeoutException.class);
    }

    @Test
    void statsAreAggregatedWithoutPrincipalIds() {
        AdmissionQueue q = queue(AdmissionConfig.defaults(1));
        ask(q, "svc-secret", DOWNLOAD);
        ask(q, "svc-secret", DOWNLOAD);
        assertThat(q.stats().toString()).doesNotContain("svc-secret");
        assertThat(q.stats().refusals()).isZero();
        assertThatThrownBy(() -> q.admitAsync("", DOWNLOAD)).isInstanceOf(IllegalArgumentException.class);
    }
}
