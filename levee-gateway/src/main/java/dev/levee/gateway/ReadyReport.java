package dev.levee.gateway;

import com.fasterxml.jackson.annotation.JsonInclude;
import dev.levee.governor.AdmissionClass;
import dev.levee.governor.AdmissionQueue;
import dev.levee.governor.AdmissionStats;
import dev.levee.governor.BandwidthGovernor;
import dev.levee.governor.GovernorConfig;
import dev.levee.governor.GovernorStats;
import java.util.Map;

/**
 * Is the body of {@code GET /health/ready} (docs/design.md §8): readiness and aggregated admission and
 * bandwidth counters per class and direction. It never carries principal ids, access keys, paths
 * or object names. Its schema is {@code ReadyResponse} in the repository's {@code openapi.yaml}.
 *
 * @param status           {@code ready}; else (then 503) {@code closing} once shutdown began, {@code failing_open} /
 *                         {@code failing_closed} while enforcement knows no limiter (requests pass or are refused by
 *                         {@code --on-failure}), {@code observer_unreachable} while its last limiter list is kept, {@code site_shares_expired}
 *                         while the site bandwidth shares have expired (docs/design.md §10)
 * @param inFlightRequests S3 requests the gateway is handling now
 * @param governance       the governance counters
 * @param clientFaults     requests and connections given up because of their client (issue 10)
 */
public record ReadyReport(String status, int inFlightRequests, GovernanceReport governance, ClientFaults clientFaults) {

    /** A report without client faults. */
    public ReadyReport(String status, int inFlightRequests, GovernanceReport governance) {
        this(status, inFlightRequests, governance, new ClientFaults(0, 0, 0, 0, 0));
    }

    /**
     * Totals since start of what clients did wrong (issue 10): each freed what it held and was
     * logged as one DEBUG line.
     *
     * @param requestHeaderTimeouts connections closed without a complete request head within
     *                              {@code --request-header-timeout}
     * @param requestBodyTimeouts   requests aborted ({@code 400 RequestTimeout}) because their body
     *                              came slower than {@code --min-body-rate} for {@code --request-body-timeout}
     * @param sendTimeouts          responses given up because their client read nothing for {@code --send-timeout}
     * @param malformedRequests     request heads that could not be decoded (answered 400, 414 or 431)
     * @param clientErrors          request bodies or connections that failed on the client's side
     *                              (reset, bad chunked framing)
     */
    public record ClientFaults(long requestHeaderTimeouts, long requestBodyTimeouts, long sendTimeouts, long malformedRequests,
                               long clientErrors) {
    }

    /**
     * The governance section; {@code admission} and {@code bandwidth} are absent when governance
     * is off.
     *
     * @param enabled    whether requests are governed
     * @param accounts   accounts loaded from the principals file
     * @param accessKeys access keys loaded
     * @param anonymous  {@code allow} or {@code refuse}
     * @param admission  per admission class ({@code mutatingUpload}, {@code download})
     * @param bandwidth  per direction ({@code upload}, {@code download})
     * @param signatures the verification of SigV4 and SigV2 signatures for keys with a secret
     * @param site       the site leases (docs/design.md §10); absent when the gateway has no site budgets
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record GovernanceReport(boolean enabled, Integer accounts, Integer accessKeys, String anonymous,
                                   Map<String, AdmissionReport> admission, Map<String, BandwidthReport> bandwidth,
                                   SignatureReport signatures, SiteReport site) {

        /** A report without site leases. */
        public GovernanceReport(boolean enabled, Integer accounts, Integer accessKeys, String anonymous,
                                Map<String, AdmissionReport> admission, Map<String, BandwidthReport> bandwidth,
                                SignatureReport signatures) {
            this(enabled, accounts, accessKeys, anonymous, admission, bandwidth, signatures, null);
        }

        /** Returns the section of a gateway whose governance is off. */
        public static GovernanceReport off() {
            return new GovernanceReport(false, null, null, null, null, null, null, null);
        }
    }

    /**
     * This gateway's shares of the site budgets (docs/design.md §10): aggregated, no principal ids.
     *
     * @param gatewayId      the gateway's id in the site
     * @param budgetKnown    whether a budget has been read from etcd (until then: failing closed)
     * @param leaseHeld      whether an etcd lease is held
     * @param validForMillis how long the shares stay usable without another renewal, ms (≤ 0: expired)
     * @param gateways       live gateways seen at the last read, this one included
     * @param renewalsOk     renewals etcd acknowledged, total
     * @param renewalsFailed renewals failed or timed out, total
     * @param writes         entries written to etcd, total
     * @param conflicts      raising writes that met a concurrent raise, total
     * @param leaseLosses    leases found expired, total
     * @param budgetRejected budget documents refused (the last good one stays in force), total
     * @param directions     per direction ({@code upload}, {@code download})
     */
    public record SiteReport(String gatewayId, boolean budgetKnown, boolean leaseHeld, long validForMillis, int gateways,
                             long renewalsOk, long renewalsFailed, long writes, long conflicts, long leaseLosses,
                             long budgetRejected, Map<String, SiteDirection> directions) {

        /** Builds the section from the keeper's status. */
        public static SiteReport of(dev.levee.lease.ShareKeeper.Status s) {
            Map<String, SiteDirection> dirs = new java.util.LinkedHashMap<>();
            for (dev.levee.governor.Direction d : dev.levee.governor.Direction.values()) {
                dirs.put(d.name().toLowerCase(java.util.Locale.ROOT), new SiteDirection(s.budgets().get(d),
                        s.shares().get(d), s.demands().get(d), s.principalShares().get(d), s.failingClosed(d)));
            }
            return new SiteReport(s.gatewayId(), s.budgetKnown(), s.leaseHeld(), s.validForNanos() / 1_000_000, s.gateways(),
                    s.renewalsOk(), s.renewalsFailed(), s.writes(), s.conflicts(), s.leaseLosses(), s.budgetRejected(), dirs);
        }
    }

    /**
     * One direction's site share.
     *
     * @param budget          the site budget, bytes/s; 0 = none
     * @param share           this gateway's share of it, bytes/s
     * @param demand          the demand this gateway last reported, bytes/s
     * @param principalShares principals holding a share of their site ceiling here (a count)
     * @param failingClosed   whether new requests are refused and transfers stall (shares expired)
     */
    public record SiteDirection(long budget, long share, long demand, int principalShares, boolean failingClosed) {
    }

    /**
     * Signature verification (keys with a secret in the principals file): counts, never keys or
     * secrets.
     *
     * @param verifiedKeys        access keys whose signatures are verified (a count)
     * @param maxClockSkewSeconds how far a signed request's time may lie from the gateway's clock, s
     * @param verified            requests whose signature verified, total
     * @param refused             requests refused because their signature did not verify (mismatch,
     *                            malformed, expired, skewed, unsupported scheme), total
     */
    public record SignatureReport(int verifiedKeys, long maxClockSkewSeconds, long verified, long refused) {
    }

    /**
     * One admission class. Gauges: {@code inFlight}, {@code waiting}; the rest are totals since start.
     *
     * @param limitPerPrincipal  requests of the class in flight per principal
     * @param maxWaiters         bound of the class's queue
     * @param waitTimeoutMillis  longest wait before refusal, ms
     * @param inFlight           admitted and not yet released
     * @param waiting            waiting now
     * @param admitted           admitted, total
     * @param refusedQueueFull   refused because the queue was full
     * @param refusedTimeout     refused after waiting for the timeout
     * @param refusedClosed      refused because the gateway is shutting down
     * @param cancellations      waits cancelled (the client went away)
     */
    public record AdmissionReport(int limitPerPrincipal, int maxWaiters, long waitTimeoutMillis, int inFlight, int waiting,
                                  long admitted, long refusedQueueFull, long refusedTimeout, long refusedClosed,
                                  long cancellations) {

        static AdmissionReport of(AdmissionClass c, AdmissionQueue q) {
            AdmissionStats s = q.stats();
            int inFlight = c == AdmissionClass.MUTATING_UPLOAD ? s.inFlightUploads() : s.inFlightDownloads();
            return new AdmissionReport(q.config().limit(c), q.config().maxWaiters(),
                    q.config().waitTimeoutNanos() / 1_000_000, inFlight, s.waiting(), s.admitted(), s.refusedQueueFull(),
                    s.refusedTimeout(), s.refusedClosed(), s.cancellations());
        }
    }

    /**
     * One direction. Gauges: {@code openStreams}, {@code waitingQuanta}, {@code principals}; the
     * rest are totals since start.
     *
     * @param rateBytesPerSecond          the direction's ceiling, bytes/s; 0 = none
     * @param principalRateBytesPerSecond the default per-principal ceiling, bytes/s; 0 = none
     * @param burstBytes                  the direction bucket's burst, bytes; 0 when it has no ceiling
     * @param maxWaitingQuanta            bound of the wait queue
     * @param openStreams                 bodies being transferred now
     * @param waitingQuanta               requests for permits waiting now
     * @param principals                  principals with a bucket (a count, never ids)
     * @param grantedBytes                bytes granted, total
     * @param grantedQuanta               grants, total
     * @param refusedQueueFull            refused because the wait queue was full
     * @param refusedOwnershipLost        refused because the budget's ownership was lost
     * @param refusedClosed               refused because the gateway is shutting down
     * @param refusedPrincipalTable       refused because the principal table was full
     * @param cancellations               waiting requests cancelled (the client went away)
     */
    public record BandwidthReport(long rateBytesPerSecond, long principalRateBytesPerSecond, long burstBytes,
                                  int maxWaitingQuanta, int openStreams, int waitingQuanta, int principals,
                                  long grantedBytes, long grantedQuanta, long refusedQueueFull, long refusedOwnershipLost,
                                  long refusedClosed, long refusedPrincipalTable, long cancellations) {

        static BandwidthReport of(BandwidthGovernor g, int openStreams) {
            GovernorConfig c = g.config();
            GovernorStats s = g.stats();
            return new BandwidthReport(c.rateBytesPerSecond(), c.principalRateBytesPerSecond(),
                    c.sharedBurstBytes(), c.maxWaitingQuanta(), openStreams, s.waitingQuanta(),
                    s.principals(), s.grantedBytes(), s.grantedQuanta(), s.refusedQueueFull(), s.refusedOwnershipLost(),
                    s.refusedClosed(), s.refusedPrincipalTable(), s.cancellations());
        }
    }
}
