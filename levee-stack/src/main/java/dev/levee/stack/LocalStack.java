package dev.levee.stack;

import dev.levee.client.LeveeClient;
import dev.levee.config.QuotaSource;
import dev.levee.gateway.GatewayOptions;
import dev.levee.gateway.GatewayService;
import dev.levee.limiter.DecisionStats;
import dev.levee.limiter.LimiterService;
import dev.levee.observer.ObserverService;
import dev.levee.roles.RoleAssembler;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.SystemTicker;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A whole Levee stack in one JVM on free loopback ports: observer, {@code n} limiters, the client
 * library and the gateway in front of an S3 backend (docs/design.md §9). Used by {@code levee demo} and
 * the integration tests.
 */
public final class LocalStack implements AutoCloseable {

    /**
     * Settings of a local stack.
     *
     * @param limiters   number of limiters
     * @param ttl        observer TTL
     * @param heartbeat  limiter heartbeat interval
     * @param refresh    client refresh interval
     * @param enforce    the gateway checks each request
     * @param onFailure  policy when no limiter answers
     * @param ui         the observer serves its live page at {@code /ui/} (docs/stats-page.md)
     */
    public record Settings(int limiters, Duration ttl, Duration heartbeat, Duration refresh, boolean enforce,
                           GatewayOptions.OnFailure onFailure, boolean ui) {
        /** Settings without the observer's live page. */
        public Settings(int limiters, Duration ttl, Duration heartbeat, Duration refresh, boolean enforce,
                        GatewayOptions.OnFailure onFailure) {
            this(limiters, ttl, heartbeat, refresh, enforce, onFailure, false);
        }

        /** Defaults for the demo and tests: 4 limiters, TTL 2 s, heartbeat 500 ms, refresh 500 ms. */
        public static Settings defaults() {
            return new Settings(4, Duration.ofSeconds(2), Duration.ofMillis(500), Duration.ofMillis(500), true,
                    GatewayOptions.OnFailure.ALLOW);
        }
    }

    /**
     * The bearer token of the gateway's {@code GET /health/ready}: one per process, random, so that the stack's readiness
     * can be asked (and the gateway does not warn that none is configured, issue 26 item 9).
     */
    public static final String HEALTH_TOKEN = java.util.HexFormat.of().formatHex(randomBytes());

    private static byte[] randomBytes() {
        byte[] b = new byte[16];
        new java.security.SecureRandom().nextBytes(b);
        return b;
    }

    private final Vertx vertx;
    private final List<AutoCloseable> extras = new ArrayList<>();
    private final ObserverService observer;
    private final List<LimiterService> limiters;
    private final LeveeClient client;
    private final GatewayService gateway;

    private LocalStack(Vertx vertx, ObserverService observer, List<LimiterService> limiters, LeveeClient client,
                       GatewayService gateway) {
        this.vertx = vertx;
        this.observer = observer;
        this.limiters = limiters;
        this.client = client;
        this.gateway = gateway;
    }

    /**
     * Starts the stack and waits until the client sees every limiter.
     *
     * @param backend  S3 backend port on 127.0.0.1
     * @param config   quota configuration in force
     * @param settings sizes and timings
     * @param registry meters of every component
     * @return the running stack
     * @throws IllegalStateException when a component cannot start within 30 s
     */
    public static LocalStack start(int backend, QuotaSource config, Settings settings, MeterRegistry registry) {
        Vertx vertx = dev.levee.runtime.Http.vertx();
        HostPort any = new HostPort("127.0.0.1", 0);
        ObserverService observer = await(ObserverService.start(vertx,
                new ObserverService.Options(any, settings.ttl(), config.current().factor(), 1024),
                SystemTicker.INSTANCE, registry, dev.levee.observer.StatsAggregator.DEFAULT_TIMEOUT,
                settings.ui() ? dev.levee.observer.StatsPage.load() : null));
        HostPort obs = new HostPort("127.0.0.1", observer.port());
        List<LimiterService> limiters = new ArrayList<>();
        for (int i = 1; i <= settings.limiters(); i++) {
            limiters.add(await(RoleAssembler.startLimiter(vertx, LimiterService.Options.builder("limiter-" + i).listen(any)
                    .observer(obs).heartbeat(settings.heartbeat()).build(), config, null, SystemTicker.INSTANCE, registry,
                    DecisionStats.DEFAULTS)).service());
        }
        LocalStack stack = withClientAndGateway(vertx, observer, limiters, backend, settings, registry);
        stack.waitForLimiters(settings.limiters());
        return stack;
    }

    /** Starts the client (on the observer) and the gateway (before {@code backend}) of either kind of stack. */
    private static LocalStack withClientAndGateway(Vertx vertx, ObserverService observer, List<LimiterService> limiters,
                                                   int backend, Settings settings, MeterRegistry registry) {
        HostPort any = new HostPort("127.0.0.1", 0);
        HostPort obs = new HostPort("127.0.0.1", observer.port());
        // one JVM on two cores carries the backend, the SDK and every component: a check gets 1 s
        LeveeClient client = await(LeveeClient.start(vertx, LeveeClient.Options.builder(obs)
                .refresh(settings.refresh()).checkTimeout(Duration.ofSeconds(1)).backoff(Duration.ofSeconds(2))
                .build(), SystemTicker.INSTANCE, registry));
        GatewayService gateway = await(GatewayService.start(vertx, GatewayOptions.builder(new HostPort("127.0.0.1", backend))
                .listen(any).admin(any).enforce(settings.enforce()).onFailure(settings.onFailure())
                .healthToken(HEALTH_TOKEN).build(), client, SystemTicker.INSTANCE, Clock.systemUTC(), registry));
        return new LocalStack(vertx, observer, limiters, client, gateway);
    }

    /**
     * Starts the stack with quotas, factor and membership in etcd (docs/design.md §4, §7): every limiter reads
     * its quotas from etcd and registers under a lease; the observer serves etcd's membership.
     *
     * @param backend   S3 backend port on 127.0.0.1
     * @param endpoints etcd endpoints
     * @param prefix    key prefix in etcd
     * @param settings  sizes and timings (heartbeat and TTL are not used: the lease TTL is 5 s)
     * @param registry  meters of every component
     * @return the running stack
     * @throws IllegalStateException when a component cannot start within 30 s
     */
    public static LocalStack startWithEtcd(int backend, List<String> endpoints, String prefix, Settings settings,
                                           MeterRegistry registry) {
        io.etcd.jetcd.Client etcd = dev.levee.etcd.Etcd.client(endpoints);
        dev.levee.etcd.EtcdQuotaSource source = RoleAssembler.etcdQuotaSource(etcd, prefix,
                dev.levee.etcd.Etcd.DEFAULT_MAX_VALUE_BYTES, SystemTicker.INSTANCE);
        Vertx vertx = dev.levee.runtime.Http.vertx();
        HostPort any = new HostPort("127.0.0.1", 0);
        RoleAssembler.EtcdObserver membership = await(RoleAssembler.startEtcdObserver(vertx, any, etcd, prefix, source,
                SystemTicker.INSTANCE, registry, dev.levee.observer.StatsAggregator.DEFAULT_TIMEOUT,
                settings.ui() ? dev.levee.observer.StatsPage.load() : null));
        ObserverService observer = membership.service();
        List<LimiterService> limiters = new ArrayList<>();
        List<AutoCloseable> leases = new ArrayList<>();
        for (int i = 1; i <= settings.limiters(); i++) {
            RoleAssembler.Limiter l = await(RoleAssembler.startLimiter(vertx, LimiterService.Options.builder("limiter-" + i)
                    .listen(any).heartbeat(settings.heartbeat()).build(), source,
                    new RoleAssembler.EtcdMember(etcd, prefix, 5), SystemTicker.INSTANCE, registry, DecisionStats.DEFAULTS));
            limiters.add(l.service());
            leases.add(l); // closing it revokes the lease
        }
        LocalStack stack = withClientAndGateway(vertx, observer, limiters, backend, settings, registry);
        stack.extras.addAll(leases);
        stack.extras.add(membership);
        stack.extras.add(source);
        stack.extras.add(etcd);
        stack.waitForLimiters(settings.limiters());
        return stack;
    }

    private void waitForLimiters(int n) {
        long deadline = SystemTicker.INSTANCE.read() + TimeUnit.SECONDS.toNanos(30);
        while (client.view().limiters().size() < n) {
            if (SystemTicker.INSTANCE.read() - deadline > 0) {
                close();
                throw new IllegalStateException("limiters did not register within 30 s");
            }
            await(client.refresh().recover(e -> Future.succeededFuture()));
            if (client.view().limiters().size() < n) {
                await(vertx.timer(50).mapEmpty());
            }
        }
    }

    private static <T> T await(Future<T> f) {
        try {
            return f.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("local stack could not start: " + e.getMessage(), e);
        }
    }

    /** Returns the Vert.x instance shared by all components. */
    public Vertx vertx() {
        return vertx;
    }

    /** Returns the observer. */
    public ObserverService observer() {
        return observer;
    }

    /** Returns the limiters, limiter-1 first. */
    public List<LimiterService> limiters() {
        return limiters;
    }

    /** Returns the client library. */
    public LeveeClient client() {
        return client;
    }

    /** Returns the gateway. */
    public GatewayService gateway() {
        return gateway;
    }

    @Override
    public void close() {
        try {
            await(gateway.stop(Duration.ofSeconds(2)).recover(e -> Future.succeededFuture()));
        } catch (RuntimeException e) {
            // closing anyway
        }
        for (LimiterService l : limiters) {
            try {
                await(l.kill().recover(e -> Future.succeededFuture()));
            } catch (RuntimeException e) {
                // closing anyway
            }
        }
        try {
            await(client.stop().recover(e -> Future.succeededFuture()));
            await(observer.stop().recover(e -> Future.succeededFuture()));
            await(vertx.close());
        } catch (RuntimeException e) {
            // closing anyway
        }
        for (AutoCloseable c : extras) {
            try {
                c.close();
            } catch (Exception e) {
                // closing anyway
            }
        }
    }
}
