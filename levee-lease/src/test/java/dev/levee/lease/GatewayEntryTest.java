package dev.levee.lease;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.levee.governor.Direction;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/** A gateway's published entry (docs/design.md §10): JSON round trip, bad values refused. */
class GatewayEntryTest {

    @Test
    void exampleRoundTrips() {
        GatewayEntry e = new GatewayEntry("gw-1", "5f0c", Map.of(
                Resource.of(Direction.DOWNLOAD), new Claim(13_107_200, 26_214_400),
                Resource.of(Direction.DOWNLOAD, "svc-a"), new Claim(1_048_576, 0),
                Resource.of(Direction.UPLOAD), new Claim(0, 5)));
        String json = e.toJson();
        assertThat(json).contains("\"download/svc-a\":{\"share\":1048576,\"demand\":0}");
        assertThat(GatewayEntry.parse(json)).isEqualTo(e);
        assertThat(e.keySuffix()).isEqualTo("gw-1/5f0c");
        assertThat(e.claim(Resource.of(Direction.UPLOAD, "nobody"))).isEqualTo(new Claim(0, 0));
    }

    @Property(tries = 200)
    void roundTrips(@ForAll("entries") GatewayEntry e) {
        assertThat(GatewayEntry.parse(e.toJson())).isEqualTo(e);
    }

    @Provide
    Arbitrary<GatewayEntry> entries() {
        Arbitrary<Resource> resource = Combinators.combine(Arbitraries.of(Direction.class),
                Arbitraries.oneOf(Arbitraries.just((String) null),
                        Arbitraries.strings().withCharRange('a', 'z').ofMinLength(1).ofMaxLength(6)))
                .as(Resource::new);
        Arbitrary<Claim> claim = Combinators.combine(Arbitraries.longs().between(0, Long.MAX_VALUE),
                Arbitraries.longs().between(0, Long.MAX_VALUE)).as(Claim::new);
        Arbitrary<String> id = Arbitraries.strings().withCharRange('a', 'z').ofMinLength(1).ofMaxLength(8);
        return Combinators.combine(id, id, Arbitraries.maps(resource, claim).ofMaxSize(4)).as(GatewayEntry::new);
    }

    @Test
    void badJsonRefused() {
        assertThatThrownBy(() -> GatewayEntry.parse("{not json")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not JSON");
        assertThatThrownBy(() -> GatewayEntry.parse("[1]")).hasMessageContaining("expected {gateway, incarnation, claims}");
        assertThatThrownBy(() -> GatewayEntry.parse("{\"gateway\":\"g\",\"claims\":{}}"))
                .hasMessageContaining("expected {gateway, incarnation, claims}");
        assertThatThrownBy(() -> GatewayEntry.parse("{\"gateway\":\"g\",\"incarnation\":\"i\",\"claims\":[]}"))
                .hasMessageContaining("expected {gateway, incarnation, claims}");
        assertThatThrownBy(() -> GatewayEntry.parse(
                "{\"gateway\":\"g\",\"incarnation\":\"i\",\"claims\":{\"sideways\":{\"share\":1,\"demand\":1}}}"))
                .hasMessageContaining("claim 'sideways'").hasMessageContaining("unknown direction");
        assertThatThrownBy(() -> GatewayEntry.parse(
                "{\"gateway\":\"g\",\"incarnation\":\"i\",\"claims\":{\"download\":{\"share\":\"1\",\"demand\":1}}}"))
                .hasMessageContaining("claim 'download'").hasMessageContaining("integers");
        assertThatThrownBy(() -> GatewayEntry.parse(
                "{\"gateway\":\"g\",\"incarnation\":\"i\",\"claims\":{\"download\":{\"share\":1.5,\"demand\":1}}}"))
                .hasMessageContaining("integers");
        assertThatThrownBy(() -> GatewayEntry.parse(
                "{\"gateway\":\"g\",\"incarnation\":\"i\",\"claims\":{\"upload\":{\"share\":-1,\"demand\":1}}}"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("≥ 0");
        assertThatThrownBy(() -> GatewayEntry.parse(
                "{\"gateway\":\"g\",\"incarnation\":\"i\",\"claims\":{\"upload\":{\"share\":1e30,\"demand\":1}}}"))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
