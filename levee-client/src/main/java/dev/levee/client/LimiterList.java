package dev.levee.client;

import dev.levee.client.LeveeClient.Options;
import dev.levee.client.LeveeClient.View;
import dev.levee.core.Ticker;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.LoudCondition;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The list of active limiters a client checks with (docs/design.md §7, §11): polls the observers every
 * {@code refresh}, takes the list from one that answered ({@link ObserverChoice}), holds the list in use against
 * one that may be a gap, and says when the client is degraded. The rules are {@link LeveeClient}'s class
 * comment's: the last good list is kept while no observer answers; a list not ready, or empty / less than half
 * the list in use, is adopted only once it is ready / still so after {@code listGrace}; each hold is logged and
 * counted in {@code levee_client_list_holds_total}, {@code levee_client_list_held} is 1 meanwhile; a degraded
 * state (no limiter known, no observer reachable) and observers down while another serves are a WARN when they
 * begin and once per {@code warnInterval} after. Time from the client's {@link Ticker}. Thread-safe.
 */
final class LimiterList {

    private static final Logger LOG = LoggerFactory.getLogger("levee.client");

    private final Vertx vertx;
    private final io.vertx.core.Context context;
    private final Options options;
    private final Ticker ticker;
    private final MeterRegistry registry;
    private final HttpClientAgent http;
    /** Told of each list adopted, after it is in force. */
    private final Consumer<View> adopted;
    private volatile View view = new View(0, 1, List.of());
    /** Set by {@link #stop()}: the client says nothing of its state any more. */
    private volatile boolean stopped;
    /** Whether the last refresh round reached an observer (any one of those given). */
    private volatile boolean observerReachable;
    /** Why the last refresh failed, for the warning. */
    private volatile String lastObserverError;
    /** The observer whose list was taken last; null before the first answer. */
    private volatile HostPort source;
    /** What was wrong with each observer in the last round ("unreachable (why)", "not ready"); absent: fine. */
    private volatile Map<HostPort, String> observerProblems = Map.of();
    /** Each observer's incarnation as last seen, to say when one restarted. */
    private final Map<HostPort, String> incarnations = new java.util.HashMap<>();
    /** Refresh rounds started, and the latest whose answers were applied (under this list's lock). */
    private final AtomicLong rounds = new AtomicLong();
    private long appliedRound;
    /** Some observers unreachable or not ready while another serves the list: warned, not failed. */
    private final LoudCondition observersDown;
    private long refreshTimer = -1;
    /** Whether the list in use is being kept against a newer one, and since when (ticker ns). */
    private volatile boolean held;
    private long heldSince;
    /** The reason of the hold in progress, logged once per hold. */
    private String holdReason;
    /** No limiter known or the observer unreachable: warned at start, every warnInterval, and at the end. */
    private final LoudCondition degraded;
    /**
     * The gauges this list registered, removed by {@link #stop()}: a gauge names its client, so a client started
     * after this one on the same registry would otherwise find the names taken (Micrometer keeps the first and
     * warns "This Gauge has been already registered") and its gauges would read the stopped client.
     */
    private final List<io.micrometer.core.instrument.Meter> gauges = new java.util.concurrent.CopyOnWriteArrayList<>();

    LimiterList(Vertx vertx, io.vertx.core.Context context, Options options, Ticker ticker, MeterRegistry registry,
                HttpClientAgent http, Consumer<View> adopted) {
        this.vertx = vertx;
        this.context = context;
        this.options = options;
        this.ticker = ticker;
        this.registry = registry;
        this.http = http;
        this.adopted = adopted;
        gauges.add(io.micrometer.core.instrument.Gauge.builder("levee_client_list_held", this, c -> c.held ? 1 : 0)
                .description("1 while the last limiter list is kept against a newer one (see levee_client_list_holds_total)")
                .register(registry));
        this.degraded = new LoudCondition(options.warnInterval());
        this.observersDown = new LoudCondition(options.warnInterval());
        gauges.add(io.micrometer.core.instrument.Gauge.builder("levee_client_observers_unreachable", this,
                        c -> c.observerProblems.values().stream().filter(p -> p.startsWith("unreachable")).count())
                .description("observers (of those given to --observer) that did not answer the last refresh")
                .register(registry));
        gauges.add(io.micrometer.core.instrument.Gauge.builder("levee_client_fail_open", this, c -> c.view.limiters().isEmpty() ? 1 : 0)
                .description("1 while no limiter is known: every check answers failed and passes by the failure policy"
                        + " (counted in levee_client_results_total{result=\"failed\"})")
                .register(registry));
        gauges.add(io.micrometer.core.instrument.Gauge.builder("levee_client_observer_unreachable", this,
                        c -> c.observerReachable ? 0 : 1)
                .description("1 while the last refresh reached no observer (the last list is kept)")
                .register(registry));
        // both reasons exported from the start at 0, so that rate() sees the first hold and dashboards find the series
        holds("not_ready");
        holds("shrunk");
    }

    /** Fetches the list once, then every {@code refresh}; completes once the first refresh finished (either way). */
    Future<Void> start() {
        return refresh().recover(e -> Future.succeededFuture()).map(v -> {
            refreshTimer = vertx.setPeriodic(options.refresh().toMillis(), t -> poll());
            sayIfDegraded();
            return null;
        });
    }

    /** One refresh as the timer makes it: the refresh, then what is to be said about the state it left. */
    Future<Void> poll() {
        return refresh().onComplete(ar -> sayIfDegraded());
    }

    /** Fetches the list now (see {@link LeveeClient#refresh()}). */
    Future<Void> refresh() {
        if (Vertx.currentContext() == null) {
            Promise<Void> done = Promise.promise();
            context.runOnContext(v -> fetch().onComplete(done));
            return done.future();
        }
        return fetch();
    }

    /**
     * One refresh round: asks every observer at once, waits for each answer (or failure: a refused connection at
     * once, a silent observer after the request's idle timeout of {@code max(500 ms, refresh)}), then takes the
     * list {@link ObserverChoice} picks. Fails, keeping the last list, when no observer answered.
     */
    private Future<Void> fetch() {
        long round = rounds.incrementAndGet();
        List<HostPort> observers = options.observers();
        List<Future<View>> polls = new java.util.ArrayList<>(observers.size());
        for (HostPort o : observers) {
            polls.add(fetchFrom(o));
        }
        return Future.join(polls).transform(ignored -> {
            List<ObserverChoice.Answer> answers = new java.util.ArrayList<>(observers.size());
            Map<HostPort, String> problems = new java.util.LinkedHashMap<>();
            for (int i = 0; i < observers.size(); i++) {
                Future<View> f = polls.get(i);
                View v = f.succeeded() ? f.result() : null;
                answers.add(new ObserverChoice.Answer(observers.get(i), v));
                if (v == null) {
                    problems.put(observers.get(i), "unreachable (" + reason(f.cause()) + ")");
                } else if (!v.isReady()) {
                    problems.put(observers.get(i), "not ready");
                }
            }
            synchronized (this) {
                if (round < appliedRound) {
                    return Future.<Void>succeededFuture(); // a slower earlier round must not undo a later one
                }
                appliedRound = round;
                for (ObserverChoice.Answer a : answers) {
                    String was = a.view() == null ? null : incarnations.put(a.observer(), a.view().incarnation());
                    if (was != null && a.view().incarnation() != null && !was.equals(a.view().incarnation())) {
                        LOG.info("observer {} restarted (incarnation {} -> {}): revisions start again", a.observer(),
                                was, a.view().incarnation());
                    }
                }
                observerProblems = Map.copyOf(problems);
                int chosen = ObserverChoice.choose(answers, source);
                if (chosen < 0) {
                    // said (WARN) by sayIfDegraded, with this cause, at once and every warnInterval while it lasts
                    lastObserverError = observers.size() == 1 ? reason(polls.get(0).cause())
                            : problems.entrySet().stream().map(e -> e.getKey() + " " + e.getValue())
                            .collect(java.util.stream.Collectors.joining("; "));
                    observerReachable = false;
                    return Future.<Void>failedFuture(lastObserverError);
                }
                observerReachable = true;
                HostPort from = answers.get(chosen).observer();
                View v = answers.get(chosen).view();
                HostPort was = source;
                if (was != null && !was.equals(from)) {
                    String problem = problems.get(was);
                    LOG.info("taking the limiter list from observer {} (revision {}): {}", from, v.revision(),
                            problem != null ? "observer " + was + " is " + problem
                                    : "its revision is newer than observer " + was + "'s");
                }
                source = from;
                adoptOrHold(v);
            }
            return Future.<Void>succeededFuture();
        });
    }

    /** Asks one observer for its list; fails when it does not answer or answers something unusable. */
    private Future<View> fetchFrom(HostPort observer) {
        return LimiterChannel.request(http, new RequestOptions().setMethod(HttpMethod.GET).setHost(observer.host())
                        .setPort(observer.port()).setURI("/v1/limiters")
                        .setIdleTimeout(Math.max(500, options.refresh().toMillis())))
                .compose(r -> r.send())
                .compose(resp -> resp.body().map(b -> {
                    if (resp.statusCode() != 200) {
                        throw new IllegalStateException("observer answered HTTP " + resp.statusCode());
                    }
                    try {
                        return CheckBodies.LENIENT.readValue(b.getBytes(), View.class);
                    } catch (java.io.IOException e) {
                        throw new IllegalStateException("observer sent a malformed list: " + e.getMessage());
                    }
                }))
                .map(v -> {
                    if (v.factor() < 1 || v.limiters() == null) {
                        throw new IllegalStateException("observer sent factor < 1 or no list");
                    }
                    return v;
                });
    }

    private static String reason(Throwable e) {
        return e == null ? "no answer" : e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    }

    /**
     * Adopts {@code v} unless it may be a gap (see {@link LeveeClient}'s class comment): not ready, or empty / less
     * than half the list in use, for at most {@code listGrace}.
     */
    private void adoptOrHold(View v) {
        View old = view;
        int had = old.limiters().size();
        String reason = null;
        if (had > 0 && !v.isReady()) {
            reason = "not_ready";
        } else if (had > 0 && v.limiters().size() * 2 < had && !options.listGrace().isZero()) {
            reason = "shrunk";
        }
        long now = ticker.read();
        if (reason != null) {
            if (!held || !reason.equals(holdReason)) {
                if (!held) {
                    heldSince = now;
                }
                holdReason = reason;
                holds(reason).increment();
                held = true;
                LOG.warn("observer {} sent {} limiters (revision {}, {}) against {} in use: keeping the last list{}",
                        source, v.limiters().size(), v.revision(),
                        reason.equals("not_ready") ? "not ready" : "fewer than half", had,
                        reason.equals("not_ready") ? " until it is ready"
                                : " for up to " + options.listGrace().toMillis() + " ms");
            }
            // a list that is not ready is kept like an unreachable observer's (docs/design.md §7); a shrunk one for the grace
            if (reason.equals("not_ready") || now - heldSince < options.listGrace().toNanos()) {
                return;
            }
            LOG.warn("limiter list still {} limiters after {} ms: adopting it", v.limiters().size(),
                    options.listGrace().toMillis());
        } else if (held) {
            LOG.info("limiter list back to {} limiters after {} ms: the last list was kept meanwhile",
                    v.limiters().size(), (now - heldSince) / 1_000_000);
        }
        holdReason = null;
        held = false;
        if (v.revision() != old.revision() || v.factor() != old.factor() || v.limiters().size() != had) {
            LOG.info("limiter list revision={} factor={} limiters={}", v.revision(), v.factor(), v.limiters().size());
        }
        view = v;
        adopted.accept(v);
    }

    /** See {@link LeveeClient#degradedReason()}. */
    String degradedReason() {
        if (stopped) {
            return null;
        }
        View v = view;
        if (v.limiters().isEmpty()) {
            return (observerReachable ? "observer " + source + " lists no active limiter"
                    : observersText() + " unreachable and no limiter known")
                    + ": every check answers 'failed' and passes by the failure policy (fails open by default)";
        }
        if (!observerReachable) {
            return observersText() + " unreachable: checks use the last list (" + v.limiters().size()
                    + " limiters, revision " + v.revision() + "), which may be out of date";
        }
        return null;
    }

    /** "observer A" for one observer, "observers A, B" for several: what the messages name. */
    private String observersText() {
        List<HostPort> o = options.observers();
        return o.size() == 1 ? "observer " + o.get(0) : "observers " + o.stream().map(HostPort::toString)
                .collect(java.util.stream.Collectors.joining(", "));
    }

    /** See {@link LeveeClient#observersDownReason()}. */
    String observersDownReason() {
        Map<HostPort, String> problems = observerProblems;
        if (stopped || !observerReachable || problems.isEmpty() || options.observers().size() == 1) {
            return null; // one observer: its state is the client's (degradedReason, the list hold's own WARN)
        }
        StringBuilder b = new StringBuilder();
        for (HostPort o : options.observers()) { // in the order given: the same set reads the same each time
            String p = problems.get(o);
            if (p != null) {
                b.append(b.isEmpty() ? "" : ", ").append("observer ").append(o)
                        .append(p.startsWith("unreachable") ? " unreachable" : " " + p);
            }
        }
        return b + ": limiter lists from observer " + source;
    }

    HostPort observerInUse() {
        return source;
    }

    Map<HostPort, String> observerProblems() {
        return observerProblems;
    }

    boolean failingOpen() {
        return !stopped && view.limiters().isEmpty();
    }

    /** Logs the degraded state: a WARN when it begins and at most once per warnInterval while it lasts. */
    private void sayIfDegraded() {
        LoudCondition.Report r = degraded.update(ticker.read(), degradedReason());
        switch (r.kind()) {
            case BEGAN -> LOG.warn("{}{}", r.reason(), observerReachable ? "" : " (" + lastObserverError + ")");
            case LASTS -> LOG.warn("{} (for {} s{})", r.reason(), r.seconds(),
                    observerReachable ? "" : "; " + lastObserverError);
            case ENDED -> LOG.info("checks decided by limiters again after {} s ({} limiters known)", r.seconds(),
                    view.limiters().size());
            case NONE -> {
            }
        }
        LoudCondition.Report d = observersDown.update(ticker.read(), observersDownReason());
        switch (d.kind()) {
            case BEGAN, LASTS -> LOG.warn("{}{} ({})", d.reason(), d.kind() == LoudCondition.Kind.LASTS
                    ? " for " + d.seconds() + " s" : "", observerProblems.entrySet().stream()
                    .map(e -> e.getKey() + " " + e.getValue()).collect(java.util.stream.Collectors.joining("; ")));
            case ENDED -> LOG.info("no longer so after {} s: {}", d.seconds(), d.reason());
            case NONE -> {
            }
        }
    }

    private Counter holds(String reason) {
        return Counter.builder("levee_client_list_holds_total")
                .description("limiter lists not believed at once (observer not ready, or list shrunk sharply)")
                .tag("reason", reason).register(registry);
    }

    boolean held() {
        return held;
    }

    View view() {
        return view;
    }

    boolean observerReachable() {
        return observerReachable;
    }

    /** Stops polling; the gauges leave the registry. */
    void stop() {
        stopped = true;
        gauges.forEach(registry::remove);
        gauges.clear();
        if (refreshTimer >= 0) {
            vertx.cancelTimer(refreshTimer);
        }
    }
}
