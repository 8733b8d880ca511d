package dev.levee.gateway;

import dev.levee.core.Ticker;
import dev.levee.governor.Admission;
import dev.levee.governor.AdmissionClass;
import dev.levee.governor.AdmissionQueue;
import dev.levee.governor.BandwidthGovernor;
import dev.levee.governor.Direction;
import dev.levee.governor.GovernedStream;
import dev.levee.governor.OwnershipCheck;
import dev.levee.s3.S3Classification;
import dev.levee.s3.S3Classifier;
import dev.levee.s3.S3Request;
import io.vertx.core.Context;
import io.vertx.core.MultiMap;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * Holds one gateway's governance state (docs/design.md §8): a {@link BandwidthGovernor} per direction,
 * an {@link AdmissionQueue} per admission class, the timer that wakes them, the principal
 * directory, and the verification of signatures made with its secrets. Thread-safe: the governors and queues are; the rest is immutable or atomic.
 *
 * <p>Two admission queues rather than one so that {@code /health/ready} can report waiting,
 * admitted and refused requests per class; each class's queue has the configured bound.
 */
final class Governance implements AutoCloseable {

    private final GovernanceSettings settings;
    private final SiteShares site;
    private final S3Classifier classifier;
    private final ScheduledGovernorTimer timer;
    private final Map<Direction, BandwidthGovernor> governors = new EnumMap<>(Direction.class);
    private final Map<Direction, AtomicInteger> openStreams = new EnumMap<>(Direction.class);
    private final Map<AdmissionClass, AdmissionQueue> queues = new EnumMap<>(AdmissionClass.class);
    private final LongAdder signaturesVerified = new LongAdder();
    private final LongAdder signaturesRefused = new LongAdder();

    Governance(GovernanceSettings settings, Ticker ticker) {
        this(settings, ticker, settings.site() == null ? null : new SiteShares(settings, ticker));
    }

    Governance(GovernanceSettings settings, Ticker ticker, SiteShares site) {
        this.settings = settings;
        this.site = site;
        this.classifier = S3Classifier.withBaseDomains(settings.baseDomains());
        this.timer = new ScheduledGovernorTimer(settings.timerResolution());
        for (Direction d : Direction.values()) {
            OwnershipCheck ownership = site == null ? OwnershipCheck.alwaysOwned() : () -> site.owned(d);
            governors.put(d, BandwidthGovernor.create(settings.governorConfig(d), ticker, timer, ownership));
            openStreams.put(d, new AtomicInteger());
        }
        for (AdmissionClass c : AdmissionClass.values()) {
            queues.put(c, AdmissionQueue.create(settings.admission(), ticker, timer));
        }
        if (site != null) {
            site.start(governors);
        }
    }

    /** The site leases, or null when this gateway has no site budgets (docs/design.md §10). */
    SiteShares site() {
        return site;
    }

    /**
     * Whether a new governed request in {@code d} would be refused because this gateway is failing
     * closed (its site shares expired; docs/design.md §10): it is then answered {@code 503 SlowDown} before
     * anything is sent to the backend.
     */
    boolean failingClosed(Direction d) {
        return site != null && !site.owned(d);
    }

    GovernanceSettings settings() {
        return settings;
    }

    /** Classifies a request, for its admission class and which of its bodies are charged. */
    S3Classification classify(String method, String host, String uri, String copySource) {
        return classifier.classify(S3Request.fromRequestUri(method, host, uri, copySource));
    }

    /**
     * Who a request is.
     *
     * @param principal the principal to govern it as; null when it is refused
     * @param refusal   why its signature was refused, or null (then a null principal means an
     *                  unknown or missing key with anonymous requests refused)
     */
    record Identity(String principal, SigV4Verifier.Verdict refusal) {
    }

    /**
     * Identifies a request: the account owning the access key id it claims, else the anonymous
     * principal, else nobody when anonymous requests are refused. An {@code OPTIONS} request (S3's
     * CORS preflight, unauthenticated in S3) is the anonymous principal, never verified nor refused. When the claimed key has a
     * secret, the claim counts only if the request's signature verifies: SigV2 ({@link SigV2Verifier}, the
     * virtual-hosted bucket read from Host by the base domains) or SigV4 ({@link SigV4Verifier}); otherwise the
     * request is refused, charged to nobody.
     *
     * @param method    the HTTP method
     * @param rawPath   the path as received (percent-encoded)
     * @param rawQuery  the query as received, without {@code '?'}; may be null
     * @param headers   the headers as received
     * @param nowMillis the wall-clock time, milliseconds since the epoch
     * @return the principal, or why the request is refused
     */
    Identity identify(String method, String rawPath, String rawQuery, MultiMap headers, long nowMillis) {
        if ("OPTIONS".equals(method)) {
            // S3's OPTIONS is the CORS preflight, which S3 answers without authentication: a browser sends it to a
            // presigned URL with the URL's query, signed for GET or PUT, never for OPTIONS (issue 24). It is governed
            // as the anonymous principal, even with anonymous requests refused: it carries no credential of its own.
            return new Identity(settings.anonymousPrincipal(), null);
        }
        String key = Credentials.accessKeyId(headers.get("Authorization"), rawQuery);
        SigningSecret secret = settings.principals().secretOf(key);
        if (secret != null) {
            SigV4Verifier.Request request = new SigV4Verifier.Request(method, rawPath, rawQuery, headers);
            long skew = settings.maxClockSkew().toMillis();
            SigV4Verifier.Verdict v = SigV2Verifier.claims(headers, rawQuery)
                    ? SigV2Verifier.verify(request, key, secret, classifier.hostBucket(headers.get("Host")), nowMillis, skew)
                    : SigV4Verifier.verify(request, key, secret, nowMillis, skew);
            if (!v.verified()) {
                signaturesRefused.increment();
                return new Identity(null, v);
            }
            signaturesVerified.increment();
        }
        String p = settings.principals().principalOf(key);
        if (p != null) {
            return new Identity(p, null);
        }
        return new Identity(settings.anonymous() == AnonymousPolicy.ALLOW ? settings.anonymousPrincipal() : null, null);
    }

    /** Requests an admission slot; see {@link AdmissionQueue#admitAsync}. */
    CompletionStage<Admission> admit(String principal, AdmissionClass admissionClass) {
        return queues.get(admissionClass).admitAsync(principal, admissionClass);
    }

    /**
     * Opens a pipe for one body of {@code principal}.
     *
     * @throws dev.levee.governor.RefusedException if the governor is closed or its principal table is full
     */
    GovernedPipe openPipe(Direction direction, String principal, Context context) {
        GovernedStream stream = governors.get(direction).openStream(principal);
        if (site != null) {
            site.opened(direction, principal);
        }
        AtomicInteger open = openStreams.get(direction);
        open.incrementAndGet();
        return new GovernedPipe(context, stream, open::decrementAndGet);
    }

    /**
     * Closes the admission queues only, as a shutdown's drain begins (docs/design.md §8 {@code preClose},
     * issue 10): every request waiting for a slot fails and is answered {@code 503 SlowDown}, every
     * later one is refused; the governors stay open so that transfers in flight keep being granted
     * permits until they end or the drain's deadline. Idempotent.
     */
    void closeAdmission() {
        queues.values().forEach(AdmissionQueue::close);
    }

    /**
     * Closes the admission queues, then the governors (docs/design.md §8 {@code preClose}): every waiter
     * fails and is answered {@code 503 SlowDown}, every later request is refused. Idempotent.
     */
    void closeGates() {
        queues.values().forEach(AdmissionQueue::close);
        governors.values().forEach(BandwidthGovernor::close);
    }

    /** Closes the gates if not yet done, then stops the timer thread. */
    @Override
    public void close() {
        closeGates();
        timer.close();
        if (site != null) {
            site.close(); // revokes the lease: the other gateways may take its shares at once
        }
    }

    /**
     * Registers the bandwidth and admission meters (issue 14, item 7): the counters of {@code /health/ready}
     * ({@link #report()}) for Prometheus, read from the governors and queues at each scrape, aggregated per
     * direction and admission class (no principal ids). Names: {@code levee_gateway_bandwidth_*} with tag
     * {@code direction} ({@code upload}, {@code download}), {@code levee_gateway_admission_*} with tag
     * {@code class} ({@code mutating_upload}, {@code download}); refusals carry a {@code reason}.
     *
     * @param registry where to register
     */
    void bind(io.micrometer.core.instrument.MeterRegistry registry) {
        for (Direction d : Direction.values()) {
            BandwidthGovernor g = governors.get(d);
            String dir = d.name().toLowerCase(java.util.Locale.ROOT);
            io.micrometer.core.instrument.FunctionCounter.builder("levee_gateway_bandwidth_granted_bytes_total", g,
                    x -> x.stats().grantedBytes()).tag("direction", dir)
                    .description("bytes granted to transfers (docs/design.md §8)").register(registry);
            io.micrometer.core.instrument.FunctionCounter.builder("levee_gateway_bandwidth_granted_quanta_total", g,
                    x -> x.stats().grantedQuanta()).tag("direction", dir)
                    .description("grants of at most one quantum each").register(registry);
            Map<String, java.util.function.ToDoubleFunction<BandwidthGovernor>> refusals = Map.of(
                    "queue_full", x -> x.stats().refusedQueueFull(),
                    "ownership_lost", x -> x.stats().refusedOwnershipLost(),
                    "closed", x -> x.stats().refusedClosed(),
                    "principal_table", x -> x.stats().refusedPrincipalTable());
            refusals.forEach((reason, f) -> io.micrometer.core.instrument.FunctionCounter
                    .builder("levee_gateway_bandwidth_refused_total", g, f).tag("direction", dir).tag("reason", reason)
                    .description("permit requests refused, by reason").register(registry));
            io.micrometer.core.instrument.Gauge.builder("levee_gateway_bandwidth_waiting_quanta", g,
                    x -> x.stats().waitingQuanta()).tag("direction", dir)
                    .description("permit requests waiting now (at most --max-waiting-quanta)").register(registry);
            io.micrometer.core.instrument.Gauge.builder("levee_gateway_bandwidth_open_streams", openStreams.get(d),
                    AtomicInteger::get).tag("direction", dir).description("bodies being transferred now").register(registry);
            io.micrometer.core.instrument.Gauge.builder("levee_gateway_bandwidth_rate_bytes_per_second", g,
                    x -> x.config().rateBytesPerSecond()).tag("direction", dir)
                    .description("the direction's ceiling in force, bytes/s; 0 = none").register(registry);
        }
        for (AdmissionClass c : AdmissionClass.values()) {
            AdmissionQueue q = queues.get(c);
            String cls = c == AdmissionClass.MUTATING_UPLOAD ? "mutating_upload" : "download";
            io.micrometer.core.instrument.Gauge.builder("levee_gateway_admission_in_flight", q,
                    x -> c == AdmissionClass.MUTATING_UPLOAD ? x.stats().inFlightUploads() : x.stats().inFlightDownloads())
                    .tag("class", cls).description("requests admitted and not yet released").register(registry);
            io.micrometer.core.instrument.Gauge.builder("levee_gateway_admission_waiting", q, x -> x.stats().waiting())
                    .tag("class", cls).description("requests waiting for admission now").register(registry);
            io.micrometer.core.instrument.FunctionCounter.builder("levee_gateway_admission_admitted_total", q,
                    x -> x.stats().admitted()).tag("class", cls).description("requests admitted").register(registry);
            Map<String, java.util.function.ToDoubleFunction<AdmissionQueue>> refusals = Map.of(
                    "queue_full", x -> x.stats().refusedQueueFull(),
                    "timeout", x -> x.stats().refusedTimeout(),
                    "closed", x -> x.stats().refusedClosed());
            refusals.forEach((reason, f) -> io.micrometer.core.instrument.FunctionCounter
                    .builder("levee_gateway_admission_refused_total", q, f).tag("class", cls).tag("reason", reason)
                    .description("requests refused admission, by reason").register(registry));
        }
    }

    /** Returns the aggregated counters: no principal ids, keys, paths or object names. */
    ReadyReport.GovernanceReport report() {
        Map<String, ReadyReport.AdmissionReport> admission = new java.util.LinkedHashMap<>();
        admission.put("mutatingUpload", ReadyReport.AdmissionReport.of(AdmissionClass.MUTATING_UPLOAD,
                queues.get(AdmissionClass.MUTATING_UPLOAD)));
        admission.put("download", ReadyReport.AdmissionReport.of(AdmissionClass.DOWNLOAD, queues.get(AdmissionClass.DOWNLOAD)));
        Map<String, ReadyReport.BandwidthReport> bandwidth = new java.util.LinkedHashMap<>();
        bandwidth.put("upload", ReadyReport.BandwidthReport.of(governors.get(Direction.UPLOAD),
                openStreams.get(Direction.UPLOAD).get()));
        bandwidth.put("download", ReadyReport.BandwidthReport.of(governors.get(Direction.DOWNLOAD),
                openStreams.get(Direction.DOWNLOAD).get()));
        ReadyReport.SignatureReport signatures = new ReadyReport.SignatureReport(settings.principals().verifiedKeyCount(),
                settings.maxClockSkew().toSeconds(), signaturesVerified.sum(), signaturesRefused.sum());
        return new ReadyReport.GovernanceReport(true, settings.principals().accounts().size(),
                settings.principals().keyCount(), settings.anonymous().name().toLowerCase(java.util.Locale.ROOT),
                admission, bandwidth, signatures, site == null ? null : ReadyReport.SiteReport.of(site.keeper().status()));
    }
}
