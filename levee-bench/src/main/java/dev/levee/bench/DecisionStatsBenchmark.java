package dev.levee.bench;

import dev.levee.limiter.DecisionStats;
import dev.levee.quota.QuotaConfig;
import dev.levee.runtime.SystemTicker;
import dev.levee.s3.S3Operation;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The cost of the hot-resources statistics per decision (issue 14): {@link DecisionStats#record} with
 * the default settings, over one entry, 100 entries (exact) and 100 000 entries (beyond the sketch: purges),
 * every fourth decision a refusal. Run with {@code -prof gc}: the allocation per record is the sketches'
 * amortised purges and per-second resets only.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class DecisionStatsBenchmark {

    @Param({"1", "100", "100000"})
    public int entries;

    private String[] keys;
    private DecisionStats stats;
    private int i;

    @Setup
    public void setup() {
        QuotaConfig cfg = dev.levee.config.QuotaConfigLoader.parse("factor: 1\ndefault: {rate: 1000, burst: 100}\n",
                "bench quotas");
        keys = new String[entries];
        for (int k = 0; k < entries; k++) {
            keys[k] = cfg.resolve("bucket-" + k, "k", S3Operation.GetObject).ruleKey();
        }
        stats = new DecisionStats(DecisionStats.DEFAULTS, SystemTicker.INSTANCE);
    }

    @Benchmark
    public void record() {
        int n = i++;
        stats.record(keys[n % entries], (n & 3) == 0 ? DecisionStats.Outcome.REFUSED : DecisionStats.Outcome.ADMITTED);
    }
}
