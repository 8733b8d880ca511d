package dev.levee.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.quota.QuotaConfig;
import org.junit.jupiter.api.Test;

/**
 * {@link QuotaConfig#resolutionDigest}: what a lease ask carries so that a limiter leases only to a client that
 * resolves the bucket with its own quotas (docs/design.md §12, "Same quotas on both sides"). The same quotas written
 * otherwise give the same digest; anything that changes how a bucket's requests resolve changes it.
 */
class ResolutionDigestTest {

    static final String BASE = """
            factor: 4
            default: {rate: 1000, burst: 100}
            methods_default:
              GetObject: {rate: 500, burst: 50}
              PutObject: {rate: 200, burst: 20}
            resources:
              hot:
                quota: {rate: 5000, burst: 500}
                prefixes:
                  - {prefix: "a/", quota: {rate: 50, burst: 5}}
                  - prefix: "b/"
                    methods:
                      GetObject: {rate: 10, burst: 1}
                      ListObjects: {rate: 20, burst: 2}
              cold:
                quota: {rate: 10, burst: 1}
            """;

    static String digest(String yaml, String resource) {
        return QuotaConfigLoader.parse(yaml, "test").resolutionDigest(resource);
    }

    @Test
    void theSameQuotasWrittenOtherwiseGiveTheSameDigest() {
        String other = """
                resources:
                  cold:
                    quota: {burst: 1, rate: 10.0}
                  hot:
                    prefixes:
                      - {quota: {burst: 5, rate: 50}, prefix: "a/"}
                      - prefix: "b/"
                        methods:
                          ListObjects: {rate: 20, burst: 2}
                          GetObject: {rate: 10, burst: 1}
                    quota: {burst: 500, rate: 5000}
                methods_default:
                  PutObject: {rate: 200, burst: 20}
                  GetObject: {rate: 500, burst: 50}
                default: {burst: 100, rate: 1000}
                factor: 4
                """;
        for (String r : new String[] {"hot", "cold", "unconfigured", ""}) {
            assertThat(digest(other, r)).as(r).isEqualTo(digest(BASE, r)).matches("[0-9a-f]{16}");
        }
    }

    @Test
    void whatChangesHowABucketResolvesChangesItsDigest() {
        String hot = digest(BASE, "hot");
        String[][] changes = {
                {"factor: 4", "factor: 2"},
                {"quota: {rate: 5000, burst: 500}", "quota: {rate: 5000, burst: 501}"},
                {"quota: {rate: 5000, burst: 500}", "quota: {rate: 5000, burst: 500, lease: false}"},
                {"quota: {rate: 5000, burst: 500}", "quota: {rate: 5000, burst: 500, mode: shadow}"},
                {"prefix: \"a/\"", "prefix: \"a*\""},
                {"GetObject: {rate: 10, burst: 1}", "HeadObject: {rate: 10, burst: 1}"},
                {"default: {rate: 1000, burst: 100}", "default: {rate: 1001, burst: 100}"},
                {"factor: 4", "factor: 4\nlease: false"},
                {"factor: 4", "factor: 4\nmode: shadow"}};
        for (String[] c : changes) {
            assertThat(BASE).contains(c[0]);
            assertThat(digest(BASE.replace(c[0], c[1]), "hot")).as(c[1]).isNotEqualTo(hot);
        }
        String swapped = BASE.replace("      - {prefix: \"a/\", quota: {rate: 50, burst: 5}}\n", "")
                .replace("          ListObjects: {rate: 20, burst: 2}\n",
                        "          ListObjects: {rate: 20, burst: 2}\n      - {prefix: \"a/\", quota: {rate: 50, burst: 5}}\n");
        assertThat(swapped).isNotEqualTo(BASE);
        assertThat(digest(swapped, "hot")).as("prefix order matters (the first of equal length wins)").isNotEqualTo(hot);
    }

    @Test
    void anotherBucketsQuotasDoNotChangeADigest() {
        String changed = BASE.replace("quota: {rate: 10, burst: 1}", "quota: {rate: 11, burst: 1}");
        assertThat(digest(changed, "hot")).isEqualTo(digest(BASE, "hot"));
        assertThat(digest(changed, "cold")).isNotEqualTo(digest(BASE, "cold"));
        assertThat(digest(BASE, "unconfigured")).as("an unconfigured bucket: default and methods_default")
                .isEqualTo(digest(BASE, "another-unconfigured"))
                .isNotEqualTo(digest(BASE.replace("PutObject: {rate: 200", "PutObject: {rate: 201"), "unconfigured"));
    }
}
