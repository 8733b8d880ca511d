package dev.levee.gateway;

import dev.levee.core.ByteUnits;
import dev.levee.runtime.HostPort;
import java.time.Duration;
import java.util.Objects;

/**
 * Settings of a gateway ({@link GatewayService}); immutable, validated at construction. Build one with
 * {@link #builder(HostPort)}, or change a few values of one with {@link #toBuilder()}.
 *
 * @param listen         S3 listener (default 127.0.0.1:9000)
 * @param admin          admin listener for /health, /health/ready, /metrics (default 127.0.0.1:9001)
 * @param backend        S3 backend {@code host:port} (HTTP)
 * @param enforce        check each request with the limiter cluster (off when NGINX checks; default on)
 * @param onFailure      policy when the check fails (default {@link OnFailure#ALLOW})
 * @param backendTimeout the longest time the backend may make no progress while the gateway waits for it
 *                       (default 60 s; {@link BackendWatch}): taking none of the request body, from the
 *                       request's end to the status line, sending nothing of a response being read; time the
 *                       gateway itself holds the body or does not read does not count. Then {@code 504}
 * @param maxConnections connections to the backend (default 256)
 * @param governance     bandwidth governors and admission; {@link GovernanceSettings#off()} by default
 * @param healthToken    the bearer token of {@code GET /health/ready}; null (default) = that endpoint
 *                       answers 401 to everyone
 * @param clientDeadlines how long slow clients are waited for; {@link ClientDeadlines#DEFAULTS} by default
 * @param continueTimeout how long a request body waits for the backend's {@code 100 Continue}
 *                        before it is sent anyway (default 1 s, {@link #DEFAULT_CONTINUE_TIMEOUT})
 * @param rateLimitOnAccept whether accepted requests' responses also carry the RateLimit header fields (a
 *                        {@code 503 SlowDown} of the rate check always does; default off, CLI
 *                        {@code --ratelimit-headers-on-accept}; docs/gateway.md)
 */
public record GatewayOptions(HostPort listen, HostPort admin, HostPort backend, boolean enforce, OnFailure onFailure,
                             Duration backendTimeout, int maxConnections, GovernanceSettings governance,
                             String healthToken, ClientDeadlines clientDeadlines, Duration continueTimeout,
                             boolean rateLimitOnAccept) {
    /** The default continue timeout: 1 s (as curl waits for 100 Continue). */
    public static final Duration DEFAULT_CONTINUE_TIMEOUT = Duration.ofSeconds(1);

    /** What to do when no limiter answers (docs/design.md §1 step 5). */
    public enum OnFailure {
        /** Let the request through (default). */
        ALLOW,
        /** Refuse it with 503 SlowDown. */
        DENY
    }

    /**
     * How long the gateway waits for a slow client (issue 10, defect 6): every one frees what the
     * request holds (its admission slot, its permits, its backend connection) and is counted.
     *
     * @param requestHeaderTimeout the longest time from a connection's accept, or from the end of
     *                             its previous response, to a complete request head (request line
     *                             and headers); also the idle limit of a keep-alive connection
     *                             (default 60 s, as NGINX's {@code client_header_timeout})
     * @param requestBodyTimeout   the longest time the gateway reads a request body without
     *                             progress (default 30 s); time the gateway itself does not read
     *                             (the governor withholding permits, the backend's connection
     *                             full, {@code 100 Continue} not yet sent) does not count
     * @param minBodyRate          the rate, bytes/s, below which a body loses reading time (default
     *                             1 KiB/s; 0 = idle timeout only); see {@link ProgressDeadline}
     * @param sendTimeout          longest wait for a client to read more of its response while the
     *                             gateway's write queue for it is full (default 60 s, as NGINX's
     *                             {@code send_timeout}); then the connection is closed and the request's
     *                             admission slot and bandwidth permits are freed
     */
    public record ClientDeadlines(Duration requestHeaderTimeout, Duration requestBodyTimeout, long minBodyRate,
                                  Duration sendTimeout) {
        /** The defaults: 60 s, 30 s, 1 KiB/s, 60 s. */
        public static final ClientDeadlines DEFAULTS = new ClientDeadlines(Duration.ofSeconds(60), Duration.ofSeconds(30),
                1024, Duration.ofSeconds(60));

        /** The deadlines with the default send timeout (60 s). */
        public ClientDeadlines(Duration requestHeaderTimeout, Duration requestBodyTimeout, long minBodyRate) {
            this(requestHeaderTimeout, requestBodyTimeout, minBodyRate, Duration.ofSeconds(60));
        }

        /** Validates. @throws IllegalArgumentException when a timeout is not positive or the rate is negative */
        public ClientDeadlines {
            if (requestHeaderTimeout.isNegative() || requestHeaderTimeout.isZero()) {
                throw new IllegalArgumentException("the request header timeout must be positive");
            }
            if (requestBodyTimeout.isNegative() || requestBodyTimeout.isZero()) {
                throw new IllegalArgumentException("the request body timeout must be positive");
            }
            if (minBodyRate < 0) {
                throw new IllegalArgumentException("the minimum body rate must be >= 0");
            }
            if (sendTimeout.isNegative() || sendTimeout.isZero()) {
                throw new IllegalArgumentException("the send timeout must be positive");
            }
        }
    }

    /**
     * Validates.
     *
     * @throws IllegalArgumentException when a value is out of range, or the S3 and admin listeners are one address
     * @throws NullPointerException     when the governance or the client deadlines are null
     */
    public GatewayOptions {
        if (backendTimeout.isNegative() || backendTimeout.isZero()) {
            throw new IllegalArgumentException("backend timeout must be positive");
        }
        if (maxConnections < 1) {
            throw new IllegalArgumentException("max connections must be >= 1");
        }
        Objects.requireNonNull(governance, "governance");
        Objects.requireNonNull(clientDeadlines, "clientDeadlines");
        if (continueTimeout.isNegative() || continueTimeout.isZero()) {
            throw new IllegalArgumentException("the continue timeout must be positive");
        }
        if (listen.port() != 0 && listen.port() == admin.port() && listen.host().equals(admin.host())) {
            throw new IllegalArgumentException("the S3 listener and the admin listener cannot share " + listen);
        }
        if (healthToken != null && healthToken.isBlank()) {
            throw new IllegalArgumentException("the health token is blank");
        }
    }

    /**
     * Returns a builder of a gateway in front of {@code backend}, every other value at its default (see the
     * record's components).
     *
     * @param backend the S3 backend, {@code host:port} (HTTP)
     * @return a new builder
     */
    public static Builder builder(HostPort backend) {
        return new Builder(Objects.requireNonNull(backend, "backend"));
    }

    /** Returns a builder holding these settings. */
    public Builder toBuilder() {
        return new Builder(backend).listen(listen).admin(admin).enforce(enforce).onFailure(onFailure)
                .backendTimeout(backendTimeout).maxConnections(maxConnections).governance(governance)
                .healthToken(healthToken).clientDeadlines(clientDeadlines).continueTimeout(continueTimeout)
                .rateLimitOnAccept(rateLimitOnAccept);
    }

    /** The governance part of the gateway's start-up log line. */
    static String describe(GovernanceSettings s) {
        if (!s.enabled()) {
            return "governance=off";
        }
        return "governance=on accounts=" + s.principals().accounts().size() + " keys=" + s.principals().keyCount()
                + " verified_keys=" + s.principals().verifiedKeyCount()
                + " max_clock_skew=" + s.maxClockSkew().toSeconds() + "s anonymous=" + s.anonymous() + " upload=" + ByteUnits.formatRate(s.uploadRate())
                + " download=" + ByteUnits.formatRate(s.downloadRate())
                + " principal_upload=" + ByteUnits.formatRate(s.principalUploadRate())
                + " principal_download=" + ByteUnits.formatRate(s.principalDownloadRate())
                + " admission=" + s.admission().maxUploadsPerPrincipal() + "/" + s.admission().maxDownloadsPerPrincipal()
                + " queue=" + s.admission().maxWaiters() + " timeout=" + s.admission().waitTimeoutNanos() / 1_000_000 + "ms"
                + (s.site() == null ? " site=off" : " site=etcd" + s.site().etcdEndpoints() + s.site().prefix()
                        + " gateway_id=" + s.site().keeper().gatewayId() + " lease_ttl=" + s.site().keeper().ttl().toSeconds()
                        + "s renew=" + s.site().keeper().renewInterval().toMillis() + "ms");
    }

    /** Builds {@link GatewayOptions}; every setter returns the builder. Not thread-safe. */
    public static final class Builder {
        private HostPort listen = new HostPort("127.0.0.1", 9000);
        private HostPort admin = new HostPort("127.0.0.1", 9001);
        private HostPort backend;
        private boolean enforce = true;
        private OnFailure onFailure = OnFailure.ALLOW;
        private Duration backendTimeout = Duration.ofSeconds(60);
        private int maxConnections = 256;
        private GovernanceSettings governance = GovernanceSettings.off();
        private String healthToken;
        private ClientDeadlines clientDeadlines = ClientDeadlines.DEFAULTS;
        private Duration continueTimeout = DEFAULT_CONTINUE_TIMEOUT;
        private boolean rateLimitOnAccept;

        private Builder(HostPort backend) {
            this.backend = backend;
        }

        /** Sets the S3 listener; default 127.0.0.1:9000 (port 0 = a free port). */
        public Builder listen(HostPort address) {
            this.listen = address;
            return this;
        }

        /** Sets the admin listener; default 127.0.0.1:9001 (port 0 = a free port). */
        public Builder admin(HostPort address) {
            this.admin = address;
            return this;
        }

        /** Sets the S3 backend, {@code host:port} (HTTP). */
        public Builder backend(HostPort address) {
            this.backend = address;
            return this;
        }

        /** Checks each request with the limiter cluster (default) or not (NGINX checks). */
        public Builder enforce(boolean on) {
            this.enforce = on;
            return this;
        }

        /** Sets the policy when the check fails; default {@link OnFailure#ALLOW}. */
        public Builder onFailure(OnFailure policy) {
            this.onFailure = policy;
            return this;
        }

        /** Sets the longest time the backend may make no progress; default 60 s. */
        public Builder backendTimeout(Duration timeout) {
            this.backendTimeout = timeout;
            return this;
        }

        /** Sets the number of connections to the backend; default 256. */
        public Builder maxConnections(int max) {
            this.maxConnections = max;
            return this;
        }

        /** Sets the bandwidth governors and admission; default {@link GovernanceSettings#off()}. */
        public Builder governance(GovernanceSettings settings) {
            this.governance = settings;
            return this;
        }

        /** Sets the bearer token of {@code /health/ready}; default null (that endpoint answers 401). */
        public Builder healthToken(String token) {
            this.healthToken = token;
            return this;
        }

        /** Sets the slow-client deadlines; default {@link ClientDeadlines#DEFAULTS}. */
        public Builder clientDeadlines(ClientDeadlines deadlines) {
            this.clientDeadlines = deadlines;
            return this;
        }

        /** Sets how long a request body waits for the backend's {@code 100 Continue}; default 1 s. */
        public Builder continueTimeout(Duration timeout) {
            this.continueTimeout = timeout;
            return this;
        }

        /** Puts the RateLimit header fields on accepted responses too, or not (default). */
        public Builder rateLimitOnAccept(boolean on) {
            this.rateLimitOnAccept = on;
            return this;
        }

        /**
         * Validates and returns the settings.
         *
         * @throws IllegalArgumentException as {@link GatewayOptions}'s constructor
         * @throws NullPointerException     as {@link GatewayOptions}'s constructor
         */
        public GatewayOptions build() {
            return new GatewayOptions(listen, admin, backend, enforce, onFailure, backendTimeout, maxConnections,
                    governance, healthToken, clientDeadlines, continueTimeout, rateLimitOnAccept);
        }
    }
}
