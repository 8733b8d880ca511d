package dev.levee.roles;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.config.QuotaConfigLoader;
import dev.levee.config.QuotaSource;
import dev.levee.config.StaticQuotaSource;
import dev.levee.limiter.DecisionStats;
import dev.levee.limiter.LimiterService;
import dev.levee.quota.QuotaConfig;
import dev.levee.runtime.HostPort;
import io.etcd.jetcd.Client;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The limiter's membership as {@code levee limiter} and the local stack assemble it (issue 22's rule, kept by the
 * extraction of issue 25): it joins etcd's membership only once its quotas are usable, and never once it left.
 * etcd is not needed: a registration is made at once and retried in the background, so whether one was made is what
 * is asserted.
 */
class RoleAssemblerTest {

    static final QuotaConfig CONFIG = QuotaConfigLoader.parse("""
            factor: 1
            default: {rate: 100, burst: 10}
            """, "test");

    static Vertx vertx;
    static Client etcd;

    @BeforeAll
    static void start() {
        vertx = Vertx.vertx();
        etcd = Client.builder().endpoints("http://127.0.0.1:1").build(); // nothing listens: registrations retry
    }

    @AfterAll
    static void stop() throws Exception {
        etcd.close();
        vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    /** A static source whose usability the test sets, as an etcd source with an invalid {@code quotas/default}. */
    static final class Switchable implements QuotaSource {
        final StaticQuotaSource inner = new StaticQuotaSource(CONFIG);
        volatile boolean usable;

        @Override
        public QuotaConfig current() {
            return inner.current();
        }

        @Override
        public long revision() {
            return inner.revision();
        }

        @Override
        public boolean ready() {
            return true;
        }

        @Override
        public long rejectedUpdates() {
            return 0;
        }

        @Override
        public boolean usable() {
            return usable;
        }

        @Override
        public void onChange(Consumer<QuotaConfig> listener) {
            inner.onChange(listener);
        }

        @Override
        public void close() {
            inner.close();
        }

        @Override
        public SortedMap<String, String> invalidKeys() {
            return usable ? new TreeMap<>() : new TreeMap<>(java.util.Map.of("quotas/default", "rate: -1"));
        }

        void fix() {
            usable = true;
            inner.set(CONFIG);
        }
    }

    private static RoleAssembler.Limiter limiter(String id, QuotaSource source, RoleAssembler.EtcdMember member)
            throws Exception {
        return RoleAssembler.startLimiter(vertx, new LimiterService.Options(id, new HostPort("127.0.0.1", 0), null, null,
                        Duration.ofSeconds(1), 1000), source, member, dev.levee.runtime.SystemTicker.INSTANCE, new SimpleMeterRegistry(),
                DecisionStats.DEFAULTS)
                .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    @Test
    void aLimiterJoinsOnceItsQuotasAreUsable() throws Exception {
        Switchable source = new Switchable();
        RoleAssembler.Limiter l = limiter("l1", source, new RoleAssembler.EtcdMember(etcd, "/levee", 5));
        try {
            assertThat(l.registered()).as("unusable quotas: not a member").isFalse();
            assertThat(l.service().address().port()).isPositive(); // but up, saying why on /health
            source.fix();
            assertThat(l.registered()).as("fixed: joins").isTrue();
        } finally {
            l.stop().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aLimiterThatLeftDoesNotJoinWhenItsQuotasBecomeUsable() throws Exception {
        Switchable source = new Switchable();
        RoleAssembler.Limiter l = limiter("l2", source, new RoleAssembler.EtcdMember(etcd, "/levee", 5));
        l.close(); // leaving, as on SIGTERM before the drain
        source.fix();
        assertThat(l.registered()).isFalse();
        l.service().stop().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    @Test
    void withUsableQuotasALimiterJoinsAtOnceAndWithoutEtcdNever() throws Exception {
        Switchable usable = new Switchable();
        usable.usable = true;
        RoleAssembler.Limiter member = limiter("l3", usable, new RoleAssembler.EtcdMember(etcd, "/levee", 5));
        RoleAssembler.Limiter heartbeats = limiter("l4", new StaticQuotaSource(CONFIG), null);
        try {
            assertThat(member.registered()).isTrue();
            assertThat(heartbeats.registered()).isFalse();
        } finally {
            member.stop().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
            heartbeats.stop().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }
}
