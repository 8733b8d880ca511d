package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.levee.runtime.HostPort;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The gateway's settings as the builder makes them: the documented defaults, a round trip, each refusal named. */
class GatewayOptionsTest {

    static final HostPort BACKEND = new HostPort("127.0.0.1", 9100);

    @Test
    void theBuilderStartsFromTheDocumentedDefaults() {
        GatewayOptions o = GatewayOptions.builder(BACKEND).build();
        assertThat(o.listen()).isEqualTo(new HostPort("127.0.0.1", 9000));
        assertThat(o.admin()).isEqualTo(new HostPort("127.0.0.1", 9001));
        assertThat(o.backend()).isEqualTo(BACKEND);
        assertThat(o.enforce()).isTrue();
        assertThat(o.onFailure()).isEqualTo(GatewayOptions.OnFailure.ALLOW);
        assertThat(o.backendTimeout()).isEqualTo(Duration.ofSeconds(60));
        assertThat(o.maxConnections()).isEqualTo(256);
        assertThat(o.governance()).isSameAs(GovernanceSettings.off());
        assertThat(o.healthToken()).isNull();
        assertThat(o.clientDeadlines()).isEqualTo(GatewayOptions.ClientDeadlines.DEFAULTS);
        assertThat(o.continueTimeout()).isEqualTo(GatewayOptions.DEFAULT_CONTINUE_TIMEOUT).isEqualTo(Duration.ofSeconds(1));
        assertThat(o.rateLimitOnAccept()).isFalse();
    }

    @Test
    void toBuilderKeepsEveryValue() {
        HostPort any = new HostPort("127.0.0.1", 0);
        GatewayOptions o = GatewayOptions.builder(BACKEND).listen(any).admin(any).enforce(false)
                .onFailure(GatewayOptions.OnFailure.DENY).backendTimeout(Duration.ofSeconds(7)).maxConnections(3)
                .governance(GovernanceSettings.builder().build()).healthToken("t0ken")
                .clientDeadlines(new GatewayOptions.ClientDeadlines(Duration.ofSeconds(1), Duration.ofSeconds(2), 3,
                        Duration.ofSeconds(4)))
                .continueTimeout(Duration.ofMillis(250)).rateLimitOnAccept(true).build();
        assertThat(o.toBuilder().build()).isEqualTo(o);
        assertThat(o.toBuilder().backend(new HostPort("10.0.0.1", 80)).build().backend())
                .isEqualTo(new HostPort("10.0.0.1", 80));
    }

    @Test
    void badValuesAreRefusedWithTheirName() {
        GatewayOptions.Builder b = GatewayOptions.builder(BACKEND);
        assertThatThrownBy(() -> b.backendTimeout(Duration.ZERO).build()).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("backend timeout must be positive");
        assertThatThrownBy(() -> GatewayOptions.builder(BACKEND).maxConnections(0).build())
                .hasMessage("max connections must be >= 1");
        assertThatThrownBy(() -> GatewayOptions.builder(BACKEND).continueTimeout(Duration.ofMillis(-1)).build())
                .hasMessage("the continue timeout must be positive");
        assertThatThrownBy(() -> GatewayOptions.builder(BACKEND).admin(new HostPort("127.0.0.1", 9000)).build())
                .hasMessage("the S3 listener and the admin listener cannot share 127.0.0.1:9000");
        assertThatThrownBy(() -> GatewayOptions.builder(BACKEND).healthToken(" ").build())
                .hasMessage("the health token is blank");
        assertThatThrownBy(() -> new GatewayOptions.ClientDeadlines(Duration.ofSeconds(1), Duration.ofSeconds(1), -1))
                .hasMessage("the minimum body rate must be >= 0");
    }
}
