package dev.levee.client;

import dev.levee.core.Rendezvous;
import dev.levee.core.SpillOrder;
import dev.levee.core.Ticker;
import dev.levee.runtime.HostPort;
import dev.levee.s3.S3Classification;
import dev.levee.s3.S3Classifier;
import dev.levee.s3.S3Request;
import dev.levee.wire.WireConnection;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Completable;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Checks S3 requests against the limiter cluster: the levee-client logic as a library (docs/design.md §1
 * step 2, §5).
 *
 * <p>Per check: classify the request (§3); take the cached list of active limiters from the
 * observer; rank them for the resource with HRW and keep the top {@code g = min(DF, active)}; ask
 * the group's members in round-robin order, members in local back-off last; a member that
 * fails (connection refused, timeout, HTTP 5xx or anything but 200/429) is skipped for the rest of
 * the request, backed off for {@code backoff}, and the next member is asked. When every member of
 * the group failed for this check or is backed off, the check <em>spills over</em> to the next
 * {@code g} limiters in HRW rank order (round-robin among them, the same {@code g} sent, so each
 * decides with the rate share {@code rate / g}): the limiters that become the group once the
 * observer drops the failed ones. Members in back-off are skipped straight to the spill-over and
 * asked only as a last resort. At most {@code g} attempts beyond the first {@code g}, each started
 * only if it can end within {@code checkDeadline} of the check's start; a decision from beyond the
 * group is counted in {@code levee_client_results_total{result="spilled"}} and logged with
 * {@code spilled=true}. When no limiter answers, the result is {@link ClientDecision.Result#FAILED}.
 * The list is refreshed every {@code refresh}; when the observer is unreachable the last good list is
 * kept. Given several observers (issue 22, item 9), every one is asked each round and the list is taken from
 * one that answered — a ready one, the newest etcd revision, else the one in use ({@link ObserverChoice}); the
 * client is degraded only when none answers, and an observer that does not answer while another does is a
 * WARN when it begins and once per {@code warnInterval} after ({@link #observersDownReason()}).
 *
 * <p>A new list is not believed at once when it may be a gap rather than a change (issue 10): while
 * the observer marks its list not ready (a restarted observer for one heartbeat TTL, an observer
 * that lost etcd) the last list is kept, as when the observer is unreachable; and a list that is
 * empty or holds fewer than half the members of the list in use (leases that expired together and
 * are being renewed) is adopted only if it is still so after {@code listGrace}. Each hold is logged
 * and counted in {@code levee_client_list_holds_total}; {@code levee_client_list_held} is 1 meanwhile.
 *
 * <p>Each result is logged on {@code levee.client} with the limiter's address. A check is made for a future
 * ({@link #check(S3Request)}) or with a completion handler ({@link #check(S3Classification, Completable)}: no future,
 * and the request may be classified from its received bytes first); either way one {@code Plan} carries it through
 * its attempts. Thread-safe.
 *
 * <p>The parts, each in a class of its own: {@link Options} (the settings, built with {@link Options#builder(List)});
 * {@link LimiterList} (observer polling, the choice among observers, list holds, the warnings of a degraded client);
 * {@link Rankings} (each resource's HRW ranking per view, round-robin positions per operation and key);
 * {@link SpillOrder} (in levee-core beside {@link Rendezvous}: the pure asking order of one check — the group, those
 * beyond it, the backed-off last); {@link Plan} (one check through its attempts, moved on by {@code attempt} here:
 * the deadline, the end of the order, the limiter's channel); {@link LimiterChannel} (the transport to one limiter:
 * the check wire where taken, else HTTP with in-flight limits and batches) with {@link CheckBodies} (the HTTP bodies
 * and what an answer means); {@link CheckResults} (the counter {@code levee_client_results_total}, the result line).
 * {@code LeaseAdmission}: request leases. Time comes from the {@link Ticker} given to {@link #start}: nothing reads the clock.
 */
public final class LeveeClient implements AutoCloseable {

    /**
     * Settings of a client; build them with {@link #builder(List)} (every setting but the observers has a default).
     *
     * @param observers    the observers to poll, one or more, each at most once (CLI {@code --observer a,b} or
     *                     {@code LEVEE_OBSERVERS}): every one is asked each {@code refresh} and the list is taken
     *                     from one that answers, by {@link ObserverChoice} (issue 22, item 9)
     * @param refresh      how often the limiter list is refreshed (default 1 s)
     * @param checkTimeout how long one limiter may take to answer (default 250 ms)
     * @param backoff      how long a failed limiter is skipped (default 2 s)
     * @param baseDomains  base domains for virtual-hosted style requests (may be empty; default empty)
     * @param maxInFlight  requests one limiter may have outstanding from this client before further
     *                     checks for it are queued and sent together as one batch (default
     *                     {@value #DEFAULT_MAX_IN_FLIGHT}; 1–1024)
     * @param maxBatch     most checks in one batch (default {@value #DEFAULT_MAX_BATCH}; 1–1024, the
     *                     limiter's own cap)
     * @param listGrace    how long a list that is empty or lost more than half its members is not
     *                     believed while the last list is kept (default 3 s, the observer's default TTL;
     *                     zero: believed at once)
     * @param checkDeadline longest a check may take with its spill-over attempts: an attempt beyond the
     *                     first {@code g} is started only if {@code checkTimeout} still fits before it
     *                     (default {@value #DEFAULT_CHECK_DEADLINE_MS} ms, below NGINX's default check
     *                     {@code --timeout} of 1 s; positive)
     * @param warnInterval least time between two warnings about a lasting degraded state — no limiter known
     *                     (every check fails, and passes by NGINX's or the gateway's failure policy) or the
     *                     observer unreachable (default 10 s, CLI {@code --warn-interval}; positive)
     * @param wire         whether checks go over the check wire ({@link WireConnection}, {@code CheckWire}) to
     *                     limiters that take it, rather than as HTTP requests (default true; CLI
     *                     {@code --no-limiter-wire} turns it off); {@code maxInFlight} applies to HTTP only, and
     *                     {@code maxBatch} caps the checks of one wire frame too
     */
    public record Options(List<HostPort> observers, Duration refresh, Duration checkTimeout, Duration backoff,
                          List<String> baseDomains, int maxInFlight, int maxBatch, Duration listGrace,
                          Duration checkDeadline, Duration warnInterval, boolean wire) {
        /** Requests outstanding per limiter before checks are batched, by default: 4. */
        public static final int DEFAULT_MAX_IN_FLIGHT = 4;
        /** Checks per batch at most, by default: 256. */
        public static final int DEFAULT_MAX_BATCH = 256;
        /** How long a sharply shrunk list is not believed, by default: 3 s (the observer's default TTL). */
        public static final Duration DEFAULT_LIST_GRACE = Duration.ofSeconds(3);
        /** Longest a check may take with its spill-over attempts, by default, in ms: 900. */
        public static final long DEFAULT_CHECK_DEADLINE_MS = 900;
        /** {@link #DEFAULT_CHECK_DEADLINE_MS} as a duration. */
        public static final Duration DEFAULT_CHECK_DEADLINE = Duration.ofMillis(DEFAULT_CHECK_DEADLINE_MS);

        /** Most observers one client polls: 16. */
        public static final int MAX_OBSERVERS = 16;

        /**
         * Validates and copies.
         *
         * @throws IllegalArgumentException when a duration is not positive, a limit is out of range, or the
         *                                  observers are none, more than {@value #MAX_OBSERVERS}, or one is given twice
         */
        public Options {
            if (observers == null || observers.isEmpty() || observers.size() > MAX_OBSERVERS) {
                throw new IllegalArgumentException("observers must be 1-" + MAX_OBSERVERS + ", got "
                        + (observers == null ? 0 : observers.size()));
            }
            observers = List.copyOf(observers);
            if (new java.util.HashSet<>(observers).size() != observers.size()) {
                throw new IllegalArgumentException("an observer is given twice: " + observers);
            }
            for (Duration d : List.of(refresh, checkTimeout, backoff)) {
                if (d.isNegative() || d.isZero()) {
                    throw new IllegalArgumentException("durations must be positive");
                }
            }
            if (checkDeadline == null || checkDeadline.isNegative() || checkDeadline.isZero()) {
                throw new IllegalArgumentException("check deadline must be positive");
            }
            if (maxInFlight < 1 || maxInFlight > 1024) {
                throw new IllegalArgumentException("requests in flight per limiter must be 1-1024, got " + maxInFlight);
            }
            if (maxBatch < 1 || maxBatch > 1024) {
                throw new IllegalArgumentException("checks per batch must be 1-1024, got " + maxBatch);
            }
            if (listGrace == null || listGrace.isNegative()) {
                throw new IllegalArgumentException("list grace must not be negative");
            }
            if (warnInterval == null || warnInterval.isNegative() || warnInterval.isZero()) {
                throw new IllegalArgumentException("warning interval must be positive");
            }
            baseDomains = List.copyOf(baseDomains);
        }

        /** Returns a builder of settings polling {@code observers}, every other setting at its default. */
        public static Builder builder(List<HostPort> observers) {
            return new Builder().observers(observers);
        }

        /** Returns a builder of settings polling one observer, every other setting at its default. */
        public static Builder builder(HostPort observer) {
            return builder(List.of(observer));
        }

        /** Returns a builder holding these settings. */
        public Builder toBuilder() {
            return new Builder().observers(observers).refresh(refresh).checkTimeout(checkTimeout).backoff(backoff)
                    .baseDomains(baseDomains).maxInFlight(maxInFlight).maxBatch(maxBatch).listGrace(listGrace)
                    .checkDeadline(checkDeadline).warnInterval(warnInterval).wire(wire);
        }

        /** Returns the first observer given (the only one, for a client given one). */
        public HostPort observer() {
            return observers.get(0);
        }

        /**
         * Builds {@link Options}; every setter returns this builder, each setting is that of the {@link Options}
         * component of its name, and {@link #build()} validates them. Not thread-safe.
         */
        public static final class Builder {
            private List<HostPort> observers;
            private Duration refresh = Duration.ofSeconds(1);
            private Duration checkTimeout = Duration.ofMillis(250);
            private Duration backoff = Duration.ofSeconds(2);
            private List<String> baseDomains = List.of();
            private int maxInFlight = DEFAULT_MAX_IN_FLIGHT;
            private int maxBatch = DEFAULT_MAX_BATCH;
            private Duration listGrace = DEFAULT_LIST_GRACE;
            private Duration checkDeadline = DEFAULT_CHECK_DEADLINE;
            private Duration warnInterval = dev.levee.runtime.LoudCondition.DEFAULT_INTERVAL;
            private boolean wire = true;

            private Builder() {
            }

            /** Sets the observers to poll, 1–{@value Options#MAX_OBSERVERS}, each once. */
            public Builder observers(List<HostPort> list) {
                this.observers = list;
                return this;
            }

            /** Sets how often the limiter list is refreshed; default 1 s. */
            public Builder refresh(Duration d) {
                this.refresh = d;
                return this;
            }

            /** Sets how long one limiter may take to answer; default 250 ms. */
            public Builder checkTimeout(Duration d) {
                this.checkTimeout = d;
                return this;
            }

            /** Sets how long a failed limiter is skipped; default 2 s. */
            public Builder backoff(Duration d) {
                this.backoff = d;
                return this;
            }

            /** Sets the base domains of virtual-hosted style requests; default none. */
            public Builder baseDomains(List<String> domains) {
                this.baseDomains = domains;
                return this;
            }

            /** Sets the requests outstanding per limiter before checks are batched, 1–1024; default 4. */
            public Builder maxInFlight(int n) {
                this.maxInFlight = n;
                return this;
            }

            /** Sets the most checks per batch or wire frame, 1–1024; default 256. */
            public Builder maxBatch(int n) {
                this.maxBatch = n;
                return this;
            }

            /** Sets how long a sharply shrunk list is not believed, zero for none; default 3 s. */
            public Builder listGrace(Duration d) {
                this.listGrace = d;
                return this;
            }

            /** Sets the longest a check may take with its spill-over attempts; default 900 ms. */
            public Builder checkDeadline(Duration d) {
                this.checkDeadline = d;
                return this;
            }

            /** Sets the least time between two warnings about a lasting degraded state; default 10 s. */
            public Builder warnInterval(Duration d) {
                this.warnInterval = d;
                return this;
            }

            /** Sets whether checks go over the check wire to limiters that take it; default true. */
            public Builder wire(boolean on) {
                this.wire = on;
                return this;
            }

            /**
             * Validates and returns the settings.
             *
             * @throws IllegalArgumentException as {@link Options}' constructor
             */
            public Options build() {
                return new Options(observers, refresh, checkTimeout, backoff, baseDomains, maxInFlight, maxBatch,
                        listGrace, checkDeadline, warnInterval, wire);
            }
        }
    }

    /** An active limiter as the observer lists it. */
    public record Member(String id, String address) {
    }

    /**
     * The observer's view.
     *
     * @param revision    increases with every change within one incarnation of the observer
     * @param factor      the group factor DF
     * @param limiters    the active limiters
     * @param incarnation the observer's start id; null from an observer older than issue 10
     * @param ready       false while the observer's list may be incomplete; null (older observer): ready
     * @param membership  where the list comes from: {@code "etcd"} (the revision is etcd's and compares between
     *                    observers), {@code "heartbeat"} (this observer's own count); null from an observer older
     *                    than issue 22
     */
    public record View(long revision, int factor, List<Member> limiters, String incarnation, Boolean ready,
                       String membership) {
        public View { // an immutable copy of the list
            limiters = limiters == null ? null : List.copyOf(limiters);
        }

        /** A view without membership source. */
        public View(long revision, int factor, List<Member> limiters, String incarnation, Boolean ready) {
            this(revision, factor, limiters, incarnation, ready, null);
        }

        /** A view without incarnation, ready. */
        public View(long revision, int factor, List<Member> limiters) {
            this(revision, factor, limiters, null, null, null);
        }

        /** Returns whether the observer marked this list complete (an older observer's always is). */
        public boolean isReady() {
            return ready == null || ready;
        }
    }

    private final Options options;
    private final Ticker ticker;
    private final S3Classifier classifier;
    private final HttpClientAgent http;
    private final Map<String, Long> backedOffUntil = new ConcurrentHashMap<>();
    /** One channel per limiter address: in-flight count and the checks waiting to be batched. */
    private final Map<String, LimiterChannel> channels = new ConcurrentHashMap<>();
    private final LimiterChannel.Shared shared;
    private final CheckResults results;
    private final LimiterList list;
    private final Rankings rankings = new Rankings();
    /** Set by {@link #stop()}: checks from then on, and those still waiting, fail without a request. */
    private volatile boolean stopped;
    private final io.vertx.core.Context context;
    private final LeaseAdmission leases;

    private LeveeClient(Vertx vertx, Options options, Ticker ticker, MeterRegistry registry, RequestLeases leases) {
        this.options = options;
        this.ticker = ticker;
        this.context = vertx.getOrCreateContext();
        this.classifier = options.baseDomains().isEmpty() ? S3Classifier.pathStyleOnly()
                : S3Classifier.withBaseDomains(options.baseDomains());
        this.http = LimiterChannel.httpClient(vertx, options);
        this.results = new CheckResults(registry);
        this.shared = new LimiterChannel.Shared(options, ticker, http, results, backedOffUntil,
                dev.levee.runtime.Http.socketChannelClass(vertx), this::attempt, () -> stopped);
        this.list = new LimiterList(vertx, context, options, ticker, registry, http,
                v -> LimiterChannel.retireUnlisted(channels, v));
        this.leases = leases == null ? null : new LeaseAdmission(leases, http, ticker, options, results, list::view, registry);
    }

    /** Returns the lease admission, or null with leases off (tests in this package). */
    LeaseAdmission leases() {
        return leases;
    }

    /** As {@link #start(Vertx, Options, Ticker, MeterRegistry, RequestLeases)} with request leases off. */
    public static Future<LeveeClient> start(Vertx vertx, Options options, Ticker ticker, MeterRegistry registry) {
        return start(vertx, options, ticker, registry, null);
    }

    /**
     * Creates a client and fetches the limiter list once.
     *
     * @param ticker the clock of every deadline, back-off and hold, and of the leases' rate estimates (the assembling
     *               code passes {@code SystemTicker}; tests a fake one)
     * @param leases the client side of request leases ({@link RequestLeases}: a hot key's checks decided from leases by
     *               {@code LeaseAdmission}, docs/design.md §12), or null for leases off: then nothing of it runs
     * @return the client, once the first refresh finished (successfully or not)
     */
    public static Future<LeveeClient> start(Vertx vertx, Options options, Ticker ticker, MeterRegistry registry,
            RequestLeases leases) {
        LeveeClient c = new LeveeClient(vertx, options, ticker, registry, leases);
        return c.list.start().map(v -> c);
    }

    /** One refresh as the timer makes it: the refresh, then what is to be said about the state it left. */
    Future<Void> poll() {
        return list.poll();
    }

    /**
     * Fetches the limiter list now; keeps the last good list on failure. Called from a thread outside
     * Vert.x (the first refresh at start), the request is made on the client's own context: from a bare
     * thread the answer's body could be lost before it was read ("No content to map").
     */
    public Future<Void> refresh() {
        return list.refresh();
    }

    /**
     * Returns why checks are not decided as they should be now, or null when they are: no limiter known
     * (every check answers {@code failed} and passes by the failure policy: NGINX's {@code on_failure},
     * the gateway's {@code --on-failure}) or the observer unreachable (the last list is kept and may be
     * out of date). docs/design.md §11.
     */
    public String degradedReason() {
        return list.degradedReason();
    }

    /**
     * Returns which of several observers are unreachable or not ready while another serves the list, or null when
     * every one answers, none does (then {@link #degradedReason()} says it), or only one observer is given. Not a degraded state: checks are
     * decided with a current list; it is warned about so that the observer is brought back before the last one fails.
     */
    public String observersDownReason() {
        return list.observersDownReason();
    }

    /** Returns the observer whose list was taken last, or null before any answered. */
    public HostPort observerInUse() {
        return list.observerInUse();
    }

    /** Returns what was wrong with each observer in the last refresh ("unreachable (why)", "not ready"); empty: none. */
    public Map<HostPort, String> observerProblems() {
        return list.observerProblems();
    }

    /** Returns whether every check fails now for want of a limiter (and passes by the failure policy). */
    public boolean failingOpen() {
        return list.failingOpen();
    }

    /** Returns whether the list in use is being kept against a newer list from the observer. */
    public boolean listHeld() {
        return list.held();
    }

    /** Returns the cached view of the limiter list. */
    public View view() {
        return list.view();
    }

    /** Returns whether the last refresh reached an observer (one of those given is enough). */
    public boolean observerReachable() {
        return list.observerReachable();
    }

    /** Returns the classifier in use. */
    public S3Classifier classifier() {
        return classifier;
    }

    /** Returns the clock this client was started with (for the endpoint's warm-up). */
    Ticker ticker() {
        return ticker;
    }

    /**
     * Returns the group for a resource: the top {@code g = min(DF, active)} limiters by HRW.
     *
     * @param resource bucket name
     * @return the group, highest score first
     */
    public List<Member> group(String resource) {
        View v = list.view();
        return Rendezvous.top(v.limiters(), Member::id, resource, Rendezvous.groupSize(v.factor(), v.limiters().size()));
    }

    /**
     * Checks one S3 request. Never fails: problems become {@link ClientDecision.Result#FAILED}.
     *
     * @param request the raw request facts
     * @return the decision
     */
    public Future<ClientDecision> check(S3Request request) {
        Promise<ClientDecision> decision = Promise.promise();
        check(request, decision);
        return decision.future();
    }

    /**
     * Checks one S3 request and hands the decision to {@code done}, without a future: the callback form of
     * {@link #check(S3Request)}, for an endpoint that keeps one completion handler per request slot (the line
     * endpoint). Never fails: {@code done} is completed exactly once, with a decision and no failure.
     *
     * @param request the raw request facts
     * @param done    takes the decision; completed on the check's event loop, possibly before this returns
     */
    public void check(S3Request request, Completable<ClientDecision> done) {
        check(request, -1, done);
    }

    /**
     * Checks one S3 request for a caller that takes batches of leased slots (NGINX's rate.lua; docs/design.md §12,
     * "Batches in NGINX"): as {@link #check(S3Request, Completable)}, and an admission from a lease of a key that
     * every request to the bucket is counted on may carry {@link ClientDecision#batch()}.
     *
     * @param request the raw request facts
     * @param batch   {@code < 0}: no batch; else the requests to this bucket the caller admitted from its last batch
     *                since its last check (counted as arrivals on the key)
     * @param done    takes the decision
     */
    public void check(S3Request request, int batch, Completable<ClientDecision> done) {
        if (Vertx.currentContext() == null) {
            // from a thread outside Vert.x a limiter's answer could be lost before it was read ("malformed
            // answer"); the check is made on the client's own context instead
            context.runOnContext(v -> decide(classifier.classify(request), batch, done));
            return;
        }
        decide(classifier.classify(request), batch, done);
    }

    /**
     * Checks one request already classified (by {@link #classifier()}, e.g. from the bytes it arrived in) and hands
     * the decision to {@code done}: as {@link #check(S3Request, Completable)} after classification. A resource or
     * key longer than the limiters accept is cut first ({@link #clamp}).
     *
     * @param classification what the request was classified as
     * @param done           takes the decision; completed exactly once, with a decision and no failure
     */
    public void check(S3Classification classification, Completable<ClientDecision> done) {
        if (Vertx.currentContext() == null) {
            context.runOnContext(v -> decide(classification, -1, done));
            return;
        }
        decide(classification, -1, done);
    }

    private void decide(S3Classification classification, int batch, Completable<ClientDecision> decision) {
        S3Classification c = clamp(classification);
        View v = list.view();
        int g = Rendezvous.groupSize(v.factor(), v.limiters().size());
        if (g == 0) {
            decision.succeed(results.done(new ClientDecision(ClientDecision.Result.FAILED, 0, 0, null, null, null, c, 0),
                    "no active limiter"));
            return;
        }
        // the group, then up to g more in HRW rank order: those the check may spill over to
        Rankings.Ranking r = rankings.of(v, c.resource(), 2 * g);
        long start = r.next(c.operation(), c.key());
        long now = ticker.read();
        List<Member> ranked = r.ranked();
        if (leases != null && !stopped && leases.decide(c, v, ranked, g, now, batch, decision)) {
            return; // admitted or refused from a request lease, no limiter asked (docs/design.md §12)
        }
        int position = SpillOrder.position(ranked.size(), g, start);
        // no limiter in back-off (the usual case): the plain order, no lookups, no predicate and no array per check
        int[] order = null;
        if (!backedOffUntil.isEmpty() || position < 0) {
            order = SpillOrder.order(ranked.size(), g, start, i -> {
                Long until = backedOffUntil.get(ranked.get(i).address());
                return until != null && now - until < 0;
            });
        }
        attempt(new Plan(c, r, order, position, now, decision, loopOf(Vertx.currentContext())), 0);
    }

    /** The event loop of a Vert.x context (the client's own when there is none): where a check's wire sends go. */
    private io.netty.channel.EventLoop loopOf(io.vertx.core.Context c) {
        return ((io.vertx.core.internal.ContextInternal) (c == null ? context : c)).nettyEventLoop();
    }

    /**
     * Cuts a resource or key longer than {@link CheckBodies#MAX_BYTES} to its first 1024 bytes (on a character
     * boundary) so that such a request is still counted — against the same bucket and prefix quotas —
     * rather than refused by the limiter as malformed and let through as a failed check.
     * Public so that {@code levee quota explain} shows what a check carries (the same cut).
     *
     * @param c the classification, not null
     * @return {@code c} itself when both fit, else a copy with the long parts cut
     */
    public static S3Classification clamp(S3Classification c) {
        String r = CheckBodies.cut(c.resource());
        String k = CheckBodies.cut(c.key());
        return r == c.resource() && k == c.key() ? c : new S3Classification(r, k, c.operation());
    }

    /** Makes attempt {@code i} of a check: asks {@code plan.member(i)}, or ends the check when it may ask no more. */
    private void attempt(Plan plan, int i) {
        S3Classification c = plan.c;
        plan.i = i;
        if (stopped) {
            plan.decision.succeed(results.done(new ClientDecision(ClientDecision.Result.FAILED, 0, 0, null, null, null, c, i),
                    "levee-client is stopped"));
            return;
        }
        if (i >= plan.g() && i < plan.size()
                && ticker.read() - plan.startedAt + options.checkTimeout().toNanos() > options.checkDeadline().toNanos()) {
            results.count("spill_deadline");
            plan.decision.succeed(results.done(new ClientDecision(ClientDecision.Result.FAILED, 0, 0, null, null, null, c, i),
                    "no limiter answered within the check deadline (" + options.checkDeadline().toMillis() + " ms)"));
            return;
        }
        if (i >= plan.size()) {
            plan.decision.succeed(results.done(new ClientDecision(ClientDecision.Result.FAILED, 0, 0, null, null, null, c, i),
                    plan.size() > plan.g() ? "no limiter of the group or beyond it answered"
                            : "no limiter of the group answered"));
            return;
        }
        Member m = plan.member(i);
        LimiterChannel ch = channels.get(m.address());
        if (ch == null) {
            HostPort addr;
            try {
                addr = HostPort.parse(m.address(), "limiter address");
            } catch (IllegalArgumentException e) {
                attempt(plan, i + 1);
                return;
            }
            ch = channels.computeIfAbsent(m.address(), a -> new LimiterChannel(a, addr, shared));
        }
        plan.queuedAt = ticker.read();
        ch.submit(plan);
    }

    /**
     * Stops refreshing and closes connections. Checks still waiting for a limiter, and checks made from
     * then on, are answered {@link ClientDecision.Result#FAILED} ("levee-client is stopped") at once. Its gauges
     * leave the registry (a client started after it on the same registry registers its own); counters stay.
     */
    public Future<Void> stop() {
        stopped = true;
        list.stop();
        IllegalStateException why = new IllegalStateException("levee-client is stopped");
        for (LimiterChannel ch : channels.values()) {
            ch.closeWires(why);
        }
        return http.close();
    }

    @Override
    public void close() {
        stop();
    }
}
