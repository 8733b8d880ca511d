package dev.levee.bench.quota;

import dev.levee.quota.PrefixRule;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.ResolvedQuota;
import dev.levee.quota.ResourceQuotas;
import dev.levee.s3.S3Operation;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Quota resolution per second (docs/design.md §4) on the limiter's hot path, over a site of {@code buckets}
 * configured buckets, each with a resource quota and seven prefix entries {@code data/<i>/part-<p>/}
 * (the shape of EtcdLargeDataIT), plus one wildcard entry {@code tmp/*}. Each call picks a random
 * bucket: {@code prefixHit} resolves a key under one of its prefixes (precomputed answer),
 * {@code resourceLevel} a key under no prefix (falls to the resource quota), {@code wildcard} a key under
 * {@code tmp/} (one key string per call), {@code unconfigured} a bucket that is not configured
 * (default quota). Run with {@code -prof gc} for B/op (docs/BENCHMARKS.md).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class ResolveBenchmark {

    @Param({"100000"})
    public int buckets;

    private QuotaConfig config;
    private String[] names;
    private String[] unconfigured;
    private String[] hitKeys;
    private String[] missKeys;
    private String[] wildKeys;

    /** The configuration of the benchmark: {@code n} buckets of seven prefixes and a wildcard entry. */
    public static QuotaConfig site(int n) {
        Map<String, ResourceQuotas> resources = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            List<PrefixRule> prefixes = new ArrayList<>();
            for (int p = 0; p < 7; p++) {
                prefixes.add(PrefixRule.of("data/" + i + "/part-" + p + "/", new Quota(100 + p, 5)));
            }
            prefixes.add(PrefixRule.of("tmp/*", new Quota(1, 1)));
            resources.put("bucket-" + i, new ResourceQuotas(new Quota(100, 10), prefixes));
        }
        return QuotaConfig.builder().defaultQuota(new Quota(1000, 100))
                .methodDefault(S3Operation.PutObject, new Quota(50, 5)).resources(resources).build();
    }

    @Setup(Level.Trial)
    public void setUp() {
        config = site(buckets);
        names = new String[buckets];
        unconfigured = new String[buckets];
        hitKeys = new String[buckets];
        missKeys = new String[buckets];
        wildKeys = new String[buckets];
        for (int i = 0; i < buckets; i++) {
            names[i] = "bucket-" + i;
            unconfigured[i] = "other-" + i;
            hitKeys[i] = "data/" + i + "/part-" + (i % 7) + "/object-" + i + ".bin";
            missKeys[i] = "data/" + i + "/other/object-" + i + ".bin";
            wildKeys[i] = "tmp/object-" + i;
        }
    }

    private static int next(int n) {
        return ThreadLocalRandom.current().nextInt(n);
    }

    /** A key under one of the bucket's seven prefixes. */
    @Benchmark
    public ResolvedQuota prefixHit() {
        int i = next(buckets);
        return config.resolve(names[i], hitKeys[i], S3Operation.GetObject);
    }

    /** A key under none of the bucket's prefixes: the resource quota. */
    @Benchmark
    public ResolvedQuota resourceLevel() {
        int i = next(buckets);
        return config.resolve(names[i], missKeys[i], S3Operation.GetObject);
    }

    /** A key under the wildcard entry: a counter per object key. */
    @Benchmark
    public ResolvedQuota wildcard() {
        int i = next(buckets);
        return config.resolve(names[i], wildKeys[i], S3Operation.GetObject);
    }

    /** A bucket that is not configured: the default quota. */
    @Benchmark
    public ResolvedQuota unconfigured() {
        int i = next(buckets);
        return config.resolve(unconfigured[i], hitKeys[i], S3Operation.GetObject);
    }
}
