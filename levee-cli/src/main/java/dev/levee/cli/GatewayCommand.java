package dev.levee.cli;

import dev.levee.client.LeveeClient;
import dev.levee.core.ByteUnits;
import dev.levee.gateway.AnonymousPolicy;
import dev.levee.gateway.GatewayOptions;
import dev.levee.gateway.GatewayService;
import dev.levee.gateway.GovernanceSettings;
import dev.levee.gateway.PrincipalDirectory;
import dev.levee.gateway.SiteSettings;
import dev.levee.governor.AdmissionConfig;
import dev.levee.governor.GovernorConfig;
import dev.levee.lease.ShareKeeper;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code levee gateway}: streaming S3 reverse proxy, with bandwidth governance and admission per
 * principal when {@code --principals} is given (docs/design.md §8, docs/gateway.md).
 */
@Command(name = "gateway", mixinStandardHelpOptions = true,
        description = {"Run the S3 gateway: a streaming reverse proxy to an S3 backend, checking each request"
                + " with the limiter cluster unless --no-enforce (NGINX checks).",
            "With --principals FILE it also shapes bytes per second per direction and per principal (service"
                + " account) and limits uploads and downloads in flight per principal, and verifies the SigV4"
                + " and SigV2 signatures of the keys the file gives a secret. Rates are bytes per second with units"
                + " (4MiB/s, 10MB, 1048576); 0 switches that ceiling off. See docs/gateway.md."})
final class GatewayCommand implements Callable<Integer> {

    private static final Logger LOG = LoggerFactory.getLogger("levee.gateway");

    /** Options that only make sense with --principals. */
    private static final List<String> GOVERNANCE_OPTIONS = List.of("--upload-rate", "--download-rate",
            "--principal-upload-rate", "--principal-download-rate", "--anonymous", "--anonymous-principal",
            "--max-uploads-per-principal", "--max-downloads-per-principal", "--admission-queue", "--admission-timeout",
            "--max-waiting-quanta", "--timer-resolution", "--max-clock-skew", "--etcd", "--gateway-id", "--lease-ttl",
            "--renew-interval", "--lease-drift", "--lease-margin");

    @Spec
    CommandSpec spec;

    @Mixin
    CommonOptions common = new CommonOptions();

    @Option(names = "--listen", converter = Converters.HostPortConverter.class, defaultValue = "127.0.0.1:9000",
            description = "S3 listener (default: ${DEFAULT-VALUE})")
    HostPort listen;

    @Option(names = "--admin", converter = Converters.HostPortConverter.class, defaultValue = "127.0.0.1:9001",
            description = "admin listener for /health, /health/ready, /metrics (default: ${DEFAULT-VALUE})")
    HostPort admin;

    @Option(names = "--backend", converter = Converters.HostPortConverter.class, required = true,
            description = "S3 backend HOST:PORT (HTTP)")
    HostPort backend;

    // fallbackValue: without it picocli toggles a default-true negatable option, so --enforce meant false
    // and --no-enforce true (issue 10; NegatableOptionsTest holds every negatable option of every command)
    @Option(names = "--enforce", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "check each request with the limiter cluster; --no-enforce when NGINX checks"
                    + " (default: ${DEFAULT-VALUE})")
    boolean enforce;

    @Option(names = "--ratelimit-headers-on-accept", defaultValue = "false",
            description = "also put the RateLimit-Policy and RateLimit header fields on responses the rate check"
                    + " accepted; a 503 SlowDown of the rate check always carries them (default: off)")
    boolean rateLimitOnAccept;

    @Option(names = "--on-failure", defaultValue = "ALLOW",
            description = "when no limiter answers: ALLOW or DENY (default: ${DEFAULT-VALUE})")
    GatewayOptions.OnFailure onFailure;

    @Mixin
    ObserverOptions observer = new ObserverOptions();

    @Mixin
    LimiterClientOptions limiterClient = new LimiterClientOptions();

    @Option(names = "--backend-timeout", converter = Converters.DurationConverter.class, defaultValue = "60s",
            description = "longest time the backend may make no progress while the gateway waits for it: taking none"
                    + " of the request body, from the request's end to the status line, sending nothing of a response"
                    + " being read; time the gateway itself holds the body or does not read (bandwidth governor, slow"
                    + " clients) does not count; then 504 GatewayTimeout (default: ${DEFAULT-VALUE})")
    Duration backendTimeout;

    @Option(names = "--shutdown-deadline", converter = Converters.DurationConverter.class, defaultValue = "10s",
            description = "on SIGTERM, how long in-flight requests may finish; the process exits as soon as they"
                    + " are done (default: ${DEFAULT-VALUE})")
    Duration shutdownDeadline;

    @Option(names = "--request-header-timeout", converter = Converters.DurationConverter.class, defaultValue = "60s",
            description = "longest time from a connection's accept, or the end of its previous response, to a complete"
                    + " request head; also the idle limit of a keep-alive connection (default: ${DEFAULT-VALUE})")
    Duration requestHeaderTimeout;

    @Option(names = "--request-body-timeout", converter = Converters.DurationConverter.class, defaultValue = "30s",
            description = "longest reading time of a request body without progress (below --min-body-rate); time"
                    + " the gateway itself does not read (bandwidth governor, backend) does not count"
                    + " (default: ${DEFAULT-VALUE})")
    Duration requestBodyTimeout;

    @Option(names = "--min-body-rate", converter = MinRateConverter.class, defaultValue = "1KiB/s", paramLabel = "RATE",
            description = "rate below which a request body loses reading time; 0 = idle timeout only"
                    + " (default: ${DEFAULT-VALUE})")
    long minBodyRate;

    @Option(names = "--send-timeout", converter = Converters.DurationConverter.class, defaultValue = "60s",
            description = "longest wait for a client to read more of its response while the gateway's buffer for it is"
                    + " full (as NGINX's send_timeout); then the connection is closed and the download's slot freed"
                    + " (default: ${DEFAULT-VALUE})")
    Duration sendTimeout;

    @Option(names = "--backend-continue-timeout", converter = Converters.DurationConverter.class, defaultValue = "1s",
            description = "how long a request body waits for the backend's 100 Continue before it is sent anyway"
                    + " (default: ${DEFAULT-VALUE})")
    Duration backendContinueTimeout;

    @Option(names = "--health-token-file", paramLabel = "FILE",
            description = "file whose first line is the bearer token of GET /health/ready; without it that"
                    + " endpoint answers 401")
    Path healthTokenFile;

    // ---- governance (docs/design.md §8)

    @Option(names = "--principals", paramLabel = "FILE",
            description = "YAML file of service accounts and their access key ids (at most 1000 keys), with the"
                    + " secrets of the keys whose SigV4 and SigV2 signatures the gateway verifies; switches bandwidth"
                    + " governance and admission on (docs/gateway.md)")
    Path principalsFile;

    @Option(names = "--tcp-notsent-lowat", paramLabel = "SIZE", defaultValue = "128KiB",
            description = "the most bytes of a response a client connection's kernel send buffer may hold not yet sent"
                    + " (TCP_NOTSENT_LOWAT): granted bytes leave when granted, not later from a buffer of megabytes;"
                    + " 0 leaves the kernel's setting; else 16KiB to 64MiB (default: ${DEFAULT-VALUE})")
    String notSentLowWatermark;

    @Option(names = "--max-clock-skew", converter = Converters.DurationConverter.class, defaultValue = "15m",
            description = "how far the time of a request signed with a key that has a secret may lie from this"
                    + " host's clock, and how far ahead a presigned URL may be dated; 1s to 24h (default: ${DEFAULT-VALUE})")
    Duration maxClockSkew;

    @Option(names = "--upload-rate", converter = RateConverter.class, defaultValue = "0", paramLabel = "RATE",
            description = "ceiling of all uploads (request bodies) together, bytes/s; 0 = none (default: ${DEFAULT-VALUE})")
    long uploadRate;

    @Option(names = "--download-rate", converter = RateConverter.class, defaultValue = "0", paramLabel = "RATE",
            description = "ceiling of all downloads (response bodies) together, bytes/s; 0 = none (default: ${DEFAULT-VALUE})")
    long downloadRate;

    @Option(names = "--principal-upload-rate", converter = RateConverter.class, defaultValue = "0", paramLabel = "RATE",
            description = "each principal's upload ceiling unless its account sets upload_rate, bytes/s; 0 = none"
                    + " (default: ${DEFAULT-VALUE})")
    long principalUploadRate;

    @Option(names = "--principal-download-rate", converter = RateConverter.class, defaultValue = "0", paramLabel = "RATE",
            description = "each principal's download ceiling unless its account sets download_rate, bytes/s; 0 = none"
                    + " (default: ${DEFAULT-VALUE})")
    long principalDownloadRate;

    @Option(names = "--anonymous", defaultValue = "ALLOW",
            description = "requests with an unknown or no access key: ALLOW (one shared anonymous principal) or"
                    + " REFUSE (403 AccessDenied) (default: ${DEFAULT-VALUE})")
    AnonymousPolicy anonymous;

    @Option(names = "--anonymous-principal", defaultValue = GovernanceSettings.DEFAULT_ANONYMOUS_PRINCIPAL,
            description = "principal id of anonymous requests (default: ${DEFAULT-VALUE})")
    String anonymousPrincipal;

    @Option(names = "--max-uploads-per-principal", defaultValue = "1",
            description = "PutObject/UploadPart/PostObject in flight per principal (default: ${DEFAULT-VALUE})")
    int maxUploads;

    @Option(names = "--max-downloads-per-principal", defaultValue = "4",
            description = "GetObject in flight per principal (default: ${DEFAULT-VALUE})")
    int maxDownloads;

    @Option(names = "--admission-queue", defaultValue = "1024",
            description = "requests that may wait for admission, per class (uploads, downloads); 0 = refuse at once"
                    + " (default: ${DEFAULT-VALUE})")
    int admissionQueue;

    @Option(names = "--admission-timeout", converter = Converters.DurationConverter.class, defaultValue = "10s",
            description = "longest wait for admission before 503 SlowDown (default: ${DEFAULT-VALUE})")
    Duration admissionTimeout;

    @Option(names = "--max-waiting-quanta", defaultValue = "256",
            description = "requests that may wait for bandwidth per direction, past which 503 SlowDown"
                    + " (default: ${DEFAULT-VALUE})")
    int maxWaitingQuanta;

    @Option(names = "--timer-resolution", converter = FineDurationConverter.class, defaultValue = "250us",
            description = "slot of the governors' timer: 1us to 100ms (default: ${DEFAULT-VALUE})")
    Duration timerResolution;

    @Option(names = "--etcd", paramLabel = "ENDPOINTS", defaultValue = "${env:LEVEE_ETCD_ENDPOINTS}",
            description = "etcd endpoints, comma-separated: share the site-wide bandwidth budgets in"
                    + " <prefix>/bandwidth/budget with the other gateways through finite leases (docs/site-bandwidth.md);"
                    + " without it this gateway shapes with its own ceilings only (default: $LEVEE_ETCD_ENDPOINTS, as"
                    + " every role; used with --principals)")
    String etcdEndpoints;

    /** Options of the site leases, which need etcd. */
    private static final List<String> SITE_OPTIONS = List.of("--gateway-id", "--lease-ttl", "--renew-interval",
            "--lease-drift", "--lease-margin", "--etcd-prefix");

    @Option(names = "--etcd-prefix", defaultValue = "/levee", description = "key prefix in etcd (default: ${DEFAULT-VALUE})")
    String etcdPrefix;

    @Option(names = "--gateway-id", paramLabel = "ID",
            description = "this gateway's id in the site, unique among the gateways (default: the --listen address)")
    String gatewayId;

    @Option(names = "--lease-ttl", converter = Converters.DurationConverter.class, defaultValue = "5s",
            description = "time to live of the etcd lease that holds this gateway's shares, whole seconds"
                    + " (default: ${DEFAULT-VALUE}); a stopped or cut-off gateway's shares return to the others after it")
    Duration leaseTtl;

    @Option(names = "--renew-interval", converter = Converters.DurationConverter.class, defaultValue = "1s",
            description = "time between lease renewals and share rounds, at most a third of --lease-ttl"
                    + " (default: ${DEFAULT-VALUE})")
    Duration renewInterval;

    @Option(names = "--lease-drift", paramLabel = "PERCENT", defaultValue = "1%",
            description = "largest clock drift between this host and etcd, ρ: shares stop being used at"
                    + " sent + TTL × (1 − ρ) − margin (default: ${DEFAULT-VALUE})")
    String leaseDrift;

    @Option(names = "--lease-margin", converter = Converters.DurationConverter.class, defaultValue = "100ms",
            description = "fixed margin ε before a lease could expire at which shares stop being used (default: ${DEFAULT-VALUE})")
    Duration leaseMargin;

    @Option(names = "--warn-interval", converter = Converters.DurationConverter.class, defaultValue = "10s",
            description = "with enforcement: how often a lasting degraded state is warned about again — no limiter known (requests"
                    + " pass or are refused by --on-failure, /health/ready 503) or the observer unreachable (default: ${DEFAULT-VALUE})")
    Duration warnInterval;

    /** The embedded levee-client's settings: the flags of {@code levee client} ({@link LimiterClientOptions}). */
    LeveeClient.Options clientOptions() {
        return limiterClient.options(observer.list(), warnInterval);
    }

    @Override
    public Integer call() {
        GatewayOptions options = options();
        // bad client flags, a bad --observer / LEVEE_OBSERVERS: a usage error before anything starts
        LeveeClient.Options clientOptions = clientOptions();
        common.apply("levee-gateway");
        warnIfSecretsAreReadable(options.governance());
        Vertx vertx = dev.levee.runtime.Http.vertx();
        MeterRegistry registry = Metrics.newRegistry();
        LeveeClient client = enforce ? Daemon.await(LeveeClient.start(vertx, clientOptions, SystemTicker.INSTANCE,
                registry), "client") : null;
        GatewayService g = Daemon.await(GatewayService.start(vertx, options, client, SystemTicker.INSTANCE,
                        Clock.systemUTC(), registry),
                "gateway could not start on " + listen);
        common.announce("levee gateway listening on " + listen.host() + ":" + g.port() + " -> " + backend
                + (options.governance().enabled() ? " (bandwidth governance on)" : ""));
        // the hook waits for the drain (at most the deadline) and a margin for closing the rest
        return Daemon.runUntilStopped(vertx, "gateway", shutdownDeadline.plusSeconds(5), () -> g.stop(shutdownDeadline)
                .compose(v -> client == null ? Future.succeededFuture() : client.stop()));
    }

    /** Builds the gateway's settings from the flags, or explains in one line why it cannot. */
    GatewayOptions options() {
        try {
            return GatewayOptions.builder(backend)
                    .listen(listen)
                    .admin(admin)
                    .enforce(enforce)
                    .onFailure(onFailure)
                    .backendTimeout(backendTimeout)
                    .maxConnections(256)
                    .governance(governance())
                    .healthToken(healthToken())
                    .clientDeadlines(new GatewayOptions.ClientDeadlines(requestHeaderTimeout, requestBodyTimeout,
                            minBodyRate, sendTimeout))
                    .continueTimeout(backendContinueTimeout)
                    .rateLimitOnAccept(rateLimitOnAccept)
                    .build();
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    /** {@code --tcp-notsent-lowat} in bytes: 0, or a size in [16 KiB, 64 MiB]; else a usage error naming the flag. */
    int notSentLowWatermark() {
        String v = notSentLowWatermark == null ? "128KiB" : notSentLowWatermark.trim();
        try {
            int bytes = v.equals("0") ? 0 : Converters.parseSize(v);
            if (bytes != 0 && (bytes < GovernanceSettings.MIN_NOT_SENT_LOW_WATERMARK
                    || bytes > GovernanceSettings.MAX_NOT_SENT_LOW_WATERMARK)) {
                throw new IllegalArgumentException();
            }
            return bytes;
        } catch (RuntimeException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--tcp-notsent-lowat must be 0 (the kernel's"
                    + " setting) or a size from 16KiB to 64MiB, got '" + v + "'");
        }
    }

    /** Builds the governance settings, or explains in one line why it cannot. */
    GovernanceSettings governance() {
        if (principalsFile == null) {
            for (String name : GOVERNANCE_OPTIONS) {
                if (spec != null && spec.commandLine().getParseResult().hasMatchedOption(name)) {
                    throw new CommandLine.ParameterException(spec.commandLine(),
                            name + " needs --principals FILE, which switches bandwidth governance on"
                                    + " (a file with 'accounts: {}' governs every request as anonymous)");
                }
            }
            return GovernanceSettings.builder().enabled(false).notSentLowWatermark(notSentLowWatermark()).build();
        }
        // named by their flags here: the settings' own messages name fields (maxWaiters), not options
        for (Object[] f : new Object[][] {{"--max-uploads-per-principal", maxUploads, 1},
                {"--max-downloads-per-principal", maxDownloads, 1}, {"--admission-queue", admissionQueue, 0},
                {"--max-waiting-quanta", maxWaitingQuanta, 1}}) {
            if ((int) f[1] < (int) f[2]) {
                throw new CommandLine.ParameterException(spec.commandLine(), f[0] + " must be ≥ " + f[2] + ", got " + f[1]);
            }
        }
        if (maxClockSkew != null && (maxClockSkew.compareTo(java.time.Duration.ofSeconds(1)) < 0
                || maxClockSkew.compareTo(java.time.Duration.ofHours(24)) > 0)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--max-clock-skew must lie between 1s and 24h,"
                    + " got " + Converters.formatDuration(maxClockSkew));
        }
        try {
            PrincipalDirectory directory = PrincipalDirectory.parseYaml(read(principalsFile, "--principals"),
                    principalsFile.toString());
            return GovernanceSettings.builder()
                    .principals(directory)
                    .anonymous(anonymous)
                    .anonymousPrincipal(anonymousPrincipal)
                    .uploadRate(uploadRate)
                    .downloadRate(downloadRate)
                    .principalUploadRate(principalUploadRate)
                    .principalDownloadRate(principalDownloadRate)
                    .maxWaitingQuanta(maxWaitingQuanta)
                    .admission(new AdmissionConfig(maxUploads, maxDownloads, admissionQueue, admissionTimeout.toNanos()))
                    .timerResolution(timerResolution)
                    .baseDomains(limiterClient.baseDomains)
                    .maxClockSkew(maxClockSkew)
                    .notSentLowWatermark(notSentLowWatermark())
                    .site(site())
                    .build();
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    /** The site-lease settings from --etcd and the lease flags, or null without --etcd. */
    private SiteSettings site() {
        if (etcdEndpoints == null || etcdEndpoints.isBlank()) {
            for (String name : SITE_OPTIONS) { // given for a site this gateway would not join
                if (spec != null && spec.commandLine().getParseResult().hasMatchedOption(name)) {
                    throw new CommandLine.ParameterException(spec.commandLine(), name + " sets the site leases, which"
                            + " need etcd: give --etcd ENDPOINTS (or set LEVEE_ETCD_ENDPOINTS)");
                }
            }
            return null;
        }
        String id = gatewayId != null ? gatewayId : listen.host() + ":" + listen.port();
        double drift = percent("--lease-drift", leaseDrift);
        ShareKeeper.Settings keeper = new ShareKeeper.Settings(id, leaseTtl, renewInterval, drift, leaseMargin,
                renewInterval, 3);
        return new SiteSettings(dev.levee.etcd.Etcd.parseEndpoints(etcdEndpoints), etcdPrefix,
                dev.levee.etcd.Etcd.DEFAULT_MAX_MESSAGE_BYTES, keeper);
    }

    private static double percent(String flag, String text) {
        String t = text.strip();
        boolean pct = t.endsWith("%");
        try {
            double v = Double.parseDouble(pct ? t.substring(0, t.length() - 1).strip() : t);
            return pct ? v / 100 : v;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(flag + ": '" + text + "' is not a fraction such as 1% or 0.01");
        }
    }

    /** Warns when the principals file holds secrets and other users may read it. */
    private void warnIfSecretsAreReadable(GovernanceSettings governance) {
        if (principalsFile == null || governance.principals().verifiedKeyCount() == 0) {
            return;
        }
        try {
            Set<PosixFilePermission> p = Files.getPosixFilePermissions(principalsFile);
            if (p.contains(PosixFilePermission.GROUP_READ) || p.contains(PosixFilePermission.OTHERS_READ)) {
                LOG.warn("{} holds {} secret(s) and is readable by its group or others ({}): chmod 600 it",
                        principalsFile, governance.principals().verifiedKeyCount(), PosixFilePermissions.toString(p));
            }
        } catch (IOException | UnsupportedOperationException e) {
            // not a POSIX file system: nothing to check
        }
    }

    private String healthToken() {
        if (healthTokenFile == null) {
            return null;
        }
        String token = read(healthTokenFile, "--health-token-file").lines().findFirst().orElse("").strip();
        if (token.length() < 16) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "--health-token-file: the token (first line) must have at least 16 characters");
        }
        return token;
    }

    private String read(Path file, String option) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException | RuntimeException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), option + ": " + Main.unreadable(file, e));
        }
    }

    /** Bytes per second with units; see {@link ByteUnits#parseRate}. */
    static final class RateConverter implements CommandLine.ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            try {
                long rate = ByteUnits.parseRate(value);
                if (rate != 0 && (rate < GovernorConfig.MIN_RATE_BYTES_PER_SECOND || rate > GovernorConfig.MAX_RATE_BYTES_PER_SECOND)) {
                    throw new CommandLine.TypeConversionException("rate '" + value + "' must be 0 (no ceiling) or between "
                            + GovernorConfig.MIN_RATE_BYTES_PER_SECOND + " B/s and 1TiB/s");
                }
                return rate;
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }

    /** Bytes per second with units, 0 or more (a floor, so any positive value is allowed); see {@link ByteUnits#parseRate}. */
    static final class MinRateConverter implements CommandLine.ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            try {
                return ByteUnits.parseRate(value);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }

    /** A duration that may be finer than a millisecond: {@code 250us}, {@code 1ms}, {@code 0.5ms}, {@code 2s}. */
    static final class FineDurationConverter implements CommandLine.ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            String v = value == null ? "" : value.strip().toLowerCase(Locale.ROOT);
            String[] units = {"ns", "us", "µs", "ms", "s"};
            long[] nanos = {1, 1_000, 1_000, 1_000_000, 1_000_000_000};
            for (int i = 0; i < units.length; i++) {
                if (v.endsWith(units[i])) {
                    String number = v.substring(0, v.length() - units[i].length()).strip();
                    try {
                        double d = Double.parseDouble(number);
                        if (d > 0 && d * nanos[i] < 1e15 && !number.startsWith("+")) {
                            return Duration.ofNanos(Math.round(d * nanos[i]));
                        }
                    } catch (NumberFormatException e) {
                        break;
                    }
                }
            }
            throw new CommandLine.TypeConversionException("'" + value + "' is not a positive duration (examples: 250us, 1ms, 0.5ms)");
        }
    }
}
