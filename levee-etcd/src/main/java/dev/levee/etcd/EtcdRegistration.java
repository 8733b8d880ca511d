package dev.levee.etcd;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.support.CloseableClient;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Registers one limiter in etcd under a lease (docs/design.md §7): {@code <prefix>limiters/<id>} =
 * {@code {"address": "host:port"}}, kept alive; when the lease is lost (expired while etcd was
 * unreachable, revoked, keep-alive stream ended) it registers again with a new lease. Closing revokes
 * the lease so the limiter leaves at once; a crash leaves it to expire after the TTL.
 */
public final class EtcdRegistration implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("levee.membership.etcd");

    private final Client client;
    private final String key;
    private final String value;
    private final long ttlSeconds;
    private final ScheduledExecutorService timer;
    private volatile long leaseId;
    private volatile CloseableClient keepAlive;
    private volatile boolean closed;
    private volatile boolean registered;

    private EtcdRegistration(Client client, String prefix, String id, String address, long ttlSeconds) {
        this.client = client;
        this.key = Etcd.normalisePrefix(prefix) + "limiters/" + id;
        this.value = "{\"address\": \"" + address.replace("\"", "") + "\"}";
        this.ttlSeconds = ttlSeconds;
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "levee-etcd-lease");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Starts registering (asynchronously; retries until etcd answers).
     *
     * @param ttlSeconds lease TTL in seconds, ≥ 1 (default 5)
     * @return the registration
     * @throws IllegalArgumentException when the TTL is below 1 s
     */
    public static EtcdRegistration start(Client client, String prefix, String id, String address, long ttlSeconds) {
        if (ttlSeconds < 1) {
            throw new IllegalArgumentException("lease TTL must be >= 1 s");
        }
        EtcdRegistration r = new EtcdRegistration(client, prefix, id, address, ttlSeconds);
        r.timer.execute(r::register);
        return r;
    }

    private void register() {
        if (closed) {
            return;
        }
        try {
            long id = client.getLeaseClient().grant(ttlSeconds).get(3, TimeUnit.SECONDS).getID();
            client.getKVClient().put(Etcd.bytes(key), Etcd.bytes(value), PutOption.builder().withLeaseId(id).build())
                    .get(3, TimeUnit.SECONDS);
            leaseId = id;
            keepAlive = client.getLeaseClient().keepAlive(id, new StreamObserver<>() {
                @Override
                public void onNext(LeaseKeepAliveResponse r) {
                    if (r.getTTL() <= 0) {
                        lost("lease expired");
                    }
                }

                @Override
                public void onError(Throwable t) {
                    lost(t.toString());
                }

                @Override
                public void onCompleted() {
                    lost("keep-alive ended");
                }
            });
            registered = true;
            LOG.info("registered {} under lease {} (ttl {} s)", key, Long.toHexString(id), ttlSeconds);
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
                return;
            }
            LOG.warn("registering {} failed ({}); retrying in 1 s", key, e.toString());
            timer.schedule(this::register, 1, TimeUnit.SECONDS);
        }
    }

    private void lost(String why) {
        if (closed || !registered) {
            return;
        }
        registered = false;
        LOG.warn("lease of {} lost ({}); registering again", key, why);
        CloseableClient k = keepAlive;
        if (k != null) {
            k.close();
        }
        timer.schedule(this::register, 500, TimeUnit.MILLISECONDS);
    }

    /** Returns whether the key is registered under a live lease as far as this process knows. */
    public boolean registered() {
        return registered;
    }

    /** Revokes the lease (the limiter leaves at once) and stops. */
    @Override
    public void close() {
        closed = true;
        CloseableClient k = keepAlive;
        if (k != null) {
            k.close();
        }
        if (registered) {
            try {
                client.getLeaseClient().revoke(leaseId).get(2, TimeUnit.SECONDS);
            } catch (Exception e) {
                LOG.warn("revoking the lease of {} failed: {}", key, e.toString());
            }
        }
        timer.shutdownNow();
    }
}
