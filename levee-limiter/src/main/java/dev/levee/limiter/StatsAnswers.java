package dev.levee.limiter;

import java.util.ArrayList;
import java.util.List;

/**
 * The answers of a limiter's statistics endpoints, {@code GET /v1/stats} and {@code GET /v1/stats/history}
 * (documented in openapi.yaml), made from its {@link DecisionStats}.
 */
public final class StatsAnswers {

    private StatsAnswers() {
    }

    /**
     * The answer to {@code GET /v1/stats} (documented in openapi.yaml).
     *
     * @param limiter     this limiter's id
     * @param revision    the configuration revision in force
     * @param enabled     whether statistics are kept ({@code --no-stats}: false, no windows)
     * @param top         entries listed per window by offered and by refused
     * @param sketchSize  entries each sketch tracks
     * @param windows     per window its totals and rows
     */
    public record StatsAnswer(String limiter, long revision, boolean enabled, int top, int sketchSize,
                              List<StatsWindow> windows) {
    }

    /** One window of {@link StatsAnswer}: totals, and rows with their rates per second. */
    public record StatsWindow(long seconds, long coveredSeconds, long offered, long refused, long wouldReject,
                              long endSecond, List<StatsRow> rows) {
    }

    /** One row of {@link StatsWindow}: counts and per-second rates over the covered seconds. */
    public record StatsRow(String resource, String level, String prefix, String operation, long offered,
                           long admitted, long refused, long wouldReject, long maxError, double offeredPerS,
                           double admittedPerS, double refusedPerS, double wouldRejectPerS) {
    }

    /**
     * The answer to {@code GET /v1/stats/history} (openapi.yaml): the longest window's entries with their counts
     * in each of its whole seconds, oldest first, the last for the second before {@code endSecond}.
     *
     * @param limiter   this limiter's id
     * @param enabled   whether statistics are kept
     * @param endSecond the ticker second the history ends before (as a window's {@code endSecond})
     * @param seconds   whole seconds covered: the length of every series
     * @param windows   the windows' lengths in seconds, shortest first
     * @param rows      one per entry of the longest window
     */
    public record HistoryAnswer(String limiter, boolean enabled, long endSecond, long seconds, List<Long> windows,
                                List<DecisionStats.Series> rows) {
    }

    /**
     * Returns the statistics as {@code GET /v1/stats} serves them.
     *
     * @param limiter  the limiter's id
     * @param revision the configuration revision in force
     */
    static StatsAnswer stats(String limiter, long revision, DecisionStats stats) {
        List<StatsWindow> windows = new ArrayList<>();
        for (DecisionStats.Window w : stats.snapshot()) {
            double d = Math.max(1, w.coveredSeconds());
            List<StatsRow> rows = w.rows().stream().map(r -> new StatsRow(r.resource(), r.level(), r.prefix(),
                    r.operation(), r.offered(), r.admitted(), r.refused(), r.wouldReject(), r.maxError(),
                    w.coveredSeconds() == 0 ? 0 : r.offered() / d, w.coveredSeconds() == 0 ? 0 : r.admitted() / d,
                    w.coveredSeconds() == 0 ? 0 : r.refused() / d, w.coveredSeconds() == 0 ? 0 : r.wouldReject() / d))
                    .toList();
            windows.add(new StatsWindow(w.seconds(), w.coveredSeconds(), w.offered(), w.refused(), w.wouldReject(),
                    w.endSecond(), rows));
        }
        DecisionStats.Options o = stats.options();
        return new StatsAnswer(limiter, revision, o.enabled(), o.top(), o.sketchSize(), windows);
    }

    /** Returns the per-second history as {@code GET /v1/stats/history} serves it. */
    static HistoryAnswer history(String limiter, DecisionStats stats) {
        DecisionStats.History h = stats.history();
        return new HistoryAnswer(limiter, stats.options().enabled(), h.endSecond(), h.seconds(), h.windows(),
                h.rows());
    }
}
