package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.etcd.EtcdShareStore;
import dev.levee.governor.Direction;
import dev.levee.lease.Claim;
import dev.levee.lease.GatewayEntry;
import dev.levee.lease.Resource;
import dev.levee.lease.ShareStore;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link EtcdShareStore} against a real etcd (docs/design.md §10): the guard, the entry-revision condition
 * that refuses a late write (found by ShareKeeperModelTest), and writes under a revoked lease.
 */
class EtcdShareStoreIT {

    @RegisterExtension
    static final ItFixtures IT = ItFixtures.withVertxAndEtcd();

    private static final Resource DOWN = Resource.of(Direction.DOWNLOAD);

    private static <T> T get(CompletionStage<T> s) throws Exception {
        return s.toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    private static GatewayEntry entry(long share) {
        return new GatewayEntry("gw-1", "inc-1", Map.of(DOWN, new Claim(share, 100)));
    }

    @Test
    void entryWritesAreConditionalOnTheEntryRevisionAndRaisesOnTheGuard() throws Exception {
        EtcdShareStore store = new EtcdShareStore(IT.client(), "/levee-it-shares/");
        ShareStore.Lease lease = get(store.grant(5));
        ShareStore.View v0 = get(store.read());
        assertThat(v0.entries()).isEmpty();
        assertThat(v0.guardRevision()).isZero();

        // first write: the key is absent (revision 0) and the guard too
        assertThat(get(store.write(entry(10), lease.id(), true, 0, 0))).isEqualTo(ShareStore.WriteResult.OK);
        ShareStore.View v1 = get(store.read());
        assertThat(v1.entries()).containsExactly(entry(10));
        long r1 = v1.entryRevision(entry(10));
        assertThat(r1).isPositive();
        assertThat(v1.guardRevision()).isEqualTo(r1);

        // a late copy of a write computed before the entry existed is refused
        assertThat(get(store.write(entry(3), lease.id(), false, 0, 0))).isEqualTo(ShareStore.WriteResult.CONFLICT);
        // a lowering write computed from v1 goes through without the guard
        assertThat(get(store.write(entry(5), lease.id(), false, 0, r1))).isEqualTo(ShareStore.WriteResult.OK);
        ShareStore.View v2 = get(store.read());
        assertThat(v2.entries()).containsExactly(entry(5));
        assertThat(v2.guardRevision()).isEqualTo(v1.guardRevision());
        // ... and a late copy of it (or of any write computed from v1) is refused
        assertThat(get(store.write(entry(7), lease.id(), false, 0, r1))).isEqualTo(ShareStore.WriteResult.CONFLICT);
        // a raise on a stale guard is refused; on the current one it goes through
        assertThat(get(store.write(entry(9), lease.id(), true, 0, v2.entryRevision(entry(5)))))
                .isEqualTo(ShareStore.WriteResult.CONFLICT);
        assertThat(get(store.write(entry(9), lease.id(), true, v2.guardRevision(), v2.entryRevision(entry(5)))))
                .isEqualTo(ShareStore.WriteResult.OK);
        assertThat(get(store.read()).entries()).containsExactly(entry(9));

        // after the lease is gone: LEASE_GONE, keep-alive 0, and the entry has gone with it
        get(store.revoke(lease.id()));
        assertThat(get(store.read()).entries()).isEmpty();
        assertThat(get(store.keepAlive(lease.id()))).isLessThanOrEqualTo(0L);
        assertThat(get(store.write(entry(1), lease.id(), false, 0, 0))).isEqualTo(ShareStore.WriteResult.LEASE_GONE);
    }

    /** A value that is not a gateway entry is warned about once, not at every round (35 lines in 35 s before). */
    @Test
    void aBadEntryIsWarnedAboutOncePerValueNotEveryRound() throws Exception {
        String prefix = "/levee-it-bad-entry/";
        EtcdShareStore store = new EtcdShareStore(IT.client(), prefix);
        String key = EtcdShareStore.gatewaysPrefix(prefix) + "evil/x";
        var kv = IT.client().getKVClient();
        var k = io.etcd.jetcd.ByteSequence.from(key, java.nio.charset.StandardCharsets.UTF_8);
        get(kv.put(k, io.etcd.jetcd.ByteSequence.from("{\"gateway\":\"evil\",\"incarnation\":\"x\",\"claims\":"
                + "{\"download\":{\"share\":0,\"demand\":-1}}}", java.nio.charset.StandardCharsets.UTF_8)));
        for (int i = 0; i < 5; i++) {
            assertThat(get(store.read()).entries()).isEmpty();
        }
        java.util.function.IntSupplier warned = () -> {
            try {
                return (int) java.nio.file.Files.readAllLines(Stack.LOG).stream()
                        .filter(l -> l.contains("etcd key " + key + ": not a gateway entry")).count();
            } catch (java.io.IOException e) {
                return -1;
            }
        };
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(5)).until(() -> warned.getAsInt() >= 1);
        org.awaitility.Awaitility.await().pollDelay(java.time.Duration.ofMillis(300)).until(() -> true); // the ring drained
        assertThat(warned.getAsInt()).as("five reads of one bad value").isEqualTo(1);
        // another bad value at that key is a new thing to say
        get(kv.put(k, io.etcd.jetcd.ByteSequence.from("not json", java.nio.charset.StandardCharsets.UTF_8)));
        get(store.read());
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(5)).until(() -> warned.getAsInt() == 2);
    }
}
