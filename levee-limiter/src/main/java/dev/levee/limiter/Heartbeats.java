package dev.levee.limiter;

import dev.levee.core.Ticker;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Json;
import dev.levee.runtime.LoudCondition;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A limiter's membership through an observer (embedded membership, docs/design.md §7): {@code POST /v1/heartbeat}
 * with its id and address every heartbeat interval, {@code DELETE /v1/limiters/<id>} when it leaves. Warns when
 * heartbeats start failing, at most once per warning interval while they keep failing, and once when they reach
 * the observer again; while they fail the limiter's {@code /health} answers 503. Without an observer it is never
 * started and counts as reachable.
 */
final class Heartbeats {

    private static final Logger LOG = LoggerFactory.getLogger("levee.limiter");

    private final Vertx vertx;
    private final String id;
    private final HostPort observer;
    private final java.time.Duration interval;
    private final Ticker ticker;
    private final LoudCondition unregistered;
    private HttpClientAgent client;
    private long timer = -1;
    private HostPort advertised;
    /** Whether the last heartbeat reached the observer (true until one failed, and without an observer). */
    private volatile boolean reachable = true;
    private volatile String error;
    private volatile boolean leaving;

    /**
     * @param observer      the observer; null: none (membership elsewhere)
     * @param interval      the heartbeat interval
     * @param warnInterval  least time between two warnings while heartbeats fail
     * @param ticker        the clock of the warnings' interval
     */
    Heartbeats(Vertx vertx, String id, HostPort observer, java.time.Duration interval, java.time.Duration warnInterval,
               Ticker ticker) {
        this.vertx = vertx;
        this.id = id;
        this.observer = observer;
        this.interval = interval;
        this.ticker = ticker;
        this.unregistered = new LoudCondition(warnInterval);
    }

    /** Whether the last heartbeat reached the observer (true without an observer). */
    boolean reachable() {
        return reachable;
    }

    /** Why the last heartbeat did not reach the observer (null when it did). */
    String error() {
        return error;
    }

    /**
     * Sends the first heartbeat now and the others every interval, with {@code advertised} as the address; no-op
     * without an observer.
     */
    void start(HostPort advertised) {
        if (observer == null) {
            return;
        }
        this.advertised = advertised;
        client = vertx.createHttpClient(new HttpClientOptions().setConnectTimeout(1000).setKeepAlive(true));
        send();
        timer = vertx.setPeriodic(interval.toMillis(), t -> send());
    }

    /**
     * Stops the heartbeats and tells the observer this limiter leaves (a failure to reach it is ignored).
     *
     * @return completes once the observer answered or could not be reached
     */
    Future<Void> leave() {
        leaving = true;
        if (timer >= 0) {
            vertx.cancelTimer(timer);
        }
        if (client == null) {
            return Future.succeededFuture();
        }
        return client.request(new RequestOptions().setMethod(HttpMethod.DELETE)
                        .setHost(observer.host()).setPort(observer.port())
                        .setURI("/v1/limiters/" + id).setTimeout(1000))
                .compose(r -> r.send()).<Void>mapEmpty().recover(e -> Future.succeededFuture())
                .eventually(() -> client.close());
    }

    /** Stops the heartbeats without telling the observer (as a crash would). */
    void kill() {
        if (timer >= 0) {
            vertx.cancelTimer(timer);
        }
        if (client != null) {
            client.close();
        }
    }

    private void send() {
        byte[] body = Json.write(Map.of("id", id, "address", advertised.toString()));
        client.request(new RequestOptions().setMethod(HttpMethod.POST).setHost(observer.host())
                        .setPort(observer.port()).setURI("/v1/heartbeat").setTimeout(2000)
                        .putHeader("Content-Type", "application/json"))
                .compose(r -> r.send(Buffer.buffer(body)))
                .onSuccess(resp -> done(resp.statusCode() == 204 ? null : "HTTP " + resp.statusCode()))
                .onFailure(e -> done(e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
    }

    /** Records a heartbeat's outcome ({@code failure} null: accepted) and warns as the class says. */
    private void done(String failure) {
        if (leaving) {
            return;
        }
        reachable = failure == null;
        error = failure;
        var r = unregistered.update(ticker.read(), failure == null ? null
                : "heartbeats of limiter " + id + " do not reach the observer " + observer
                        + ": clients may not list it (its /health answers 503)");
        switch (r.kind()) {
            case BEGAN -> LOG.warn("{} ({})", r.reason(), failure);
            case LASTS -> LOG.warn("{} (for {} s; {})", r.reason(), r.seconds(), failure);
            case ENDED -> LOG.info("heartbeats of limiter {} reach the observer {} again after {} s", id, observer,
                    r.seconds());
            case NONE -> {
            }
        }
    }
}
