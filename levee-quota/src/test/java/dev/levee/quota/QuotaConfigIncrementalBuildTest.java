package dev.levee.quota;

import static dev.levee.quota.QuotaFixtures.entry;
import static dev.levee.quota.QuotaFixtures.q;
import static dev.levee.s3.S3Operation.GetObject;
import static dev.levee.s3.S3Operation.PutObject;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A rebuild after one bucket changed reuses every other bucket's validated, compiled entry (the
 * design note "Memory and incremental builds" of {@link QuotaConfig}); the result is still a separate,
 * immutable snapshot equal to a fresh build.
 */
class QuotaConfigIncrementalBuildTest {

    static ResourceQuotas bucket(int i, double rate) {
        List<PrefixRule> prefixes = new ArrayList<>();
        for (int p = 0; p < 7; p++) {
            prefixes.add(entry("data/" + i + "/part-" + p + "/", q(rate + p, 5)));
        }
        prefixes.add(entry("tmp/*", q(1, 1)));
        return new ResourceQuotas(i % 10 == 0 ? null : q(rate, 10), prefixes); // every tenth falls to the defaults
    }

    static Map<String, ResourceQuotas> site(int n) {
        Map<String, ResourceQuotas> resources = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            resources.put("bucket-" + i, bucket(i, 100));
        }
        return resources;
    }

    static QuotaConfig build(Map<String, ResourceQuotas> resources, Quota defaultQuota) {
        return QuotaConfig.builder().defaultQuota(defaultQuota).methodDefault(PutObject, q(50, 5)).resources(resources).build();
    }

    @Test
    void oneBucketChangeReusesEveryOtherBucketsBuiltEntry() {
        Map<String, ResourceQuotas> resources = site(1000);
        QuotaConfig first = build(resources, q(1000, 100));
        QuotaConfig second = first.toBuilder().resource("bucket-7", bucket(7, 55)).build();

        for (int i = 0; i < 1000; i++) {
            String name = "bucket-" + i;
            assertThat(QuotaConfig.sharesEntry(first, second, name)).as(name).isEqualTo(i != 7);
            // observable through the public API: the precomputed answer is the same instance
            if (i != 7) {
                assertThat(second.resolve(name, "data/" + i + "/part-3/k", GetObject))
                        .isSameAs(first.resolve(name, "data/" + i + "/part-3/k", GetObject));
            }
        }
        assertThat(second.resolve("bucket-7", "data/7/part-0/k", GetObject).quota()).isEqualTo(q(55, 5));
        assertThat(first.resolve("bucket-7", "data/7/part-0/k", GetObject).quota()).isEqualTo(q(100, 5));
        resources.put("bucket-7", bucket(7, 55));
        assertThat(second).isEqualTo(build(resources, q(1000, 100)));
    }

    @Test
    void aFreshBuilderGivenThePreviousConfigReusesEqualValuesToo() {
        QuotaConfig first = build(site(100), q(1000, 100));
        Map<String, ResourceQuotas> reparsed = site(100); // equal values, other instances (a re-read file)
        reparsed.remove("bucket-3");
        QuotaConfig second = QuotaConfig.builder().defaultQuota(q(1000, 100)).methodDefault(PutObject, q(50, 5))
                .resources(reparsed).reuse(first).build();

        assertThat(QuotaConfig.sharesEntry(first, second, "bucket-4")).isTrue();
        assertThat(second.resources()).hasSize(99).doesNotContainKey("bucket-3");
        assertThat(second.resolve("bucket-3", "data/3/part-0/k", GetObject).level()).isEqualTo(QuotaLevel.DEFAULT);
    }

    @Test
    void aChangedDefaultReachesReusedBucketsThatFallToIt() {
        QuotaConfig first = build(site(30), q(1000, 100));
        QuotaConfig second = first.toBuilder().defaultQuota(q(7, 1)).methodsDefault(Map.of()).build();

        // bucket-10 has no quota of its own: a key under no prefix falls to methods_default / default
        assertThat(first.resolve("bucket-10", "elsewhere", PutObject).level()).isEqualTo(QuotaLevel.METHODS_DEFAULT);
        assertThat(second.resolve("bucket-10", "elsewhere", PutObject))
                .isEqualTo(new ResolvedQuota(q(7, 1), QuotaLevel.DEFAULT, "default:bucket-10", null, null));
        assertThat(second.resolve("bucket-10", "data/10/part-1/k", GetObject).quota()).isEqualTo(q(101, 5));
        // a bucket with its own quota never reaches the defaults: its entry is shared as is
        assertThat(QuotaConfig.sharesEntry(first, second, "bucket-11")).isTrue();
        assertThat(second).isEqualTo(build(site(30), q(7, 1)).toBuilder().methodsDefault(Map.of()).build());
    }

    @Test
    void anInvalidChangeRefusesTheWholeBuildNamingItAndLeavesThePreviousConfigIntact() {
        QuotaConfig first = build(site(50), q(1000, 100));
        ResourceQuotas bad = new ResourceQuotas(null, List.of(entry("a*b", q(1, 1))));

        assertThatThrownBy(() -> first.toBuilder().resource("bucket-9", bad).build())
                .isInstanceOf(QuotaConfigException.class)
                .hasMessageContaining("resources.bucket-9.prefixes[0]").hasMessageContaining("'*' is only allowed at the end");
        assertThat(first.resolve("bucket-9", "data/9/part-0/k", GetObject).quota()).isEqualTo(q(100, 5));
        assertThat(first).isEqualTo(build(site(50), q(1000, 100)));
    }
}
