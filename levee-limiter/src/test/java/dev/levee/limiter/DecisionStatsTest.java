package dev.levee.limiter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.levee.limiter.DecisionStats.Outcome;
import dev.levee.limiter.DecisionStats.Row;
import dev.levee.limiter.DecisionStats.Window;
import dev.levee.quota.QuotaConfig;
import dev.levee.s3.S3Operation;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class DecisionStatsTest {

    static final long S = 1_000_000_000L;

    static final QuotaConfig CONFIG = dev.levee.config.QuotaConfigLoader.parse("""
            factor: 4
            default: {rate: 1000, burst: 100}
            methods_default:
              ListObjects: {rate: 50, burst: 5}
            resources:
              example-bucket:
                prefixes:
                  - prefix: "uploads/*"
                    quota: {rate: 10, burst: 1}
                  - prefix: "photos/2024"
                    quota: {rate: 20, burst: 2}
                  - prefix: ""
                    methods:
                      PutObject: {rate: 5, burst: 1}
              whole:
                quota: {rate: 30, burst: 3}
            """, "test quotas");

    static String rule(String resource, String key, S3Operation op) {
        return CONFIG.resolve(resource, key, op).ruleKey();
    }

    /**
     * The per-second history the live page plots at load (issue 26 item 3): each entry of the longest window, its
     * counts in each whole second, oldest first; a second without decisions is 0.
     */
    @Test
    void historyGivesEachEntrysCountsPerWholeSecondOfTheLongestWindow() {
        AtomicLong clock = new AtomicLong(40 * S);
        DecisionStats stats = new DecisionStats(DecisionStats.DEFAULTS, clock::get);
        String uploads = rule("example-bucket", "uploads/x", S3Operation.GetObject);
        String whole = rule("whole", "k", S3Operation.GetObject);
        for (int second = 0; second < 5; second++) {
            for (int i = 0; i < 10 * (second + 1); i++) {
                stats.record(uploads, i < second ? Outcome.REFUSED : Outcome.ADMITTED);
            }
            if (second != 2) {
                stats.record(whole, Outcome.WOULD_REJECT);
            }
            clock.addAndGet(S);
        }
        clock.addAndGet(S / 2); // the current, partial second is not counted
        stats.record(whole, Outcome.ADMITTED);
        DecisionStats.History h = stats.history();
        assertThat(h.seconds()).isEqualTo(5);
        assertThat(h.endSecond()).isEqualTo(45);
        assertThat(h.windows()).containsExactly(10L, 60L);
        assertThat(h.rows()).extracting(DecisionStats.Series::resource).containsExactly("example-bucket", "whole");
        DecisionStats.Series u = h.rows().get(0);
        assertThat(u.level()).isEqualTo("prefix");
        assertThat(u.prefix()).isEqualTo("uploads/*");
        assertThat(u.offered()).containsExactly(10, 20, 30, 40, 50);
        assertThat(u.refused()).containsExactly(0, 1, 2, 3, 4);
        assertThat(u.wouldReject()).containsExactly(0, 0, 0, 0, 0);
        DecisionStats.Series w = h.rows().get(1);
        assertThat(w.offered()).containsExactly(1, 1, 0, 1, 1);
        assertThat(w.wouldReject()).containsExactly(1, 1, 0, 1, 1);
        assertThat(new DecisionStats(DecisionStats.OFF, clock::get).history().rows()).isEmpty();
    }

    @Test
    void countsEachEntryExactlyOverTheWholeSecondsOfEachWindow() {
        AtomicLong clock = new AtomicLong(40 * S); // on a slice boundary: its first second counts whole
        DecisionStats stats = new DecisionStats(DecisionStats.DEFAULTS, clock::get);
        for (int second = 0; second < 12; second++) {
            for (int i = 0; i < 100; i++) {
                // distinct object keys of one wildcard entry count as one entry
                stats.record(rule("example-bucket", "uploads/" + second + "-" + i, S3Operation.GetObject),
                        i < 30 ? Outcome.REFUSED : Outcome.ADMITTED);
                if (i < 10) {
                    stats.record(rule("other", "k", S3Operation.GetObject), Outcome.ADMITTED);
                }
            }
            clock.addAndGet(S);
        }
        List<Window> windows = stats.snapshot();
        assertThat(windows).extracting(Window::seconds).containsExactly(10L, 60L);
        Window ten = windows.get(0);
        assertThat(ten.coveredSeconds()).isEqualTo(10);
        assertThat(ten.offered()).isEqualTo(1100);
        assertThat(ten.refused()).isEqualTo(300);
        assertThat(ten.rows()).containsExactly(
                new Row("example-bucket", "prefix", "uploads/*", null, 1000, 700, 300, 0, 0),
                new Row("other", "default", null, null, 100, 100, 0, 0, 0));
        Window sixty = windows.get(1);
        assertThat(sixty.coveredSeconds()).isEqualTo(12);
        assertThat(sixty.rows().get(0).offered()).isEqualTo(1200);

        // the 10 s window slides: 10 quiet seconds later it is empty, the 60 s one still holds all 12 s
        clock.addAndGet(10 * S);
        windows = stats.snapshot();
        assertThat(windows.get(0).rows()).isEmpty();
        assertThat(windows.get(0).offered()).isZero();
        assertThat(windows.get(1).offered()).isEqualTo(1320);
    }

    @Test
    void theSecondTheStatisticsStartInIsNotCountedAsAWholeOne() {
        AtomicLong clock = new AtomicLong(5 * S + S / 2);
        DecisionStats stats = new DecisionStats(DecisionStats.DEFAULTS, clock::get);
        stats.record("resource:r", Outcome.ADMITTED); // in the partial second 5
        clock.set(6 * S + 1);
        stats.record("resource:r", Outcome.ADMITTED);
        assertThat(stats.snapshot().get(0).coveredSeconds()).isZero();
        assertThat(stats.snapshot().get(0).offered()).isZero();
        clock.set(7 * S);
        assertThat(stats.snapshot().get(0).coveredSeconds()).isEqualTo(1);
        assertThat(stats.snapshot().get(0).offered()).isEqualTo(1);
    }

    @Test
    void wouldRejectDecisionsAreAdmittedAndCountedApart() {
        AtomicLong clock = new AtomicLong();
        DecisionStats stats = new DecisionStats(DecisionStats.DEFAULTS, clock::get);
        String k = rule("whole", "a", S3Operation.GetObject);
        for (int i = 0; i < 50; i++) {
            stats.record(k, i % 5 == 0 ? Outcome.WOULD_REJECT : Outcome.ADMITTED);
        }
        clock.addAndGet(S);
        assertThat(stats.snapshot().get(0).rows())
                .containsExactly(new Row("whole", "resource", null, null, 50, 50, 0, 10, 0));
        assertThat(stats.snapshot().get(0).wouldReject()).isEqualTo(10);
    }

    @Test
    void namesEveryLevelFromItsRuleKey() {
        assertThat(DecisionStats.Entry.parse(rule("example-bucket", "uploads/x", S3Operation.GetObject)))
                .isEqualTo(new DecisionStats.Entry("example-bucket", dev.levee.quota.QuotaLevel.PREFIX, "uploads/*", null));
        assertThat(DecisionStats.Entry.parse(rule("example-bucket", "photos/2024/a", S3Operation.GetObject)))
                .isEqualTo(new DecisionStats.Entry("example-bucket", dev.levee.quota.QuotaLevel.PREFIX, "photos/2024", null));
        assertThat(DecisionStats.Entry.parse(rule("example-bucket", "z", S3Operation.PutObject))).isEqualTo(
                new DecisionStats.Entry("example-bucket", dev.levee.quota.QuotaLevel.PREFIX_METHOD, "", "PutObject"));
        assertThat(DecisionStats.Entry.parse(rule("whole", "z", S3Operation.PutObject)))
                .isEqualTo(new DecisionStats.Entry("whole", dev.levee.quota.QuotaLevel.RESOURCE, null, null));
        assertThat(DecisionStats.Entry.parse(rule("b1", "", S3Operation.ListObjectsV2))).isEqualTo(
                new DecisionStats.Entry("b1", dev.levee.quota.QuotaLevel.METHODS_DEFAULT, null, "ListObjects"));
        assertThat(DecisionStats.Entry.parse(rule("b1", "z", S3Operation.GetObject)))
                .isEqualTo(new DecisionStats.Entry("b1", dev.levee.quota.QuotaLevel.DEFAULT, null, null));
    }

    @Test
    void aWildcardEntrysRuleKeyIsOneStringWhateverTheObjectKey() {
        var a = CONFIG.resolve("example-bucket", "uploads/a", S3Operation.GetObject);
        var b = CONFIG.resolve("example-bucket", "uploads/b", S3Operation.GetObject);
        assertThat(a.limitKey()).isNotEqualTo(b.limitKey());
        assertThat(a.ruleKey()).isEqualTo("prefix:example-bucket/uploads/*").isSameAs(b.ruleKey());
        var literal = CONFIG.resolve("example-bucket", "photos/2024/x", S3Operation.GetObject);
        assertThat(literal.ruleKey()).isSameAs(literal.limitKey());
    }

    /**
     * Issue 14 acceptance: 1 000 000 distinct buckets once each (the default entry, one rule key each),
     * spread over 61 seconds so that every slice of the ring is full, with five hot buckets among them:
     * the sketches stay within their bound by construction (map capacity) and by measurement (retained
     * heap), and the hot buckets are the top rows of both windows, their true counts within the stated
     * error bound.
     */
    @Test
    void aMillionDistinctBucketsStayWithinTheBoundAndTheHotOnesStillShow() {
        AtomicLong clock = new AtomicLong(0);
        // the configuration keeps the answers of up to 16 384 unconfigured buckets: full before, so that what is
        // measured below is the statistics' memory only (the cache stays at its bound while it turns over)
        for (int i = 0; i < 20_000; i++) {
            rule("fill-" + i, "k", S3Operation.GetObject);
        }
        long before = usedHeapAfterGc();
        DecisionStats stats = new DecisionStats(DecisionStats.DEFAULTS, clock::get);
        int seconds = 61;
        int perSecond = (1_000_000 + seconds - 1) / seconds;
        String[] hot = {"hot-a", "hot-b", "hot-c", "hot-d", "hot-e"};
        long[] hotIn = new long[seconds]; // checks of each hot bucket per second
        int n = 0;
        for (int s = 0; s < seconds; s++) {
            for (int i = 0; i < perSecond && n < 1_000_000; i++) {
                stats.record(rule("cold-" + n++, "k", S3Operation.GetObject), Outcome.ADMITTED);
                if (i % 8 == 0) {
                    hotIn[s]++;
                    for (int h = 0; h < hot.length; h++) {
                        stats.record(rule(hot[h], "k", S3Operation.GetObject),
                                h == 0 && hotIn[s] % 2 == 0 ? Outcome.REFUSED : Outcome.ADMITTED);
                    }
                }
            }
            clock.addAndGet(S);
        }
        assertThat(n).isEqualTo(1_000_000);
        List<Window> windows = stats.snapshot();
        long used = usedHeapAfterGc() - before;
        for (Window w : windows) {
            long trueHot = 0;
            for (long s = seconds - w.coveredSeconds(); s < seconds; s++) {
                trueHot += hotIn[(int) s];
            }
            List<Row> top5 = w.rows().subList(0, 5);
            assertThat(top5).as("%d s window", w.seconds()).extracting(Row::resource).containsExactlyInAnyOrder(hot);
            for (Row r : top5) {
                assertThat(r.maxError()).as("error bound").isLessThan(trueHot / 10);
                assertThat(r.offered()).as(r.resource()).isBetween(trueHot - r.maxError(), trueHot);
            }
            Row a = top5.stream().filter(r -> r.resource().equals("hot-a")).findFirst().orElseThrow();
            assertThat(a.refused()).isBetween(trueHot / 2 - a.maxError(), (trueHot + 1) / 2);
            System.out.printf("%d s window after 1M distinct buckets: hot count %d, shown %d, max error %d%n",
                    w.seconds(), trueHot, top5.get(0).offered(), top5.get(0).maxError());
        }
        // by construction: no sketch holds more than 0.75 x 1024 entries
        assertThat(stats.mapCapacity()).isLessThanOrEqualTo(stats.sketches() * 768L);
        long bound = stats.boundBytes(96);
        assertThat(bound).isLessThan(16L << 20);
        // measured: what the statistics retain after a million buckets (keys included) is within the bound
        assertThat(used).as("retained heap, bytes").isLessThan(bound);
        System.out.printf("stats after 1M distinct buckets: retained %,d bytes (bound %,d), map capacity %d%n",
                used, bound, stats.mapCapacity());
        assertThat(stats).isNotNull(); // keeps stats reachable through the measurement
    }

    static long usedHeapAfterGc() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        Runtime rt = Runtime.getRuntime();
        return rt.totalMemory() - rt.freeMemory();
    }

    @Test
    void offCountsNothingAndHoldsNoSketch() {
        DecisionStats stats = new DecisionStats(DecisionStats.OFF, () -> 0);
        stats.record("default:x", Outcome.ADMITTED);
        assertThat(stats.snapshot()).isEmpty();
        assertThat(stats.sketches()).isZero();
    }

    @Test
    void settingsOutOfRangeAreRefusedByName() {
        assertThatThrownBy(() -> new DecisionStats.Options(true, 0, List.of(Duration.ofSeconds(10)), 1024))
                .hasMessageContaining("stats top");
        assertThatThrownBy(() -> new DecisionStats.Options(true, 5, List.of(Duration.ofMillis(1500)), 1024))
                .hasMessageContaining("whole seconds");
        assertThatThrownBy(() -> new DecisionStats.Options(true, 5, List.of(Duration.ofSeconds(10)), 1000))
                .hasMessageContaining("power of two");
        assertThatThrownBy(() -> new DecisionStats.Options(true, 5, List.of(), 1024)).hasMessageContaining("windows");
    }
}
