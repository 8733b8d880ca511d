package dev.levee.client;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.levee.core.GcraLimit;
import dev.levee.core.Ticker;
import dev.levee.lease.RequestLease;
import dev.levee.lease.RequestLeaseWire;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Json;
import dev.levee.runtime.LogText;
import dev.levee.s3.S3Classification;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.AsyncResult;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lease asks of a client to its limiters and what it makes of their answers (docs/design.md §12, the wire
 * {@link RequestLeaseWire}): {@code POST /v1/lease} with an {@link RequestLeaseWire.Ask} for one member of a hot
 * key's group, answered with a {@link RequestLeaseWire.Grant}.
 *
 * <h2>Judging an answer</h2>
 * The client's ticker is read just before the ask is sent ({@code sentNs}) and when its answer arrived
 * ({@code receivedNs}). A grant is used only if every check passes, in this order: status 200 within the check
 * timeout ({@code checkTimeout}) and the body at most {@value #MAX_ANSWER_BYTES} bytes; the body a {@code Grant}
 * by the strict JSON mapper ({@link Json}: unknown fields fail) with no {@link RequestLeaseWire.Grant#problem};
 * granted by the member asked (its {@code limiter} is the member's id) for the limit key the client resolved;
 * {@link RequestLeaseWire.Grant#toLease} under the epoch of the send; {@link dev.levee.lease.RequestLeaseRules#problem}
 * against the client's own per-limiter limit {@code rq.limit(g)} (slots ≤ 4096, a lifetime within
 * {@code max(200 ms, τ + T)}, T and τ those of the client's resolution); and the holder takes it
 * ({@link dev.levee.lease.RequestLeaseHolder#offer}: the epoch still the client's, not a duplicate). Anything else is
 * never an admission: the key keeps the per-request path.
 *
 * <h2>What is counted and said</h2>
 * {@code levee_client_lease_asks_total{result}}: {@code granted}, {@code refused} (GCRA refused the first slot),
 * {@code fenced} (the limiter is within its restart fence), {@code not_leasable} (the limiter's quotas say no),
 * {@code quotas_differ} (the limiter resolves the bucket with other quotas than the client: the ask's
 * {@code QuotaConfig.resolutionDigest} is not its own, so it reserved nothing),
 * {@code malformed} (an answer that is not a usable grant: not JSON, unknown or missing fields, oversized, another
 * limiter or key, more than 4096 slots, too long a lifetime, T or τ other than the client's), {@code failed} (no
 * answer within the timeout, a connection failure, a status other than 200) and {@code stale} (a good grant for an
 * epoch the client has left, or a duplicate). {@code malformed}, {@code failed} and {@code quotas_differ} are a WARN
 * on {@code levee.client} naming the limiter, its address, the key and what was wrong, at most one per limiter per {@code warnInterval} (the
 * next one says how many were not logged); {@code not_leasable} the same at INFO.
 *
 * <h2>When to ask again</h2>
 * After a refusal or fence, not before its {@code waitNs}; after {@code not_leasable}, {@code quotas_differ},
 * {@code malformed} or {@code failed}, not before {@value #RETRY_MS} ms (a limiter without the endpoint, or one that answers badly, gets
 * one ask a second per key, not one per check). The round trip of each answered ask feeds the estimate
 * {@link #rttNs} (an average with weight 1/8, as TCP's smoothed RTT, RFC 6298; {@value #START_RTT_NS} ns before any
 * and once no answer came for a second).
 */
final class LeaseAsks {

    private static final Logger LOG = LoggerFactory.getLogger("levee.client");

    /** The largest answer read as a grant: {@value} bytes (a grant is about 200). */
    static final int MAX_ANSWER_BYTES = 4096;
    /** How long a member is not asked again after an answer that was not a grant or refusal, ms: {@value}. */
    static final long RETRY_MS = 1000;
    /** The round-trip estimate before any answer, ns: {@value}. */
    static final long START_RTT_NS = 1_000_000L;
    private static final long RETRY_NS = RETRY_MS * 1_000_000L;
    private static final long RTT_MEMORY_NS = 1_000_000_000L;

    /** What came of one ask: the tag of {@code levee_client_lease_asks_total}. */
    enum Outcome {
        GRANTED, REFUSED, FENCED, NOT_LEASABLE, QUOTAS_DIFFER, MALFORMED, FAILED, STALE;

        final String label = name().toLowerCase(Locale.ROOT);
    }

    /**
     * The asking state of one member of a key's group, guarded by the key's lock ({@link LeaseAdmission.KeyLease}).
     */
    static final class Member {
        final String id;
        String address;
        boolean inFlight;
        /** Whether {@link #notBefore} holds: the member is not asked before it. */
        boolean holdOff;
        long notBefore;

        Member(String id, String address) {
            this.id = id;
            this.address = address;
        }
    }

    /** One answer as it arrived. */
    private record Answer(int status, Buffer body) {
    }

    /** An answer announced larger than {@link #MAX_ANSWER_BYTES}: not read. */
    private static final class Oversized extends RuntimeException {
        Oversized(String length) {
            super("an answer of " + length + " bytes, more than " + MAX_ANSWER_BYTES, null, false, false);
        }
    }

    private final HttpClientAgent http;
    private final Ticker ticker;
    private final long timeoutMs;
    private final long warnIntervalNs;
    private final Supplier<RequestLease.Epoch> current;
    private final String client = clientId();
    private final Counter[] outcomes = new Counter[Outcome.values().length];
    /** Per limiter id: {when warned last, 1 once warned, answers not logged since}. */
    private final Cache<String, long[]> warned = Caffeine.newBuilder().maximumSize(1024).executor(Runnable::run).build();
    private volatile long rtt = START_RTT_NS;
    private volatile long rttAt;
    private volatile boolean rttSeen;

    /**
     * @param current the client's epoch now: a grant is offered to its holder after the holder moved to it
     */
    LeaseAsks(HttpClientAgent http, Ticker ticker, LeveeClient.Options options, Supplier<RequestLease.Epoch> current,
              MeterRegistry registry) {
        this.http = http;
        this.ticker = ticker;
        this.timeoutMs = Math.max(1, options.checkTimeout().toMillis());
        this.warnIntervalNs = options.warnInterval().toNanos();
        this.current = current;
        for (Outcome o : Outcome.values()) {
            outcomes[o.ordinal()] = Counter.builder("levee_client_lease_asks_total")
                    .description("lease asks to limiters by what came of them").tag("result", o.label)
                    .register(registry);
        }
    }

    /** Returns the round-trip estimate at {@code now}, ns: {@value #START_RTT_NS} before any answer or a second after the last. */
    long rttNs(long now) {
        return rttSeen && now - rttAt < RTT_MEMORY_NS ? rtt : START_RTT_NS;
    }

    /**
     * Asks member {@code m} for {@code slots} slots of the key of {@code c}; its answer is offered to {@code k}'s
     * holder. {@code m} is marked in flight by the caller.
     *
     * @param leadNs   the lead to ask for ({@code LeaseSizer.leadNs}: the first slot usable on arrival), ns, ≥ 0
     * @param epoch    the client's epoch at the send
     * @param expected the client's own per-limiter limit of the key for group size {@code g}
     * @param quotas   the client's {@code QuotaConfig.resolutionDigest} of the request's resource
     */
    void send(LeaseAdmission.KeyLease k, Member m, S3Classification c, String limitKey, int g, int slots, long leadNs,
              RequestLease.Epoch epoch, GcraLimit expected, String quotas) {
        HostPort addr;
        byte[] body;
        try {
            addr = HostPort.parse(m.address, "limiter address");
            body = Json.MAPPER.writeValueAsBytes(new RequestLeaseWire.Ask(c.resource(), c.key(), c.operation().name(), g,
                    slots, Math.min(leadNs, RequestLeaseWire.Ask.MAX_LEAD_NS), client, quotas));
        } catch (IllegalArgumentException | com.fasterxml.jackson.core.JsonProcessingException e) {
            answered(k, m, limitKey, epoch, expected, 0, Future.failedFuture(e));
            return;
        }
        RequestOptions o = new RequestOptions().setMethod(HttpMethod.POST).setHost(addr.host()).setPort(addr.port())
                .setURI(RequestLeaseWire.PATH).setIdleTimeout(timeoutMs)
                .putHeader(io.vertx.core.http.HttpHeaders.CONTENT_TYPE, "application/json");
        long sent = ticker.read();
        LimiterChannel.request(http, o)
                .compose(r -> r.send(Buffer.buffer(body)))
                .compose(resp -> {
                    String length = resp.getHeader(io.vertx.core.http.HttpHeaders.CONTENT_LENGTH);
                    if (length != null && (length.length() > 9 || Long.parseLong(length) > MAX_ANSWER_BYTES)) {
                        resp.request().reset();
                        return Future.failedFuture(new Oversized(length));
                    }
                    return resp.body().map(b -> new Answer(resp.statusCode(), b));
                })
                .timeout(timeoutMs + 50, TimeUnit.MILLISECONDS)
                .onComplete(ar -> answered(k, m, limitKey, epoch, expected, sent, ar));
    }

    private void answered(LeaseAdmission.KeyLease k, Member m, String limitKey, RequestLease.Epoch epoch,
                          GcraLimit expected, long sent, AsyncResult<Answer> ar) {
        long received = ticker.read();
        Outcome out = Outcome.MALFORMED;
        String problem = null;
        long retry = RETRY_NS;
        RequestLease lease = null;
        if (ar.failed()) {
            out = ar.cause() instanceof Oversized ? Outcome.MALFORMED : Outcome.FAILED;
            problem = describe(ar.cause());
        } else if (ar.result().status() != 200) {
            out = Outcome.FAILED;
            problem = "HTTP " + ar.result().status();
        } else {
            sample(received - sent, received);
            Buffer b = ar.result().body();
            RequestLeaseWire.Grant grant = null;
            if (b.length() > MAX_ANSWER_BYTES) {
                problem = "an answer of " + b.length() + " bytes, more than " + MAX_ANSWER_BYTES;
            } else {
                try {
                    grant = Json.parse(b.getBytes(), RequestLeaseWire.Grant.class);
                    problem = grant.problem();
                } catch (IllegalArgumentException e) {
                    problem = e.getMessage();
                }
            }
            if (problem == null && !grant.granted()) {
                long wait = grant.waitNs() == null ? 0 : grant.waitNs();
                out = switch (grant.reason()) {
                    case RequestLeaseWire.FENCED -> Outcome.FENCED;
                    case RequestLeaseWire.NOT_LEASABLE -> Outcome.NOT_LEASABLE;
                    case RequestLeaseWire.QUOTAS_DIFFER -> Outcome.QUOTAS_DIFFER;
                    default -> Outcome.REFUSED;
                };
                retry = out == Outcome.NOT_LEASABLE || out == Outcome.QUOTAS_DIFFER ? Math.max(wait, RETRY_NS) : wait;
                if (out == Outcome.NOT_LEASABLE) {
                    problem = "not leasable: the limiter's quotas say no (the client's say yes)";
                } else if (out == Outcome.QUOTAS_DIFFER) {
                    problem = "the limiter resolves this bucket with other quotas than this client: give levee client"
                            + " the limiters' quota source (--quotas FILE or the etcd flags; docs/quotas.md, Request"
                            + " leases)";
                }
            } else if (problem == null) {
                problem = grantProblem(grant, m, limitKey);
                if (problem == null) {
                    try {
                        lease = grant.toLease(epoch, sent, received);
                        problem = LeaseAdmission.RULES.problem(lease, expected);
                    } catch (IllegalArgumentException e) {
                        problem = e.getMessage();
                    }
                    if (problem != null) {
                        lease = null;
                    }
                }
            }
        }
        boolean offered = false;
        RequestLease.Epoch now = lease == null ? null : current.get();
        synchronized (k) {
            if (lease != null) {
                k.epoch(now);
                offered = k.holder.offer(lease);
                retry = 0;
            }
            m.inFlight = false;
            m.holdOff = retry > 0;
            m.notBefore = received + retry;
        }
        if (lease != null) {
            out = offered ? Outcome.GRANTED : Outcome.STALE;
        }
        outcomes[out.ordinal()].increment();
        if (out == Outcome.MALFORMED || out == Outcome.FAILED || out == Outcome.NOT_LEASABLE
                || out == Outcome.QUOTAS_DIFFER) {
            warn(out, m, limitKey, problem, received);
        }
    }

    /** What makes a well-formed grant not one for this ask, or null. */
    private static String grantProblem(RequestLeaseWire.Grant grant, Member m, String limitKey) {
        if (!grant.limiter().equals(m.id)) {
            return "a grant from limiter '" + LogText.escape(grant.limiter(), 128) + "', asked '" + m.id + "'";
        }
        if (!grant.limitKey().equals(limitKey)) {
            return "a grant for key '" + LogText.escape(grant.limitKey(), 400) + "', asked for '" + limitKey + "'";
        }
        return null;
    }

    private void sample(long ns, long at) {
        long r = rttSeen && at - rttAt < RTT_MEMORY_NS ? rtt : ns;
        rtt = r + (Math.max(0, ns) - r) / 8; // racing answers may lose a sample: an estimate, not a count
        rttAt = at;
        rttSeen = true;
    }

    private String describe(Throwable t) {
        if (t instanceof java.util.concurrent.TimeoutException || t instanceof io.netty.handler.timeout.TimeoutException) {
            return "no answer within " + timeoutMs + " ms";
        }
        String msg = t.getMessage();
        return msg == null ? t.getClass().getSimpleName() : msg;
    }

    /** A WARN (INFO for not_leasable) naming the limiter and what was wrong, at most one per limiter per interval. */
    private void warn(Outcome out, Member m, String limitKey, String problem, long now) {
        long[] w = warned.get(m.id, id -> new long[3]);
        long unsaid;
        synchronized (w) {
            if (w[1] != 0 && now - w[0] < warnIntervalNs) {
                w[2]++;
                return;
            }
            w[0] = now;
            w[1] = 1;
            unsaid = w[2];
            w[2] = 0;
        }
        String more = unsaid == 0 ? "" : " (" + unsaid + " more such answers from it since the last warning)";
        String line = "lease: ask to limiter {} ({}) for key {}: " + out.label + ": {}; no slot of it is used, the key's"
                + " checks go to a limiter{}";
        Object[] args = {LogText.escape(m.id, 128), m.address, LogText.escape(limitKey, 400), LogText.escape(
                problem == null ? "" : problem, 400), more};
        if (out == Outcome.NOT_LEASABLE) {
            LOG.info(line, args);
        } else {
            LOG.warn(line, args);
        }
    }

    /** Who asks, for the limiter's grant log: host name and process id, printable ASCII, at most 128 characters. */
    static String clientId() {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException | SecurityException e) {
            host = "levee-client";
        }
        StringBuilder b = new StringBuilder();
        for (char ch : (host + "/" + ProcessHandle.current().pid()).toCharArray()) {
            b.append(ch >= 0x21 && ch <= 0x7e ? ch : '_');
        }
        return b.length() > 128 ? b.substring(b.length() - 128) : b.toString();
    }
}
