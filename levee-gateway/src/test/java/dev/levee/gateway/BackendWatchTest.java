package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** {@code --backend-timeout} of one exchange on an injected clock: only the backend's own slowness counts (issue 22, item 3). */
class BackendWatchTest {

    static final long S = 1_000_000_000L;

    @Test
    void timeTheGatewayHoldsTheBodyCostsNothing() {
        BackendWatch w = new BackendWatch(2 * S);
        // a throttled upload: one 64 KiB write every 3 s (the governor, or the client), each taken at once
        for (long t = 0; t < 600 * S; t += 3 * S) {
            w.writing(t);
            w.written(65_536, t + 1_000_000);
            assertThat(w.expired(t + 3 * S - 1)).as("at %d s", t / S).isFalse();
        }
    }

    @Test
    void aBackendThatTakesNoneOfAWriteTimesOut() {
        BackendWatch w = new BackendWatch(2 * S);
        w.writing(10 * S);
        assertThat(w.expired(12 * S - 1)).isFalse();
        assertThat(w.expired(12 * S)).isTrue();
        assertThat(w.phase()).isEqualTo("taking the request body");
    }

    @Test
    void everyWriteTakenRefillsTheWholeTimeout() {
        BackendWatch w = new BackendWatch(2 * S);
        w.writing(0);
        w.writing(0); // two writes queued behind a slow backend
        w.written(65_536, 1_900_000_000L);
        assertThat(w.expired(3 * S)).isFalse(); // 1.1 s since the last progress
        assertThat(w.expired(3_900_000_000L)).isTrue();
    }

    @Test
    void theAnswerIsAwaitedFromTheEndOfTheRequest() {
        BackendWatch w = new BackendWatch(2 * S);
        w.writing(0);
        w.written(1, 0);
        assertThat(w.expired(100 * S)).as("before the end: the gateway holds the body").isFalse();
        w.requestEnded(100 * S);
        assertThat(w.phase()).isEqualTo("answering");
        assertThat(w.expired(102 * S - 1)).isFalse();
        assertThat(w.expired(102 * S)).isTrue();
    }

    @Test
    void aLateWriteCompletionDoesNotStopWaitingForTheAnswer() {
        BackendWatch w = new BackendWatch(2 * S);
        w.writing(0);
        w.requestEnded(0);
        w.written(10, S); // the last write reached the socket after the end was handed over
        assertThat(w.expired(3 * S - 1)).isFalse();
        assertThat(w.expired(3 * S)).isTrue();
    }

    @Test
    void afterAFailedWriteTheAnswerOrTheCloseIsAwaited() {
        BackendWatch w = new BackendWatch(2 * S);
        w.writing(0);
        w.written(0, S); // the backend reset the connection under the write
        assertThat(w.phase()).isEqualTo("answering");
        assertThat(w.expired(3 * S)).isTrue();
    }

    @Test
    void afterTheStatusLineTheResponsesReadingDrivesTheDeadline() {
        BackendWatch w = new BackendWatch(2 * S);
        w.requestEnded(0);
        w.answered(S);
        assertThat(w.phase()).isEqualTo("sending its response");
        assertThat(w.expired(100 * S)).as("not read yet (the download governor)").isFalse();
        w.deadline().resume(100 * S); // the gateway reads, nothing comes
        assertThat(w.expired(102 * S)).isTrue();
        w.written(1, 101 * S); // a write of an early-answered body completing late changes nothing
        assertThat(w.expired(102 * S)).isTrue();
    }
}
