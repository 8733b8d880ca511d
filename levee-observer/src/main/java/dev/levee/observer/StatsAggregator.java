package dev.levee.observer;

import com.fasterxml.jackson.databind.JsonNode;
import dev.levee.core.Member;
import dev.levee.core.MembershipView;
import dev.levee.runtime.Json;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The observer's {@code GET /v1/stats} (issue 14 item 1): fetches {@code GET /v1/stats} from every
 * limiter of the membership with the Vert.x client, each within a timeout, and sums the rows of the
 * limiters that answered, per window and per entry (resource, level, prefix, operation).
 *
 * <p>A row's counts and rates are the sums over the limiters that listed it; {@code limiters} says how
 * many did (the limiters of its group that saw traffic for it); {@code maxError} is the sum of their
 * error bounds. A limiter that does not answer in time, or answers something else than its statistics,
 * is listed with {@code answered: false} and its error, and counts for nothing.
 */
public final class StatsAggregator {

    /** Default timeout of one limiter's answer: 1 s (CLI {@code --stats-timeout}). */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(1);

    private final HttpClientAgent http;
    private final long timeoutMs;

    /**
     * Creates the aggregator's HTTP client.
     *
     * @param timeout longest wait for one limiter's answer (connect and response), positive
     * @throws IllegalArgumentException when the timeout is not positive
     */
    public StatsAggregator(Vertx vertx, Duration timeout) {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("stats timeout must be positive");
        }
        this.timeoutMs = Math.max(1, timeout.toMillis());
        this.http = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true)
                .setConnectTimeout((int) Math.min(Integer.MAX_VALUE, timeoutMs)));
    }

    /** One limiter as the aggregate lists it. */
    public record LimiterAnswer(String id, String address, boolean answered, String error, Long revision) {
    }

    /** One summed row. */
    public record Row(String resource, String level, String prefix, String operation, long offered, long admitted,
                      long refused, long wouldReject, long maxError, double offeredPerS, double admittedPerS,
                      double refusedPerS, double wouldRejectPerS, int limiters) {
    }

    /**
     * One summed window; {@code endSecondMin} and {@code endSecondMax} are the earliest and latest end of
     * the limiters' windows (seconds of their monotonic clock: equal when they cut the same seconds).
     */
    public record Window(long seconds, long coveredSeconds, long offered, long refused, long wouldReject,
                         long endSecondMin, long endSecondMax, List<Row> rows) {
    }

    /**
     * The answer.
     *
     * @param membershipRevision the membership revision the limiters were taken from
     * @param factor             the group factor DF
     * @param answered           how many limiters answered
     * @param configRevisions    the distinct configuration revisions the answering limiters are at
     * @param limiters           every member, answered or not
     * @param windows            the summed windows
     */
    public record Answer(long membershipRevision, int factor, int answered, List<Long> configRevisions,
                         List<LimiterAnswer> limiters, List<Window> windows) {
    }

    record Fetched(Member member, JsonNode body, String error) {
    }

    /** Fetches and sums the statistics of the members of {@code view}. */
    public Future<Answer> aggregate(MembershipView view) {
        List<Future<Fetched>> all = new ArrayList<>();
        for (Member m : view.limiters()) {
            all.add(fetch(m));
        }
        return Future.join(all).transform(ar -> Future.succeededFuture(sum(view,
                all.stream().map(Future::result).toList())));
    }

    /**
     * One summed entry of {@code GET /v1/stats/history}: per second, oldest first, the counts of the limiters that
     * listed it, aligned on each limiter's last whole second (limiters of one host cut the same seconds; across
     * hosts their seconds may differ by less than one).
     */
    public record SeriesRow(String resource, String level, String prefix, String operation, long[] offered,
                            long[] refused, long[] wouldReject, int limiters) {
    }

    /**
     * The observer's {@code GET /v1/stats/history}.
     *
     * @param answered how many limiters answered
     * @param seconds  the length of every series (the longest any answering limiter has)
     * @param windows  the limiters' window lengths in seconds, shortest first (the live page plots rates over
     *                 the shortest, as it does for its polls)
     * @param rows     one per entry listed by any limiter
     */
    public record HistoryAnswer(int answered, long seconds, List<Long> windows, List<SeriesRow> rows) {
    }

    /** Fetches and sums the per-second history of the members of {@code view} (the live page's plots at load). */
    public Future<HistoryAnswer> history(MembershipView view) {
        List<Future<Fetched>> all = new ArrayList<>();
        for (Member m : view.limiters()) {
            all.add(fetch(m, "/v1/stats/history"));
        }
        return Future.join(all).transform(ar -> Future.succeededFuture(sumHistory(
                all.stream().map(Future::result).toList())));
    }

    static HistoryAnswer sumHistory(List<Fetched> fetched) {
        int answered = 0;
        int seconds = 0;
        TreeSet<Long> windows = new TreeSet<>();
        List<JsonNode> bodies = new ArrayList<>();
        for (Fetched f : fetched) {
            if (f.body() != null && f.body().path("rows").isArray()) {
                answered++;
                bodies.add(f.body());
                seconds = Math.max(seconds, f.body().path("seconds").asInt());
                f.body().path("windows").forEach(w -> windows.add(w.asLong()));
            }
        }
        Map<String, SeriesRow> rows = new LinkedHashMap<>();
        for (JsonNode b : bodies) {
            for (JsonNode r : b.path("rows")) {
                String key = text(r, "resource") + "\u0000" + text(r, "level") + "\u0000" + text(r, "prefix")
                        + "\u0000" + text(r, "operation");
                int n = seconds;
                SeriesRow row = rows.computeIfAbsent(key, k -> new SeriesRow(text(r, "resource"), text(r, "level"),
                        text(r, "prefix"), text(r, "operation"), new long[n], new long[n], new long[n], 0));
                addAligned(row.offered(), r.path("offered"));
                addAligned(row.refused(), r.path("refused"));
                addAligned(row.wouldReject(), r.path("wouldReject"));
                rows.put(key, new SeriesRow(row.resource(), row.level(), row.prefix(), row.operation(), row.offered(),
                        row.refused(), row.wouldReject(), row.limiters() + 1));
            }
        }
        return new HistoryAnswer(answered, seconds, List.copyOf(windows), List.copyOf(rows.values()));
    }

    /** Adds a limiter's series into the sum, both ending at their last whole second. */
    private static void addAligned(long[] sum, JsonNode values) {
        int n = Math.min(values.size(), sum.length);
        for (int i = 0; i < n; i++) {
            sum[sum.length - n + i] += values.get(values.size() - n + i).asLong();
        }
    }

    private Future<Fetched> fetch(Member m) {
        return fetch(m, "/v1/stats");
    }

    private Future<Fetched> fetch(Member m, String uri) {
        dev.levee.runtime.HostPort a;
        try {
            a = dev.levee.runtime.HostPort.parse(m.address(), "address");
        } catch (IllegalArgumentException e) {
            return Future.succeededFuture(new Fetched(m, null, e.getMessage()));
        }
        return http.request(new RequestOptions().setMethod(HttpMethod.GET).setHost(a.host()).setPort(a.port())
                        .setURI(uri).setTimeout(timeoutMs))
                .compose(req -> req.send())
                .compose(resp -> resp.body().map(b -> {
                    if (resp.statusCode() != 200) {
                        return new Fetched(m, null, "HTTP " + resp.statusCode());
                    }
                    try {
                        return new Fetched(m, Json.MAPPER.readTree(b.getBytes()), null);
                    } catch (java.io.IOException e) {
                        return new Fetched(m, null, "unreadable statistics: " + e.getMessage());
                    }
                }))
                .recover(e -> Future.succeededFuture(new Fetched(m, null,
                        e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage())));
    }

    private static final class Acc {
        final String resource;
        final String level;
        final String prefix;
        final String operation;
        long offered;
        long admitted;
        long refused;
        long wouldReject;
        long maxError;
        double offeredPerS;
        double admittedPerS;
        double refusedPerS;
        double wouldRejectPerS;
        int limiters;

        Acc(JsonNode r) {
            resource = text(r, "resource");
            level = text(r, "level");
            prefix = text(r, "prefix");
            operation = text(r, "operation");
        }
    }

    static String text(JsonNode n, String field) {
        JsonNode v = n.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }

    static Answer sum(MembershipView view, List<Fetched> fetched) {
        List<LimiterAnswer> limiters = new ArrayList<>();
        TreeSet<Long> revisions = new TreeSet<>();
        Map<Long, Map<String, Acc>> rows = new TreeMap<>();
        Map<Long, long[]> totals = new TreeMap<>();
        int answered = 0;
        for (Fetched f : fetched) {
            if (f.body() == null || !f.body().path("windows").isArray()) {
                limiters.add(new LimiterAnswer(f.member().id(), f.member().address(), false,
                        f.error() != null ? f.error() : "no windows in its answer", null));
                continue;
            }
            answered++;
            long revision = f.body().path("revision").asLong();
            revisions.add(revision);
            limiters.add(new LimiterAnswer(f.member().id(), f.member().address(), true, null, revision));
            for (JsonNode w : f.body().path("windows")) {
                long seconds = w.path("seconds").asLong();
                long[] t = totals.computeIfAbsent(seconds, s -> new long[] {0, 0, 0, 0, Long.MAX_VALUE, Long.MIN_VALUE});
                t[4] = Math.min(t[4], w.path("endSecond").asLong());
                t[5] = Math.max(t[5], w.path("endSecond").asLong());
                t[0] += w.path("offered").asLong();
                t[1] += w.path("refused").asLong();
                t[2] += w.path("wouldReject").asLong();
                t[3] = Math.max(t[3], w.path("coveredSeconds").asLong());
                Map<String, Acc> byEntry = rows.computeIfAbsent(seconds, s -> new LinkedHashMap<>());
                for (JsonNode r : w.path("rows")) {
                    String key = text(r, "resource") + "\u0000" + text(r, "level") + "\u0000" + text(r, "prefix")
                            + "\u0000" + text(r, "operation");
                    Acc a = byEntry.computeIfAbsent(key, k -> new Acc(r));
                    a.offered += r.path("offered").asLong();
                    a.admitted += r.path("admitted").asLong();
                    a.refused += r.path("refused").asLong();
                    a.wouldReject += r.path("wouldReject").asLong();
                    a.maxError += r.path("maxError").asLong();
                    a.offeredPerS += r.path("offeredPerS").asDouble();
                    a.admittedPerS += r.path("admittedPerS").asDouble();
                    a.refusedPerS += r.path("refusedPerS").asDouble();
                    a.wouldRejectPerS += r.path("wouldRejectPerS").asDouble();
                    a.limiters++;
                }
            }
        }
        List<Window> windows = new ArrayList<>();
        totals.forEach((seconds, t) -> {
            List<Row> list = rows.getOrDefault(seconds, Map.of()).values().stream()
                    .map(a -> new Row(a.resource, a.level, a.prefix, a.operation, a.offered, a.admitted, a.refused,
                            a.wouldReject, a.maxError, a.offeredPerS, a.admittedPerS, a.refusedPerS, a.wouldRejectPerS,
                            a.limiters))
                    .sorted(java.util.Comparator.comparingDouble((Row r) -> -r.offeredPerS())
                            .thenComparing(Row::resource,
                                    java.util.Comparator.nullsFirst(java.util.Comparator.naturalOrder())))
                    .toList();
            windows.add(new Window(seconds, t[3], t[0], t[1], t[2], t[4], t[5], list));
        });
        return new Answer(view.revision(), view.factor(), answered, List.copyOf(revisions), limiters, windows);
    }

    /** Closes the HTTP client. */
    public Future<Void> close() {
        return http.close();
    }
}
