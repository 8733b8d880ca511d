package dev.levee.quota;

import static dev.levee.s3.S3Operation.DeleteObject;
import static dev.levee.s3.S3Operation.DeleteObjects;
import static dev.levee.s3.S3Operation.ListObjects;
import static dev.levee.s3.S3Operation.ListObjectsV2;
import static dev.levee.s3.S3Operation.PutObject;

import dev.levee.s3.S3Operation;
import java.util.List;
import java.util.Map;

/** Configurations shared by the resolution tests. */
final class QuotaFixtures {

    private QuotaFixtures() {
    }

    static Quota q(double rate, int burst) {
        return new Quota(rate, burst);
    }

    static PrefixRule entry(String prefix, Quota quota) {
        return new PrefixRule(prefix, quota, Map.of());
    }

    static PrefixRule entry(String prefix, Quota quota, Map<S3Operation, Quota> methods) {
        return new PrefixRule(prefix, quota, methods);
    }

    /**
     * Config "A": the seed example (docs/design.md §4, seed 004) plus one resource per resolution
     * rule under test.
     */
    static QuotaConfig configA() {
        return QuotaConfig.builder()
                .factor(4)
                .defaultQuota(q(1000, 500))
                .methodDefault(ListObjects, q(250, 250))
                .methodDefault(DeleteObjects, q(50, 5))
                .resource("example-bucket", new ResourceQuotas(q(2000, 250), List.of(
                        entry("photos/2024", q(1700, 300)),
                        entry("uploads/*", q(1700, 300)),
                        entry("", q(1700, 300), Map.of(PutObject, q(100, 25))))))
                .resource("tiered", new ResourceQuotas(null, List.of(
                        entry("a", q(10, 1)),
                        entry("ab", q(20, 2)),
                        entry("abc*", q(30, 3)),
                        entry("abc", q(40, 4)),
                        entry("b*", q(50, 5)),
                        entry("b", q(60, 6)),
                        entry("c", q(70, 7)),
                        entry("c*", q(80, 8)))))
                .resource("methods-only", new ResourceQuotas(q(300, 30), List.of(
                        entry("logs/", null, Map.of(PutObject, q(5, 1))),
                        entry("", null, Map.of(DeleteObject, q(1, 1))))))
                .resource("lists", new ResourceQuotas(null, List.of(
                        entry("", null, Map.of(ListObjects, q(10, 1))))))
                .resource("lists-v2", new ResourceQuotas(null, List.of(
                        entry("", null, Map.of(ListObjects, q(10, 1), ListObjectsV2, q(20, 2))))))
                .resource("wild-methods", new ResourceQuotas(null, List.of(
                        entry("tmp/*", q(5, 5), Map.of(PutObject, q(1, 1))))))
                .resource("star-all", new ResourceQuotas(null, List.of(entry("*", q(2, 2)))))
                .resource("empty-config", new ResourceQuotas(null, List.of()))
                .resource("unicode", new ResourceQuotas(null, List.of(
                        entry("фото/", q(11, 1)),
                        entry("😀/*", q(12, 2)))))
                .resource("logs.example.com", ResourceQuotas.of(q(7, 7)))
                .build();
    }

    /** Config "B": {@code ListObjectsV2} configured itself in {@code methods_default}. */
    static QuotaConfig configB() {
        return QuotaConfig.builder()
                .defaultQuota(q(1000, 500))
                .methodDefault(ListObjects, q(250, 250))
                .methodDefault(ListObjectsV2, q(260, 26))
                .build();
    }
}
