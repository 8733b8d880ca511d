package dev.levee.roles;

import dev.levee.config.QuotaSource;
import dev.levee.core.Ticker;
import dev.levee.etcd.EtcdMembership;
import dev.levee.etcd.EtcdQuotaSource;
import dev.levee.etcd.EtcdRegistration;
import dev.levee.limiter.DecisionStats;
import dev.levee.limiter.LimiterService;
import dev.levee.observer.ObserverService;
import dev.levee.observer.StatsPage;
import dev.levee.runtime.HostPort;
import io.etcd.jetcd.Client;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * How a limiter and an observer are put together from their parts — quota source, service, membership
 * (docs/design.md §7) — written once for {@code levee limiter} / {@code levee observer} (levee-cli) and for the
 * local stack of {@code levee demo} and the integration tests (levee-stack's {@code LocalStack}), so that the
 * stack runs its roles as production does.
 *
 * <p>Parts: {@link #etcdQuotaSource} (the quota source every role reads from etcd), {@link #startLimiter} (a
 * limiter that joins the etcd membership once its configuration is usable and leaves it before it drains),
 * {@link #startEtcdObserver} (an observer serving the membership of the limiters' leases, with what the
 * configuration in etcd says) and {@link #registerConfigMetrics}. What each caller owns stays with it: the etcd
 * client, the quota source, the flags and the process's lifecycle.
 */
public final class RoleAssembler {

    /** How often an etcd quota source probes etcd for readiness: 1 s. */
    public static final long ETCD_PROBE_MILLIS = 1000;

    /** Longest time the first load of the quotas from etcd may take: 10 s. */
    public static final long ETCD_FIRST_LOAD_MILLIS = 10_000;

    private RoleAssembler() {
    }

    /**
     * Starts the quota source of a role that reads its quotas from etcd: snapshot, then watch (docs/quotas.md).
     *
     * @param client        the etcd client (owned by the caller)
     * @param prefix        key prefix, e.g. {@code /levee}
     * @param maxValueBytes largest value accepted, in bytes (CLI {@code --etcd-max-value-size}, default 64 KiB)
     * @param ticker        the monotonic clock of its reads' deadlines
     * @return the running source
     * @throws IllegalStateException when etcd does not answer within {@value #ETCD_FIRST_LOAD_MILLIS} ms
     */
    public static EtcdQuotaSource etcdQuotaSource(Client client, String prefix, int maxValueBytes, Ticker ticker) {
        return EtcdQuotaSource.start(client, prefix, ETCD_PROBE_MILLIS, ETCD_FIRST_LOAD_MILLIS, maxValueBytes, ticker);
    }

    /**
     * Where a limiter is a member with etcd: a lease under {@code <prefix>limiters/<id>} (docs/design.md §7).
     *
     * @param client          the etcd client (owned by the caller)
     * @param prefix          key prefix
     * @param leaseTtlSeconds lease TTL in whole seconds, ≥ 1 (CLI {@code --lease-ttl}, default 5)
     */
    public record EtcdMember(Client client, String prefix, long leaseTtlSeconds) {
    }

    /**
     * Starts a limiter. With {@code etcd} it joins the membership under a lease once its quota source is
     * {@link QuotaSource#usable() usable}: while no configuration can be built from etcd (a key every decision needs is
     * invalid, issue 22) it stays up, says why on {@code /health} and on standard error, and joins once the key is
     * fixed. Without {@code etcd} it heartbeats to {@code options.observer()} as the service does.
     *
     * @param vertx    the Vert.x instance
     * @param options  the limiter's settings
     * @param source   its quota source (owned by the caller, who closes it after {@link Limiter#stop()})
     * @param etcd     its etcd membership, or null for heartbeats
     * @param ticker   the clock of its decisions
     * @param registry its meters
     * @param stats    its hot-resources statistics ({@link DecisionStats#DEFAULTS} for the defaults)
     * @return completes with the running limiter once it listens
     */
    public static Future<Limiter> startLimiter(Vertx vertx, LimiterService.Options options, QuotaSource source,
                                               EtcdMember etcd, Ticker ticker, MeterRegistry registry,
                                               DecisionStats.Options stats) {
        return LimiterService.start(vertx, options, source, ticker, registry, stats).map(s -> {
            Limiter limiter = new Limiter(s, source, etcd);
            if (etcd != null && !source.usable()) {
                System.err.println("levee limiter " + options.id() + ": no quota configuration can be built from etcd ("
                        + String.join(", ", source.invalidKeys().keySet()) + "): not joining the membership until it is"
                        + " fixed");
                source.onChange(cfg -> limiter.register());
            }
            limiter.register();
            return limiter;
        });
    }

    /**
     * A running limiter and its membership. {@link #stop()} leaves, then drains; {@link #close()} only leaves (revokes
     * the lease), for a caller that stops the service itself, e.g. with {@link LimiterService#kill()}.
     */
    public static final class Limiter implements AutoCloseable {
        private final LimiterService service;
        private final QuotaSource source;
        private final EtcdMember etcd;
        // a registration is made at most once, and never once stopping: the source's change may come at any time
        private final AtomicReference<EtcdRegistration> registration = new AtomicReference<>();
        private final AtomicBoolean stopping = new AtomicBoolean();

        private Limiter(LimiterService service, QuotaSource source, EtcdMember etcd) {
            this.service = service;
            this.source = source;
            this.etcd = etcd;
        }

        private void register() {
            synchronized (registration) {
                if (etcd != null && registration.get() == null && !stopping.get() && source.usable()) {
                    registration.set(EtcdRegistration.start(etcd.client(), etcd.prefix(), service.id(),
                            service.address().toString(), Math.max(1, etcd.leaseTtlSeconds())));
                }
            }
        }

        /** Returns the limiter service. */
        public LimiterService service() {
            return service;
        }

        /** Returns whether it holds a membership lease in etcd (false with heartbeats, and until its quotas are usable). */
        public boolean registered() {
            return registration.get() != null;
        }

        /**
         * Leaves first (revokes the lease; the service's stop ends heartbeats), then drains and closes
         * ({@link LimiterService#stop()}: {@code --drain-grace}, then {@code --shutdown-deadline}).
         *
         * @return completes once the service is closed
         */
        public Future<Void> stop() {
            close();
            return service.stop();
        }

        /** Leaves the etcd membership (revokes the lease) and never joins again; the service keeps running. */
        @Override
        public void close() {
            synchronized (registration) {
                stopping.set(true);
                EtcdRegistration r = registration.get();
                if (r != null) {
                    r.close();
                }
            }
        }
    }

    /**
     * Starts an observer whose membership is the limiters' leases in etcd and whose factor and readiness come from the
     * quota source (docs/design.md §7): {@code /health} 503 names refused values in etcd, and the list is refused
     * while no factor is known (issue 22).
     *
     * @param vertx        the Vert.x instance
     * @param listen       where it listens
     * @param client       the etcd client (owned by the caller)
     * @param prefix       key prefix
     * @param source       the quota source (owned by the caller)
     * @param ticker       the monotonic clock of the membership's reads
     * @param registry     its meters
     * @param statsTimeout {@code GET /v1/stats}: longest wait for each limiter's statistics
     * @param page         the live page to serve at {@code /ui/}, or null
     * @return completes with the running observer once it listens
     */
    public static Future<EtcdObserver> startEtcdObserver(Vertx vertx, HostPort listen, Client client, String prefix,
                                                         EtcdQuotaSource source, Ticker ticker, MeterRegistry registry,
                                                         Duration statsTimeout, StatsPage page) {
        EtcdMembership membership = EtcdMembership.start(client, prefix, () -> source.current().factor(), ticker);
        ObserverService.ConfigStatus config = new ObserverService.ConfigStatus(
                () -> source.invalidKeys().isEmpty() ? null : "invalid configuration values in etcd, serving with the"
                        + " rest: " + source.lastRejection(),
                () -> source.factorKnown() ? null : "no group factor is known: " + prefix
                        + (prefix.endsWith("/") ? "" : "/") + "factor is invalid and this observer never saw a"
                        + " valid value (" + source.lastRejection() + ")");
        return ObserverService.start(vertx, listen, membership, source::ready, registry, statsTimeout, page, config)
                .map(s -> new EtcdObserver(s, membership))
                .onFailure(e -> membership.close());
    }

    /**
     * A running etcd-backed observer and its membership watch.
     *
     * @param service    the observer service
     * @param membership the watch of the limiters' leases; {@link #close()} closes it (after the service stopped)
     */
    public record EtcdObserver(ObserverService service, EtcdMembership membership) implements AutoCloseable {
        /** Closes the membership watch. */
        @Override
        public void close() {
            membership.close();
        }
    }

    /**
     * Registers the meters of refused configuration values of a process that reads its quotas from etcd without a
     * limiter doing so (a limiter registers them itself, with its id): {@code levee_config_rejected_updates_total} and
     * {@code levee_config_invalid_keys}.
     *
     * @param source   the quota source
     * @param registry the process's meters
     */
    public static void registerConfigMetrics(EtcdQuotaSource source, MeterRegistry registry) {
        FunctionCounter.builder("levee_config_rejected_updates_total", source, EtcdQuotaSource::rejectedUpdates)
                .description("refused configuration values (each keeps its last good value, or none)").register(registry);
        Gauge.builder("levee_config_invalid_keys", source, q -> q.invalidKeys().size())
                .description("keys in etcd whose value is refused (/health names them)").register(registry);
    }
}
