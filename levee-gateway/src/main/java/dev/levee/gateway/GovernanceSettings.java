package dev.levee.gateway;

import dev.levee.governor.AdmissionConfig;
import dev.levee.governor.Direction;
import dev.levee.governor.GovernorConfig;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * Configures the gateway's bandwidth governors and admission queues (docs/design.md §8).
 * Immutable, validated at construction; build one with {@link #builder()}. {@link #off()} (the
 * default of {@link GatewayOptions}) leaves the gateway a plain streaming proxy.
 *
 * <p>Units: rates in bytes per second, {@code 0} disables that ceiling (docs/design.md §8); durations as
 * {@link Duration}. Each direction has its own budget: {@code uploadRate} (request bodies) and
 * {@code downloadRate} (response bodies) are the direction's shared ceilings,
 * {@code principalUploadRate} and {@code principalDownloadRate} every principal's default
 * ceiling, which an account of the {@link PrincipalDirectory} may override.
 *
 * @param enabled               whether requests are governed at all
 * @param principals            the accounts and their access keys
 * @param anonymous             what to do with unknown or anonymous requests
 * @param anonymousPrincipal    the principal id of unknown and anonymous requests when allowed
 *                              (default {@code anonymous}); must not be an account id
 * @param uploadRate            the upload direction's ceiling, bytes/s; 0 = none
 * @param downloadRate          the download direction's ceiling, bytes/s; 0 = none
 * @param principalUploadRate   each principal's upload ceiling unless its account overrides it, bytes/s; 0 = none
 * @param principalDownloadRate each principal's download ceiling likewise, bytes/s; 0 = none
 * @param maxWaitingQuanta      requests waiting for bandwidth per direction (default 256)
 * @param admission             in-flight limits per principal and class, and the bound and
 *                              timeout of each class's queue (defaults: 1 upload, 4 downloads,
 *                              1024 waiters, 10 s)
 * @param timerResolution       the governors' timer slot (default 250 µs, between 1 µs and 100 ms)
 * @param baseDomains           base domains of virtual-hosted requests, to tell GetObject from
 *                              ListObjects (as the rate check's client does)
 * @param maxClockSkew          how far the time of a request whose signature is verified (a key
 *                              with a secret) may lie from the gateway's clock, and how far ahead
 *                              a presigned URL may be dated (default 15 minutes, as S3; between
 *                              1 s and 24 h)
 * @param site                  site-wide budgets shared through etcd leases (docs/design.md §10); null = none
 * @param notSentLowWatermark   the most bytes a client connection's kernel send buffer may hold not yet sent
 *                              ({@code TCP_NOTSENT_LOWAT}, Linux with the native transport), bytes; default
 *                              {@value #DEFAULT_NOT_SENT_LOW_WATERMARK}; 0 = the kernel's own (sysctl
 *                              {@code net.ipv4.tcp_notsent_lowat}, unlimited by default); else in [16 KiB, 64 MiB].
 *                              Bytes the governor granted wait here for the socket, not in the kernel: with the
 *                              kernel's default a connection parks up to its whole autotuned send buffer (4 MiB on
 *                              loopback) of granted bytes, which leave later and in bursts, and a gateway whose
 *                              clients read 5 MiB/s looks limited while that buffer fills (docs/site-bandwidth.md,
 *                              "Demand"). It does not limit bytes in flight (the congestion window).
 */
public record GovernanceSettings(
        boolean enabled,
        PrincipalDirectory principals,
        AnonymousPolicy anonymous,
        String anonymousPrincipal,
        long uploadRate,
        long downloadRate,
        long principalUploadRate,
        long principalDownloadRate,
        int maxWaitingQuanta,
        AdmissionConfig admission,
        Duration timerResolution,
        List<String> baseDomains,
        Duration maxClockSkew,
        SiteSettings site,
        int notSentLowWatermark) {

    /** The default id of the anonymous principal. */
    public static final String DEFAULT_ANONYMOUS_PRINCIPAL = "anonymous";
    /** The default timer resolution: 250 µs (docs/BENCHMARKS-governor.md). */
    public static final Duration DEFAULT_TIMER_RESOLUTION = Duration.ofNanos(250_000);
    /** The default {@code notSentLowWatermark}: 128 KiB, two quanta of 64 KiB. */
    public static final int DEFAULT_NOT_SENT_LOW_WATERMARK = 128 * 1024;
    /** The smallest {@code notSentLowWatermark} other than 0: 16 KiB. */
    public static final int MIN_NOT_SENT_LOW_WATERMARK = 16 * 1024;
    /** The largest {@code notSentLowWatermark}: 64 MiB. */
    public static final int MAX_NOT_SENT_LOW_WATERMARK = 64 << 20;
    /** The default largest clock skew of a signed request: 15 minutes, as S3. */
    public static final Duration DEFAULT_MAX_CLOCK_SKEW = Duration.ofMinutes(15);

    private static final GovernanceSettings OFF = builder().enabled(false).build();

    /**
     * Validates.
     *
     * @throws IllegalArgumentException if a rate is neither 0 nor in [10, 2^40] bytes/s, the
     *                                  anonymous principal id is blank or names an account, the
     *                                  timer resolution is outside [1 µs, 100 ms], the clock skew
     *                                  outside [1 s, 24 h], a bound below 1, or the not-sent
     *                                  low watermark neither 0 nor in [16 KiB, 64 MiB]
     * @throws NullPointerException     if a component is null
     */
    public GovernanceSettings {
        if (notSentLowWatermark != 0 && (notSentLowWatermark < MIN_NOT_SENT_LOW_WATERMARK
                || notSentLowWatermark > MAX_NOT_SENT_LOW_WATERMARK)) {
            throw new IllegalArgumentException("the TCP not-sent low watermark must be 0 (the kernel's) or lie between"
                    + " 16KiB and 64MiB, got " + notSentLowWatermark + " bytes");
        }
        Objects.requireNonNull(principals, "principals");
        Objects.requireNonNull(anonymous, "anonymous");
        Objects.requireNonNull(anonymousPrincipal, "anonymousPrincipal");
        Objects.requireNonNull(admission, "admission");
        Objects.requireNonNull(timerResolution, "timerResolution");
        Objects.requireNonNull(maxClockSkew, "maxClockSkew");
        baseDomains = List.copyOf(baseDomains);
        PrincipalDirectory.checkId(anonymousPrincipal, "anonymous principal");
        if (principals.hasAccount(anonymousPrincipal)) {
            throw new IllegalArgumentException("the anonymous principal '" + anonymousPrincipal
                    + "' is also an account id: choose another with --anonymous-principal");
        }
        if (timerResolution.compareTo(Duration.ofNanos(1000)) < 0 || timerResolution.compareTo(Duration.ofMillis(100)) > 0) {
            throw new IllegalArgumentException("timer resolution must lie between 1µs and 100ms, got " + timerResolution);
        }
        if (maxClockSkew.compareTo(Duration.ofSeconds(1)) < 0 || maxClockSkew.compareTo(Duration.ofHours(24)) > 0) {
            throw new IllegalArgumentException("the largest clock skew must lie between 1s and 24h, got " + maxClockSkew);
        }
        // the governors' own validation, with the gateway's option names
        rate("upload rate", uploadRate);
        rate("download rate", downloadRate);
        rate("principal upload rate", principalUploadRate);
        rate("principal download rate", principalDownloadRate);
        for (PrincipalDirectory.Account a : principals.accounts()) {
            rate("upload_rate of account '" + a.id() + "'", a.uploadRate().orElse(0));
            rate("download_rate of account '" + a.id() + "'", a.downloadRate().orElse(0));
        }
        if (maxWaitingQuanta < 1) {
            throw new IllegalArgumentException("max waiting quanta must be ≥ 1, got " + maxWaitingQuanta);
        }
    }

    /** Returns settings that switch governance off: the gateway proxies as it did before. */
    public static GovernanceSettings off() {
        return OFF;
    }

    /** Returns a builder with the defaults (enabled, no accounts, every ceiling off). */
    public static Builder builder() {
        return new Builder();
    }

    /** Returns the governor configuration of {@code direction}. */
    GovernorConfig governorConfig(Direction direction) {
        boolean up = direction == Direction.UPLOAD;
        GovernorConfig.Builder b = GovernorConfig.builder(direction)
                .rate(up ? uploadRate : downloadRate)
                .principalRate(up ? principalUploadRate : principalDownloadRate)
                .maxWaitingQuanta(maxWaitingQuanta)
                // every account plus the anonymous principal: a bounded table (docs/design.md §8)
                .maxPrincipals(principals.accounts().size() + 1);
        for (PrincipalDirectory.Account a : principals.accounts()) {
            (up ? a.uploadRate() : a.downloadRate()).ifPresent(r -> b.principalRate(a.id(), r));
        }
        return b.build();
    }

    private static void rate(String name, long bytesPerSecond) {
        if (bytesPerSecond != 0 && (bytesPerSecond < GovernorConfig.MIN_RATE_BYTES_PER_SECOND
                || bytesPerSecond > GovernorConfig.MAX_RATE_BYTES_PER_SECOND)) {
            throw new IllegalArgumentException(name + " must be 0 (no ceiling) or between "
                    + GovernorConfig.MIN_RATE_BYTES_PER_SECOND + " B/s and 1TiB/s, got " + bytesPerSecond + " B/s");
        }
    }

    /** Builds {@link GovernanceSettings}; every setter returns the builder. Not thread-safe. */
    public static final class Builder {
        private boolean enabled = true;
        private PrincipalDirectory principals = PrincipalDirectory.empty();
        private AnonymousPolicy anonymous = AnonymousPolicy.ALLOW;
        private String anonymousPrincipal = DEFAULT_ANONYMOUS_PRINCIPAL;
        private long uploadRate;
        private long downloadRate;
        private long principalUploadRate;
        private long principalDownloadRate;
        private int maxWaitingQuanta = GovernorConfig.DEFAULT_MAX_WAITING_QUANTA;
        private AdmissionConfig admission = AdmissionConfig.defaults(AdmissionConfig.DEFAULT_MAX_DOWNLOADS_PER_PRINCIPAL);
        private Duration timerResolution = DEFAULT_TIMER_RESOLUTION;
        private List<String> baseDomains = List.of();
        private Duration maxClockSkew = DEFAULT_MAX_CLOCK_SKEW;
        private SiteSettings site;
        private int notSentLowWatermark = DEFAULT_NOT_SENT_LOW_WATERMARK;

        private Builder() {
        }

        /** Switches governance on (default) or off. */
        public Builder enabled(boolean on) {
            this.enabled = on;
            return this;
        }

        /** Sets the accounts; default none. */
        public Builder principals(PrincipalDirectory directory) {
            this.principals = directory;
            return this;
        }

        /** Sets the policy for unknown and anonymous requests; default {@link AnonymousPolicy#ALLOW}. */
        public Builder anonymous(AnonymousPolicy policy) {
            this.anonymous = policy;
            return this;
        }

        /** Sets the anonymous principal's id; default {@value #DEFAULT_ANONYMOUS_PRINCIPAL}. */
        public Builder anonymousPrincipal(String id) {
            this.anonymousPrincipal = id;
            return this;
        }

        /** Sets the upload direction's ceiling, bytes/s; 0 (default) = none. */
        public Builder uploadRate(long bytesPerSecond) {
            this.uploadRate = bytesPerSecond;
            return this;
        }

        /** Sets the download direction's ceiling, bytes/s; 0 (default) = none. */
        public Builder downloadRate(long bytesPerSecond) {
            this.downloadRate = bytesPerSecond;
            return this;
        }

        /** Sets every principal's default upload ceiling, bytes/s; 0 (default) = none. */
        public Builder principalUploadRate(long bytesPerSecond) {
            this.principalUploadRate = bytesPerSecond;
            return this;
        }

        /** Sets every principal's default download ceiling, bytes/s; 0 (default) = none. */
        public Builder principalDownloadRate(long bytesPerSecond) {
            this.principalDownloadRate = bytesPerSecond;
            return this;
        }

        /** Sets the bound on waiting quanta per direction; default 256. */
        public Builder maxWaitingQuanta(int max) {
            this.maxWaitingQuanta = max;
            return this;
        }

        /** Sets the admission limits and queue bounds. */
        public Builder admission(AdmissionConfig config) {
            this.admission = config;
            return this;
        }

        /** Sets the timer's resolution; default 250 µs. */
        public Builder timerResolution(Duration resolution) {
            this.timerResolution = resolution;
            return this;
        }

        /** Sets the base domains of virtual-hosted requests; default none. */
        public Builder baseDomains(List<String> domains) {
            this.baseDomains = domains;
            return this;
        }

        /** Shares site-wide budgets with other gateways through etcd leases (docs/design.md §10); default none. */
        public Builder site(SiteSettings site) {
            this.site = site;
            return this;
        }

        /** Sets the client connections' {@code TCP_NOTSENT_LOWAT}, bytes; default 128 KiB; 0 = the kernel's. */
        public Builder notSentLowWatermark(int bytes) {
            this.notSentLowWatermark = bytes;
            return this;
        }

        /** Sets the largest clock skew of a request whose signature is verified; default 15 minutes. */
        public Builder maxClockSkew(Duration skew) {
            this.maxClockSkew = skew;
            return this;
        }

        /**
         * Validates and returns the settings.
         *
         * @throws IllegalArgumentException as {@link GovernanceSettings}'s constructor
         */
        public GovernanceSettings build() {
            return new GovernanceSettings(enabled, principals, anonymous, anonymousPrincipal, uploadRate, downloadRate,
                    principalUploadRate, principalDownloadRate, maxWaitingQuanta, admission, timerResolution, baseDomains,
                    maxClockSkew, site, notSentLowWatermark);
        }
    }
}
