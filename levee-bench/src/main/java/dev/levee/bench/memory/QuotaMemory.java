package dev.levee.bench.memory;

import dev.levee.config.QuotaConfigLoader;
import dev.levee.config.QuotaLayout;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.ResourceQuotas;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;

/**
 * Measures a large quota configuration without etcd: the retained heap of the raw etcd values, of the
 * parsed values ({@link ResourceQuotas}) and of the built {@link QuotaConfig} on top of them, the time
 * of a cold build from the values, and the time of a rebuild after one bucket's value changed (the
 * etcd source's path: {@link QuotaLayout#fromValues} with its parse cache). Buckets have the shape of
 * EtcdLargeDataIT: a quota and seven prefix entries. Run:
 * {@code java -Xmx4g -cp levee-bench/target/levee-bench.jar dev.levee.bench.memory.QuotaMemory 100000}.
 */
public final class QuotaMemory {

    private QuotaMemory() {
    }

    static String bucketValue(int i, int rate) {
        StringBuilder b = new StringBuilder("quota: {rate: " + rate + ", burst: 10}\nprefixes:\n");
        for (int p = 0; p < 7; p++) {
            b.append("  - prefix: \"data/").append(i).append("/part-").append(p).append("/\"\n")
                    .append("    quota: {rate: ").append(rate + p).append(", burst: 5}\n");
        }
        return b.toString();
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        int changes = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        long h0 = used(memory);
        Map<String, String> values = new TreeMap<>();
        values.put(QuotaLayout.DEFAULT, "{rate: 1000, burst: 100}");
        for (int i = 0; i < n; i++) {
            values.put(QuotaLayout.RESOURCES + "bucket-" + i, bucketValue(i, 100));
        }
        long h1 = used(memory);
        Map<String, ResourceQuotas> parsed = new TreeMap<>();
        values.forEach((k, v) -> {
            if (k.startsWith(QuotaLayout.RESOURCES)) {
                String bucket = k.substring(QuotaLayout.RESOURCES.length());
                parsed.put(bucket, QuotaConfigLoader.parseResource(bucket, v, "/levee/" + k));
            }
        });
        long h2 = used(memory);
        long t0 = System.nanoTime();
        QuotaConfig built = QuotaConfig.builder().defaultQuota(new Quota(1000, 100)).resources(parsed).build();
        double buildMs = (System.nanoTime() - t0) / 1e6;
        long h3 = used(memory);

        QuotaLayout.ParseCache cache = new QuotaLayout.ParseCache();
        long t1 = System.nanoTime();
        QuotaConfig current = QuotaLayout.fromValues("/levee/", values, cache);
        double coldMs = (System.nanoTime() - t1) / 1e6;
        double[] applyMs = new double[changes];
        for (int c = 0; c < changes; c++) {
            int bucket = (c * 7919) % n;
            values.put(QuotaLayout.RESOURCES + "bucket-" + bucket, bucketValue(bucket, 200 + c));
            long t = System.nanoTime();
            QuotaConfig next = QuotaLayout.fromValues("/levee/", new TreeMap<>(values), cache);
            boolean same = next.equals(current);
            applyMs[c] = (System.nanoTime() - t) / 1e6;
            if (same || next.resources().get("bucket-" + bucket).quota().rate() != 200 + c) {
                throw new AssertionError("change " + c + " not applied");
            }
            current = next;
        }
        double[] sorted = applyMs.clone();
        Arrays.sort(sorted);
        System.out.printf("buckets=%d raw_values=%.1f MiB parsed_values=%.1f MiB built_config_over_parsed=%.1f MiB"
                        + " (%.2fx parsed) build_from_parsed=%.0f ms cold_fromValues=%.0f ms"
                        + " one_change_rebuild_ms median=%.1f min=%.1f max=%.1f%n",
                n, (h1 - h0) / 1048576.0, (h2 - h1) / 1048576.0, (h3 - h2) / 1048576.0,
                (h3 - h2) / (double) (h2 - h1), buildMs, coldMs, sorted[changes / 2], sorted[0], sorted[changes - 1]);
        if (built.resources().size() + parsed.size() + values.size() + current.factor() < 0) {
            System.out.println(built); // keeps everything reachable until here
        }
    }

    private static long used(MemoryMXBean memory) throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(100);
        }
        return memory.getHeapMemoryUsage().getUsed();
    }
}
