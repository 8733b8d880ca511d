package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.levee.runtime.HostPort;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link LeveeClient.Options} through its builder: the documented defaults, a copy, the constructor's checks. */
class OptionsBuilderTest {

    private static final HostPort A = new HostPort("127.0.0.1", 7001);
    private static final HostPort B = new HostPort("127.0.0.1", 7002);

    @Test
    void aBuilderGivenOnlyTheObserverHoldsTheDocumentedDefaults() {
        LeveeClient.Options o = LeveeClient.Options.builder(A).build();
        assertThat(o.observers()).containsExactly(A);
        assertThat(o.refresh()).isEqualTo(Duration.ofSeconds(1));
        assertThat(o.checkTimeout()).isEqualTo(Duration.ofMillis(250));
        assertThat(o.backoff()).isEqualTo(Duration.ofSeconds(2));
        assertThat(o.baseDomains()).isEmpty();
        assertThat(o.maxInFlight()).isEqualTo(LeveeClient.Options.DEFAULT_MAX_IN_FLIGHT).isEqualTo(4);
        assertThat(o.maxBatch()).isEqualTo(LeveeClient.Options.DEFAULT_MAX_BATCH).isEqualTo(256);
        assertThat(o.listGrace()).isEqualTo(Duration.ofSeconds(3));
        assertThat(o.checkDeadline()).isEqualTo(Duration.ofMillis(900));
        assertThat(o.warnInterval()).isEqualTo(Duration.ofSeconds(10));
        assertThat(o.wire()).isTrue();
    }

    @Test
    void everySettingIsTakenAndToBuilderCopiesThemAll() {
        LeveeClient.Options o = LeveeClient.Options.builder(List.of(A, B)).refresh(Duration.ofMillis(100))
                .checkTimeout(Duration.ofMillis(50)).backoff(Duration.ofSeconds(5)).baseDomains(List.of("s3.example"))
                .maxInFlight(2).maxBatch(16).listGrace(Duration.ZERO).checkDeadline(Duration.ofMillis(300))
                .warnInterval(Duration.ofSeconds(1)).wire(false).build();
        assertThat(o).isEqualTo(new LeveeClient.Options(List.of(A, B), Duration.ofMillis(100), Duration.ofMillis(50),
                Duration.ofSeconds(5), List.of("s3.example"), 2, 16, Duration.ZERO, Duration.ofMillis(300),
                Duration.ofSeconds(1), false));
        assertThat(o.toBuilder().build()).isEqualTo(o);
        assertThat(o.toBuilder().wire(true).build().wire()).isTrue();
    }

    @Test
    void buildValidatesAsTheConstructorDoes() {
        assertThatThrownBy(() -> LeveeClient.Options.builder(List.of()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessage("observers must be 1-16, got 0");
        assertThatThrownBy(() -> LeveeClient.Options.builder(List.of(A, A)).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("an observer is given twice");
        assertThatThrownBy(() -> LeveeClient.Options.builder(A).maxBatch(0).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessage("checks per batch must be 1-1024, got 0");
        assertThatThrownBy(() -> LeveeClient.Options.builder(A).refresh(Duration.ZERO).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessage("durations must be positive");
    }
}
