package dev.levee.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Strict JSON: every malformed body is an IllegalArgumentException with a one-line message naming the problem. */
class JsonTest {

    record Item(String resource, Integer g) {
    }

    record Batch(List<Item> checks) {
    }

    static Stream<Arguments> malformed() {
        return Stream.of(
                Arguments.of("9".repeat(1001), "malformed JSON"),
                Arguments.of("{\"checks\":" + "9".repeat(1001) + "}", "malformed JSON"),
                Arguments.of("{\"" + "z".repeat(60_000) + "\":1}", "malformed JSON"),
                Arguments.of("{\"checks\":[{\"resource\":\"a\",\"g\":" + "9".repeat(5000) + "}]}", "malformed JSON"),
                Arguments.of("{\"checks\":[{\"resource\":\"a\",\"resource\":\"b\",\"g\":1}]}", "Duplicate field 'resource'"),
                Arguments.of("{\"checks\":[{\"resource\":\"a\",\"g\":1}", "malformed JSON"),
                Arguments.of("{\"checks\":[]} {}", "content after the JSON value"),
                Arguments.of("{\"checks\":[{\"resource\":1,\"g\":1}]}", "field 'checks[0].resource': expected a string"),
                Arguments.of("{\"checks\":[{\"resource\":true,\"g\":1}]}", "field 'checks[0].resource': expected a string"),
                Arguments.of("{\"checks\":[{\"resource\":1.5,\"g\":1}]}", "field 'checks[0].resource': expected a string"),
                Arguments.of("{\"checks\":[{\"resource\":\"a\",\"g\":2147483648}]}", "field 'checks[0].g': number out of range"),
                Arguments.of("{\"checks\":[{\"resource\":\"a\",\"g\":1,\"x\":1}]}", "unknown field 'checks[0].x'"),
                Arguments.of("{\"checks\":[{\"resource\":\"a\",\"g\":\"1\"}]}", "field 'checks[0].g': expected an integer"));
    }

    @ParameterizedTest
    @MethodSource("malformed")
    void malformedBodiesAreRefusedWithAOneLineMessage(String body, String expected) {
        assertThatThrownBy(() -> Json.parse(body.getBytes(StandardCharsets.UTF_8), Batch.class))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(expected)
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n").doesNotContain("dev.levee").hasSizeLessThan(300));
    }

    @org.junit.jupiter.api.Test
    void invalidUtf8IsRefusedToo() {
        byte[] body = {'{', '"', 'c', 'h', 'e', 'c', 'k', 's', '"', ':', '[', '{', '"', 'r', 'e', 's', 'o', 'u', 'r', 'c', 'e',
                '"', ':', '"', (byte) 0xC3, (byte) 0x28, '"', '}', ']', '}'};
        assertThatThrownBy(() -> Json.parse(body, Batch.class)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("malformed JSON");
    }
}
