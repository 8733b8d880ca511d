package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.levee.etcd.Etcd;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The {@link EtcdCluster} fixture against Debian's etcd: three member processes form a cluster, a jetcd
 * client given every endpoint writes and reads through it, the leader is killed with SIGKILL, a new one
 * is elected and the same client writes again, and the killed member, started again on its ports and
 * data, rejoins and serves what was written while it was down.
 *
 * <p>Run: {@code ./mvnw -B -ntp -pl levee-it -am verify -Dit.test=EtcdClusterIT -Dtest=none
 * -Dsurefire.failIfNoSpecifiedTests=false} (about 10 s). Prints the election and write-recovery times.
 */
class EtcdClusterIT {

    static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    static String get(Client c, String key, GetOption option) throws Exception {
        GetResponse r = c.getKVClient().get(bytes(key), option).get(5, TimeUnit.SECONDS);
        return r.getKvs().isEmpty() ? null : r.getKvs().getFirst().getValue().toString(StandardCharsets.UTF_8);
    }

    @Test
    void aKilledLeaderIsReplacedAndRejoinsWhenRestarted() throws Exception {
        try (EtcdCluster etcd = EtcdCluster.start(3); Client client = Etcd.client(etcd.endpointList(), Etcd.DEFAULT_MAX_MESSAGE_BYTES)) {
            assertThat(etcd.endpoints().split(",")).hasSize(3).allMatch(e -> e.matches("http://127\\.0\\.0\\.1:\\d+"));
            client.getKVClient().put(bytes("/it/a"), bytes("1")).get(5, TimeUnit.SECONDS);
            assertThat(get(client, "/it/a", GetOption.DEFAULT)).isEqualTo("1");
            for (int i = 0; i < 3; i++) { // every member has the write (serializable reads are local)
                try (Client one = Etcd.client(List.of(etcd.clientEndpoint(i)))) {
                    int member = i;
                    await("member " + i + " has /it/a").atMost(Duration.ofSeconds(5)).ignoreExceptions()
                            .until(() -> "1".equals(get(one, "/it/a", GetOption.builder().withSerializable(true).build())));
                    assertThat(etcd.healthy(member)).isTrue();
                }
            }

            int leader = etcd.awaitLeader(Duration.ofSeconds(10));
            long termBefore = etcd.raftTerm(leader).orElseThrow();
            long t0 = System.nanoTime();
            etcd.kill9(leader);
            assertThat(etcd.running(leader)).isFalse();
            int[] next = {-1};
            await("a new leader").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).until(() -> {
                next[0] = etcd.leaderIndex();
                return next[0] >= 0;
            });
            long electedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertThat(next[0]).isNotEqualTo(leader);
            assertThat(etcd.raftTerm(next[0]).orElseThrow()).isGreaterThan(termBefore);

            long t1 = System.nanoTime();
            await("a put through the same client after the leader's death").atMost(Duration.ofSeconds(15))
                    .pollInterval(Duration.ofMillis(50)).ignoreExceptions()
                    .until(() -> client.getKVClient().put(bytes("/it/b"), bytes("2")).get(3, TimeUnit.SECONDS) != null);
            long putMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t1);
            assertThat(get(client, "/it/b", GetOption.DEFAULT)).isEqualTo("2");
            System.out.printf("EtcdClusterIT: leader m%d killed; m%d elected after %d ms (election timeout %d ms);"
                    + " first put through the same client took %d ms after that%n", leader, next[0], electedMs,
                    EtcdCluster.ELECTION_MS, putMs);

            long t2 = System.nanoTime();
            etcd.restart(leader);
            long rejoinMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t2);
            etcd.awaitHealthy(Duration.ofSeconds(10));
            assertThat(etcd.leaderIndex()).isGreaterThanOrEqualTo(0);
            try (Client one = Etcd.client(List.of(etcd.clientEndpoint(leader)))) {
                await("the restarted member has what was written while it was down").atMost(Duration.ofSeconds(10))
                        .ignoreExceptions()
                        .until(() -> "2".equals(get(one, "/it/b", GetOption.builder().withSerializable(true).build())));
            }
            System.out.printf("EtcdClusterIT: m%d restarted and healthy after %d ms%n", leader, rejoinMs);
        }
    }

    @Test
    void badMemberCountsAreRefused() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> EtcdCluster.start(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 to 7");
    }
}
