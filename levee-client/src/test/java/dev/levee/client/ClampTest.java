package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.s3.S3Classification;
import dev.levee.s3.S3Operation;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Regression: a key over 1024 bytes was refused by the limiter (400), the client took that as a
 * failed limiter and the gateway let the request through unlimited. Such keys are now cut to 1024
 * bytes and counted like any other.
 */
class ClampTest {

    @Test
    void keysOverTheLimitAreCutOnACharacterBoundary() {
        String key = "photos/2024/" + "ü".repeat(700); // 12 + 1400 bytes
        S3Classification c = LeveeClient.clamp(new S3Classification("example-bucket", key, S3Operation.GetObject));
        byte[] b = c.key().getBytes(StandardCharsets.UTF_8);
        assertThat(b.length).isLessThanOrEqualTo(1024).isGreaterThanOrEqualTo(1023);
        assertThat(key).startsWith(c.key());
        assertThat(c.resource()).isEqualTo("example-bucket");
    }

    @Test
    void shortValuesAreKeptAsTheyAre() {
        S3Classification c = new S3Classification("b", "k".repeat(1024), S3Operation.PutObject);
        assertThat(LeveeClient.clamp(c)).isSameAs(c);
    }
}
