package dev.levee.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaConfigException;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** {@link QuotaLayout#fromValues(String, Map, QuotaLayout.ParseCache)}: same result as without a cache. */
class QuotaLayoutParseCacheTest {

    static Map<String, String> values(int buckets, double rate) {
        Map<String, String> v = new TreeMap<>();
        v.put("quotas/default", "{rate: 100, burst: 10}");
        for (int i = 0; i < buckets; i++) {
            v.put("resources/b" + i, "quota: {rate: " + rate + ", burst: 1}\nprefixes:\n  - prefix: \"p/\"\n    quota: {rate: 1, burst: 1}\n");
        }
        return v;
    }

    @Test
    void aChangedValueIsParsedAgainAndAnUnchangedOneReused() {
        QuotaLayout.ParseCache cache = new QuotaLayout.ParseCache();
        Map<String, String> v = values(50, 5);
        QuotaConfig first = QuotaLayout.fromValues("/levee/", v, cache);
        assertThat(first).isEqualTo(QuotaLayout.fromValues("/levee/", v));
        assertThat(cache.size()).isEqualTo(50);
        v.put("resources/b7", "quota: {rate: 9, burst: 2}");
        QuotaConfig second = QuotaLayout.fromValues("/levee/", v, cache);
        assertThat(second).isEqualTo(QuotaLayout.fromValues("/levee/", v));
        assertThat(second.resources().get("b7").quota().rate()).isEqualTo(9.0);
        assertThat(second.resources().get("b8")).isSameAs(first.resources().get("b8"));
    }

    @Test
    void aRebuildAfterOneChangedValueReusesTheOtherBucketsBuiltEntries() {
        QuotaLayout.ParseCache cache = new QuotaLayout.ParseCache();
        Map<String, String> v = values(50, 5);
        QuotaConfig first = QuotaLayout.fromValues("/levee/", v, cache);
        v.put("resources/b7", "quota: {rate: 9, burst: 2}");
        QuotaConfig second = QuotaLayout.fromValues("/levee/", v, cache);
        // a precomputed answer is the same instance only when the bucket's built entry was reused
        assertThat(second.resolve("b8", "p/x", dev.levee.s3.S3Operation.GetObject))
                .isSameAs(first.resolve("b8", "p/x", dev.levee.s3.S3Operation.GetObject));
        assertThat(second.resolve("b7", "p/x", dev.levee.s3.S3Operation.GetObject).quota().rate()).isEqualTo(9.0);
        assertThat(first.resolve("b7", "p/x", dev.levee.s3.S3Operation.GetObject).quota().rate()).isEqualTo(1.0);
        assertThat(second.resources().keySet()).containsExactlyElementsOf(QuotaLayout.fromValues("/levee/", v).resources().keySet());
    }

    @Test
    void aRemovedKeyLeavesTheCacheAndABadValueIsStillRefusedByKey() {
        QuotaLayout.ParseCache cache = new QuotaLayout.ParseCache();
        Map<String, String> v = values(10, 5);
        QuotaLayout.fromValues("/levee/", v, cache);
        v.remove("resources/b3");
        assertThat(QuotaLayout.fromValues("/levee/", v, cache).resources()).doesNotContainKey("b3");
        assertThat(cache.size()).isEqualTo(9);
        v.put("resources/b4", "quota: {rate: -1, burst: 1}");
        assertThatThrownBy(() -> QuotaLayout.fromValues("/levee/", v, cache)).isInstanceOf(QuotaConfigException.class)
                .hasMessageContaining("/levee/resources/b4");
        v.put("resources/b4", "quota: {rate: 5, burst: 1}\nprefixes:\n  - prefix: \"p/\"\n    quota: {rate: 1, burst: 1}\n");
        assertThat(QuotaLayout.fromValues("/levee/", v, cache)).isEqualTo(QuotaLayout.fromValues("/levee/", v));
    }
}
