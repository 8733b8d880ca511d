package dev.levee.stack;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.Socket;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/** The embedded S3 backend the demo and the integration tests share: a kill refuses connections, a restart keeps port and store. */
class EmbeddedS3Test {

    @Test
    void killRefusesConnectionsAndRestartKeepsThePortAndTheObjects() throws Exception {
        try (EmbeddedS3 s3 = EmbeddedS3.start(); S3Client c = EmbeddedS3.client(s3.endpoint())) {
            c.createBucket(b -> b.bucket("kept"));
            c.putObject(b -> b.bucket("kept").key("k"), RequestBody.fromString("v"));
            int port = s3.port();
            s3.kill();
            assertThat(s3.running()).isFalse();
            assertThatThrownBy(() -> new Socket("127.0.0.1", port).close()).isInstanceOf(java.net.ConnectException.class);
            s3.restart();
            assertThat(s3.running()).isTrue();
            assertThat(s3.port()).isEqualTo(port);
            try (S3Client fresh = EmbeddedS3.client(s3.endpoint())) { // c's pooled connection died with the kill
                assertThat(fresh.getObjectAsBytes(b -> b.bucket("kept").key("k")).asUtf8String()).isEqualTo("v");
            }
        }
    }

    @Test
    void startWithKeysAcceptsEveryKeyAndRefusesOthers() {
        Map<String, String> keys = new LinkedHashMap<>();
        keys.put("AKIAFIRST", "first-secret");
        keys.put("AKIASECOND", "second-secret");
        try (EmbeddedS3 s3 = EmbeddedS3.startWithKeys(keys);
             S3Client second = client(s3, "AKIASECOND", "second-secret");
             S3Client wrong = client(s3, "AKIASECOND", "not-the-secret")) {
            second.createBucket(b -> b.bucket("second"));
            assertThat(second.listBuckets().buckets()).extracting(b -> b.name()).contains("second");
            assertThatThrownBy(wrong::listBuckets).isInstanceOf(software.amazon.awssdk.services.s3.model.S3Exception.class);
        }
    }

    @Test
    void startWithNoKeyIsRefused() {
        assertThatThrownBy(() -> EmbeddedS3.startWithKeys(Map.of())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least one access key");
    }

    @SuppressWarnings("deprecation") // the SDK's Apache 4 client, as EmbeddedS3.client: no second Netty line
    private static S3Client client(EmbeddedS3 s3, String key, String secret) {
        return S3Client.builder().endpointOverride(s3.endpoint()).region(software.amazon.awssdk.regions.Region.US_EAST_1)
                .forcePathStyle(true)
                .credentialsProvider(software.amazon.awssdk.auth.credentials.StaticCredentialsProvider.create(
                        software.amazon.awssdk.auth.credentials.AwsBasicCredentials.create(key, secret)))
                .httpClientBuilder(software.amazon.awssdk.http.apache.ApacheHttpClient.builder())
                .overrideConfiguration(o -> o.retryStrategy(software.amazon.awssdk.awscore.retry.AwsRetryStrategy.doNotRetry()))
                .build();
    }
}
