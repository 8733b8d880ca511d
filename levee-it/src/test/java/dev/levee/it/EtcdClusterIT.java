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
            int elected = next[0];
            await("the new leader's term is applied").atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(20))
                    .until(() -> etcd.raftTerm(elected).orElse(0) > termBefore);

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

    /**
     * A client that reaches the cluster only through {@link EtcdLinks} is cut off by a partition (its
     * writes fail, its lease keep-alives stop, and etcd expires its lease while the other client's stays)
     * and works again after the heal. Prints how long the first write after the heal took.
     */
    @Test
    void aPartitionedClientLosesItsLeaseAndRecoversAfterTheHeal() throws Exception {
        try (EtcdCluster etcd = EtcdCluster.start(3);
                EtcdLinks links = EtcdLinks.to(etcd);
                Client cut = Etcd.client(links.endpointList());
                Client other = Etcd.client(etcd.endpointList())) {
            cut.getKVClient().put(bytes("/it/p"), bytes("0")).get(5, TimeUnit.SECONDS);
            long ttl = 2;
            long lease = cut.getLeaseClient().grant(ttl).get(5, TimeUnit.SECONDS).getID();
            cut.getKVClient().put(bytes("/it/leased"), bytes("x"),
                    io.etcd.jetcd.options.PutOption.builder().withLeaseId(lease).build()).get(5, TimeUnit.SECONDS);
            cut.getLeaseClient().keepAlive(lease, new io.grpc.stub.StreamObserver<>() {
                @Override public void onNext(io.etcd.jetcd.lease.LeaseKeepAliveResponse r) { }
                @Override public void onError(Throwable t) { }
                @Override public void onCompleted() { }
            });
            assertThat(links.bytesToEtcd()).isPositive();

            links.partition(true);
            long t0 = System.nanoTime();
            org.assertj.core.api.Assertions.assertThatThrownBy(
                    () -> cut.getKVClient().put(bytes("/it/p"), bytes("1")).get(2, TimeUnit.SECONDS))
                    .isInstanceOf(java.util.concurrent.TimeoutException.class);
            await("etcd expires the partitioned client's lease").atMost(Duration.ofSeconds(ttl + 8)).pollInterval(Duration.ofMillis(50))
                    .until(() -> get(other, "/it/leased", GetOption.DEFAULT) == null);
            long expiredMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertThat(get(other, "/it/p", GetOption.DEFAULT)).as("the write during the partition did not pass").isEqualTo("0");

            links.partition(false);
            long t1 = System.nanoTime();
            await("a put through the healed links").atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
                    .until(() -> cut.getKVClient().put(bytes("/it/p"), bytes("2")).get(3, TimeUnit.SECONDS) != null);
            long healedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t1);
            assertThat(get(other, "/it/p", GetOption.DEFAULT)).isEqualTo("2");
            System.out.printf("EtcdClusterIT: partitioned client's %d s lease expired %d ms after the partition;"
                    + " first put after the heal took %d ms%n", ttl, expiredMs, healedMs);
        }
    }

    @Test
    void badMemberCountsAreRefused() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> EtcdCluster.start(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 to 7");
    }
}
