package dev.levee.governor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Derived values and validation of {@link GovernorConfig} and {@link AdmissionConfig} (docs/design.md §8). */
class GovernorConfigTest {

    @ParameterizedTest(name = "rate {0} B/s → burst {1} B")
    @CsvSource({
            "0, 0",
            "10, 1",
            "19, 1",          // rounded down
            "3000, 300",
            "102400, 10240",
            "1048576, 104857", // 1 MiB/s: 104 857.6 rounded down
            "10485760, 1048576",
            "10485769, 1048576",
            "10000000000, 1048576", // capped at 1 MiB
    })
    void burstIsATenthOfTheRateRoundedDownAndAtMostOneMiB(long rate, long burst) {
        assertThat(GovernorConfig.burstBytes(rate)).isEqualTo(burst);
    }

    @ParameterizedTest(name = "shared {0}, principal {1} → quantum {2}")
    @CsvSource({
            "0, 0, 65536",              // nothing enabled: 64 KiB
            "1048576, 0, 65536",
            "0, 102400, 10240",         // principal burst below 64 KiB
            "3000, 0, 300",
            "3000, 1048576, 300",       // the smaller enabled burst wins
            "1048576, 3000, 300",
            "10000000000, 10000000000, 65536",
    })
    void quantumIsTheSmallestOf64KiBAndEveryEnabledBurst(long shared, long principal, long quantum) {
        GovernorConfig c = GovernorConfig.of(Direction.UPLOAD, shared, principal);
        assertThat(c.quantumBytes("anyone")).isEqualTo(quantum);
    }

    @Test
    void principalOverrideReplacesTheDefaultRate() {
        GovernorConfig c = GovernorConfig.builder(Direction.DOWNLOAD).rate(10_000_000).principalRate(1_000_000)
                .principalRate("svc-big", 0).principalRate("svc-small", 20_000).build();
        assertThat(c.principalRate("svc-other")).isEqualTo(1_000_000);
        assertThat(c.principalRate("svc-big")).isZero();
        assertThat(c.quantumBytes("svc-big")).isEqualTo(65_536);
        assertThat(c.quantumBytes("svc-small")).isEqualTo(2_000);
        assertThat(c.toBuilder().build()).isEqualTo(c);
        assertThat(c.maxWaitingQuanta()).isEqualTo(256);
        assertThat(c.maxPrincipals()).isEqualTo(1000);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "negative rate           | -2 | 0 | 256 | 1000",
            "rate below 10 B/s       | 9  | 0 | 256 | 1000",
            "rate above 2^40         | 1099511627777 | 0 | 256 | 1000",
            "negative principal rate | 0 | -5 | 256 | 1000",
            "no waiting quanta       | 0 | 0 | 0 | 1000",
            "no principals           | 0 | 0 | 256 | 0",
    })
    void invalidConfigurationsAreRejectedWithTheFieldName(String what, long rate, long principalRate,
                                                            int maxWaiting, int maxPrincipals) {
        assertThatThrownBy(() -> new GovernorConfig(Direction.UPLOAD, rate, principalRate, Map.of(), maxWaiting,
                maxPrincipals)).isInstanceOf(IllegalArgumentException.class).hasMessageMatching(
                "(rateBytesPerSecond|principalRateBytesPerSecond|maxWaitingQuanta|maxPrincipals) .*");
    }

    @Test
    void overridesAreValidatedAndCopied() {
        Map<String, Long> rates = new HashMap<>();
        rates.put(" ", 1000L);
        assertThatThrownBy(() -> new GovernorConfig(Direction.UPLOAD, 0, 0, rates, 1, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("blank");
        rates.clear();
        rates.put("a", 5L);
        assertThatThrownBy(() -> new GovernorConfig(Direction.UPLOAD, 0, 0, rates, 1, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("principalRates[a]");
        rates.put("a", 1000L);
        rates.put("b", 1000L);
        assertThatThrownBy(() -> new GovernorConfig(Direction.UPLOAD, 0, 0, rates, 1, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxPrincipals");
        rates.remove("b");
        GovernorConfig c = new GovernorConfig(Direction.UPLOAD, 0, 0, rates, 1, 1);
        rates.put("a", 7777L);
        assertThat(c.principalRate("a")).isEqualTo(1000);
        assertThatThrownBy(() -> c.principalRates().put("x", 1L)).isInstanceOf(UnsupportedOperationException.class);
    }

    @ParameterizedTest(name = "maxDownloads {0} → {1} downloads per principal")
    @CsvSource({"1, 1", "3, 3", "4, 4", "5, 4", "1000, 4"})
    void admissionDefaultsAreOneUploadAndMinOfFourAndMaxDownloads(int maxDownloads, int perPrincipal) {
        AdmissionConfig c = AdmissionConfig.defaults(maxDownloads);
        assertThat(c.limit(AdmissionClass.MUTATING_UPLOAD)).isEqualTo(1);
        assertThat(c.limit(AdmissionClass.DOWNLOAD)).isEqualTo(perPrincipal);
        assertThat(c.maxWaiters()).isEqualTo(1024);
        assertThat(c.waitTimeoutNanos()).isEqualTo(10_000_000_000L);
    }

    @Test
    void invalidAdmissionConfigurationsAreRejected() {
        assertThatThrownBy(() -> AdmissionConfig.defaults(0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new AdmissionConfig(0, 1, 1, 1)).hasMessageContaining("maxUploadsPerPrincipal");
        assertThatThrownBy(() -> new AdmissionConfig(1, 0, 1, 1)).hasMessageContaining("maxDownloadsPerPrincipal");
        assertThatThrownBy(() -> new AdmissionConfig(1, 1, -1, 1)).hasMessageContaining("maxWaiters");
        assertThatThrownBy(() -> new AdmissionConfig(1, 1, 1, 0)).hasMessageContaining("waitTimeoutNanos");
        assertThat(new AdmissionConfig(1, 1, 0, 1).maxWaiters()).isZero();
    }
}
