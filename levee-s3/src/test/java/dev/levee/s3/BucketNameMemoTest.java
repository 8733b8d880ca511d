package dev.levee.s3;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** The classifier's memo of bucket names: the same string for the same bucket, and never another bucket's. */
class BucketNameMemoTest {

    @Test
    void aBucketSeenLatelyIsTheSameStringPathStyleAndVirtualHosted() {
        S3Classifier c = S3Classifier.withBaseDomains(List.of("s3.example.com"));
        S3Classification a = c.classify("GET", "h", "/photos/a", false);
        S3Classification b = c.classify(S3Request.fromRequestUri("GET", "h", "/photos/b", null));
        assertThat(b.resource()).isSameAs(a.resource()).isEqualTo("photos");
        S3Classification v1 = c.classify("GET", "logs.s3.example.com", "/k1", false);
        S3Classification v2 = c.classify("GET", "logs.s3.example.com:9000", "/k2", false);
        assertThat(v2.resource()).isSameAs(v1.resource()).isEqualTo("logs");
        // an upper-case host is lower-cased into a new string each time, as before
        assertThat(c.classify("GET", "LOGS.s3.example.com", "/k", false).resource()).isEqualTo("logs");
    }

    /**
     * The race: the memo's slots are read and written without a lock, so one thread may replace the name in a slot
     * between another thread's read of the slot and its use. A thread must still get its own bucket every time —
     * it compares the name it read with its text before using it. 4 threads classify requests of 2 000 buckets
     * (many more than the memo's 256 slots, so slots are fought over) and check every answer.
     */
    @Test
    void threadsRacingForTheSameSlotsEachGetTheirOwnBucket() throws Exception {
        S3Classifier c = S3Classifier.pathStyleOnly();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Callable<Integer>> work = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int seed = t;
                work.add(() -> {
                    int wrong = 0;
                    for (int i = 0; i < 50_000; i++) {
                        int b = (i * 7919 + seed * 104_729) % 2_000;
                        Latin1Chars uri = new Latin1Chars();
                        byte[] bytes = ("/bkt-" + b + "/k").getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
                        S3Classification r = c.classify("GET", null, uri.wrap(bytes, bytes.length), false);
                        if (!r.resource().equals("bkt-" + b)) {
                            wrong++;
                        }
                    }
                    return wrong;
                });
            }
            for (Future<Integer> f : pool.invokeAll(work)) {
                assertThat(f.get()).as("answers naming another bucket").isZero();
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
