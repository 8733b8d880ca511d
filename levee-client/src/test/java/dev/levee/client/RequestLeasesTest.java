package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.levee.s3.S3Operation;
import dev.levee.quota.PrefixRule;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaMode;
import dev.levee.quota.ResolvedQuota;
import dev.levee.quota.ResourceQuotas;
import dev.levee.runtime.Metrics;
import dev.levee.s3.S3Classification;
import dev.levee.s3.S3Classifier;
import dev.levee.s3.S3Request;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The client side of request leases (issue 23 item 2): the client resolves a check's counter as the limiter does, tells
 * keys the quota file keeps off leases ({@code lease: false}) from the rest, and hot keys from cold ones.
 */
class RequestLeasesTest {

    static final long MS = 1_000_000L;

    static final QuotaConfig CFG = QuotaConfig.builder().factor(4).defaultQuota(new Quota(1000, 100))
            .methodDefault(S3Operation.PutObject, new Quota(50, 5, null, false))
            .resource("hot", new ResourceQuotas(new Quota(5000, 500), List.of(
                    PrefixRule.of("uploads/*", new Quota(100, 10)),
                    PrefixRule.of("logs/", new Quota(10, 1, null, false)),
                    PrefixRule.of("trial/", new Quota(1, 1, QuotaMode.SHADOW, null)))))
            .resource("shadowed", new ResourceQuotas(new Quota(1, 1, QuotaMode.SHADOW, null), List.of()))
            .build();

    final AtomicReference<QuotaConfig> current = new AtomicReference<>(CFG);
    final MeterRegistry registry = Metrics.newRegistry();
    final RequestLeases leases = new RequestLeases(new RequestLeases.Settings(100, Duration.ofSeconds(1)), current::get,
            registry);

    static S3Classification classify(String method, String uri) {
        return LeveeClient.clamp(S3Classifier.pathStyleOnly().classify(S3Request.fromRequestUri(method, null, uri, null)));
    }

    double count(String key) {
        return registry.get("levee_client_lease_checks_total").tag("key", key).counter().count();
    }

    @Test
    void theClientResolvesTheCounterTheLimiterDecidesOn() {
        for (String[] req : new String[][] {{"GET", "/hot/a.bin"}, {"GET", "/hot/uploads/x"}, {"GET", "/hot/uploads/y"},
                {"GET", "/hot/logs/1"}, {"GET", "/hot/trial/1"}, {"PUT", "/other/k"}, {"GET", "/other?list-type=2"},
                {"GET", "/shadowed/k"}}) {
            S3Classification c = classify(req[0], req[1]);
            ResolvedQuota limiter = CFG.resolveEnforced(c.resource(), c.key(), c.operation()); // what Decider runs
            assertThat(leases.resolve(c).quota()).as("%s %s", req[0], req[1]).isEqualTo(limiter);
        }
        assertThat(leases.resolve(classify("GET", "/hot/uploads/x")).quota().limitKey())
                .isNotEqualTo(leases.resolve(classify("GET", "/hot/uploads/y")).quota().limitKey());
        assertThat(leases.resolve(classify("GET", "/hot/trial/1")).quota().limitKey())
                .as("a shadow quota never changes the enforced counter")
                .isEqualTo(leases.resolve(classify("GET", "/hot/a.bin")).quota().limitKey());
    }

    @Test
    void eligibilityFollowsTheQuotaFile() {
        assertThat(leases.resolve(classify("GET", "/hot/a.bin")).eligible()).isTrue();
        assertThat(leases.resolve(classify("GET", "/hot/logs/1")).eligible()).as("lease: false on the prefix").isFalse();
        assertThat(leases.resolve(classify("PUT", "/other/k")).eligible()).as("lease: false on methods_default").isFalse();
        assertThat(leases.resolve(classify("GET", "/shadowed/k")).quota().limitKey())
                .as("a shadow bucket quota: the default enforces").isEqualTo("default:shadowed");
        current.set(CFG.toBuilder().defaultMode(QuotaMode.SHADOW).build());
        assertThat(leases.resolve(classify("GET", "/shadowed/k")).quota()).isNull();
        assertThat(leases.resolve(classify("GET", "/shadowed/k")).eligible())
                .as("nothing enforced: every request admitted, nothing to lease").isFalse();
        current.set(CFG.toBuilder().defaultLease(false).build());
        assertThat(leases.resolve(classify("GET", "/hot/a.bin")).eligible()).as("a new configuration, at once").isFalse();
    }

    @Test
    void aKeyAboveTheThresholdIsHotAndOnesKeptOffLeasesNeverAre() {
        long t = 0;
        RequestLeases.Heat last = null;
        RequestLeases.Heat logs = null;
        for (int i = 0; i < 1000; i++) { // 500/s on each for 2 s
            last = leases.observe(classify("GET", "/hot/a.bin"), t);
            logs = leases.observe(classify("GET", "/hot/logs/1"), t);
            t += 2 * MS;
        }
        assertThat(last).isEqualTo(RequestLeases.Heat.HOT);
        assertThat(logs).isEqualTo(RequestLeases.Heat.NOT_ELIGIBLE);
        assertThat(leases.observe(classify("GET", "/hot/uploads/once"), t)).isEqualTo(RequestLeases.Heat.COLD);
        assertThat(count("not_eligible")).isEqualTo(1000);
        assertThat(count("hot") + count("cold")).isEqualTo(1001);
        assertThat(count("hot")).isBetween(700.0, 1000.0);
        assertThat(registry.get("levee_client_lease_keys").gauge().value()).isEqualTo(2);
    }

    @Test
    void badSettingsAreRefusedNamingThem() {
        assertThatThrownBy(() -> new RequestLeases.Settings(-1, Duration.ofSeconds(1))).hasMessageContaining("lease threshold");
        assertThatThrownBy(() -> new RequestLeases.Settings(0, Duration.ofSeconds(1))).hasMessageContaining("lease threshold");
        assertThatThrownBy(() -> new RequestLeases.Settings(Double.POSITIVE_INFINITY, Duration.ofSeconds(1)))
                .hasMessageContaining("lease threshold");
        assertThatThrownBy(() -> new RequestLeases.Settings(1, Duration.ZERO)).hasMessageContaining("lease window");
        assertThatThrownBy(() -> new RequestLeases.Settings(1, Duration.ofSeconds(-1))).hasMessageContaining("lease window");
        assertThat(RequestLeases.Settings.DEFAULTS.threshold()).isEqualTo(100);
        assertThat(RequestLeases.Settings.DEFAULTS.window()).isEqualTo(Duration.ofSeconds(1));
    }
}
