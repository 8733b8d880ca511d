package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.runtime.HostPort;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which of several observers' lists a client takes (issue 22, item 9): {@link ObserverChoice}. */
class ObserverChoiceTest {

    static final HostPort A = new HostPort("127.0.0.1", 7001);
    static final HostPort B = new HostPort("127.0.0.1", 7002);
    static final HostPort C = new HostPort("127.0.0.1", 7003);

    static LeveeClient.View view(long revision, boolean ready, String membership) {
        return new LeveeClient.View(revision, 2, List.of(new LeveeClient.Member("l1", "127.0.0.1:9001")), "i" + revision,
                ready, membership);
    }

    static int choose(HostPort current, Object... pairs) {
        List<ObserverChoice.Answer> answers = new ArrayList<>();
        for (int i = 0; i < pairs.length; i += 2) {
            answers.add(new ObserverChoice.Answer((HostPort) pairs[i], (LeveeClient.View) pairs[i + 1]));
        }
        return ObserverChoice.choose(answers, current);
    }

    @Test
    void noObserverAnsweredIsNoChoice() {
        assertThat(choose(A, A, null, B, null)).isEqualTo(-1);
    }

    @Test
    void theNewestEtcdRevisionWinsWhicheverIsInUse() {
        assertThat(choose(A, A, view(10, true, "etcd"), B, view(12, true, "etcd"))).isEqualTo(1);
        assertThat(choose(B, A, view(12, true, "etcd"), B, view(10, true, "etcd"), C, view(11, true, "etcd")))
                .isZero();
    }

    @Test
    void equalEtcdRevisionsKeepTheObserverInUseElseTheFirstGiven() {
        assertThat(choose(B, A, view(10, true, "etcd"), B, view(10, true, "etcd"))).isEqualTo(1);
        assertThat(choose(null, A, view(10, true, "etcd"), B, view(10, true, "etcd"))).isZero();
        assertThat(choose(C, A, view(10, true, "etcd"), B, view(10, true, "etcd"))).isZero(); // C gave nothing
    }

    @Test
    void aListNotReadyIsSkippedWhileAnotherIsReadyWhateverItsRevision() {
        assertThat(choose(A, A, view(99, false, "etcd"), B, view(10, true, "etcd"))).isEqualTo(1);
        assertThat(choose(B, A, view(3, true, "heartbeat"), B, view(7, false, "heartbeat"))).isZero();
    }

    @Test
    void whenNoneIsReadyTheNotReadyListsAreChosenAmong() {
        // the client then holds its last list (LeveeClient), or takes this one when it has none
        assertThat(choose(null, A, null, B, view(4, false, "etcd"))).isEqualTo(1);
        assertThat(choose(null, A, view(5, false, "etcd"), B, view(4, false, "etcd"))).isZero();
    }

    @Test
    void heartbeatRevisionsDoNotCompareSoTheObserverInUseStays() {
        assertThat(choose(B, A, view(50, true, "heartbeat"), B, view(2, true, "heartbeat"))).isEqualTo(1);
        assertThat(choose(null, A, view(2, true, "heartbeat"), B, view(50, true, "heartbeat"))).isZero();
        // an observer older than issue 22 does not say where its list comes from: not compared either
        assertThat(choose(B, A, view(50, true, "etcd"), B, view(2, true, null))).isEqualTo(1);
    }

    @Test
    void theObserverInUseGoneTheFirstReadyOneGivenIsTaken() {
        assertThat(choose(A, A, null, B, view(2, true, "heartbeat"), C, view(9, true, "heartbeat"))).isEqualTo(1);
        assertThat(choose(A, A, null, B, view(2, true, "etcd"), C, view(9, true, "etcd"))).isEqualTo(2);
    }
}
