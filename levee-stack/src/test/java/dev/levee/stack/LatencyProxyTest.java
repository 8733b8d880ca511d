package dev.levee.stack;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/** The slow link of {@code levee demo --backend-latency}: every answer arrives the latency later, whole and in order. */
class LatencyProxyTest {

    @Test
    void concurrentRequestsEachArriveAboutTheLatencyLaterAndIntact() throws Exception {
        try (EmbeddedS3 s3 = EmbeddedS3.start();
             LatencyProxy slow = LatencyProxy.start("127.0.0.1", s3.port(), Duration.ofMillis(400));
             S3Client direct = EmbeddedS3.client(s3.endpoint());
             S3Client viaSlow = EmbeddedS3.client(java.net.URI.create("http://127.0.0.1:" + slow.port()))) {
            direct.createBucket(b -> b.bucket("slow"));
            byte[] big = new byte[3 << 20];
            new java.util.Random(1).nextBytes(big);
            direct.putObject(b -> b.bucket("slow").key("big"), RequestBody.fromBytes(big));
            assertThat(viaSlow.getObjectAsBytes(b -> b.bucket("slow").key("big")).asByteArray()).isEqualTo(big);
            try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
                List<Future<Long>> took = new ArrayList<>();
                for (int i = 0; i < 40; i++) {
                    took.add(pool.submit(() -> {
                        long t0 = System.nanoTime();
                        viaSlow.headObject(b -> b.bucket("slow").key("big"));
                        return (System.nanoTime() - t0) / 1_000_000;
                    }));
                }
                for (Future<Long> f : took) {
                    assertThat(f.get()).as("ms for one HEAD through the slow link").isBetween(390L, 5_000L);
                }
            }
        }
    }

    @Test
    void aLatencyBelowOneMillisecondIsRefused() {
        assertThatThrownBy(() -> LatencyProxy.start("127.0.0.1", 9, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 1 ms");
    }
}
