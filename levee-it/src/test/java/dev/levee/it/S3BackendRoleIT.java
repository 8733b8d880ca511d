package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/** {@code levee s3-backend} as a user starts it (issue 13): an S3 endpoint the SDK uses, stopped by SIGTERM. */
class S3BackendRoleIT {

    static final Path DIR = Path.of("target", "it-logs", "s3-backend").toAbsolutePath();

    @Test
    void theDemosBackendRunsAloneServesTheSdkAndStopsOnSigterm() {
        int port = RoleProcess.freePort();
        try (RoleProcess p = RoleProcess.start(DIR, "s3-backend", List.of("s3-backend", "--listen", "127.0.0.1:" + port,
                "--access-key", "AKIATRY", "--secret-key", "try-secret"))) {
            p.awaitOutput("levee s3-backend listening on http://127.0.0.1:" + port, Duration.ofSeconds(60));
            try (S3Client c = DemandClient.s3Client(URI.create("http://127.0.0.1:" + port), "AKIATRY", "try-secret", 2)) {
                c.createBucket(b -> b.bucket("try"));
                c.putObject(b -> b.bucket("try").key("k"), RequestBody.fromString("hello"));
                assertThat(c.getObjectAsBytes(b -> b.bucket("try").key("k")).asUtf8String()).isEqualTo("hello");
            }
            try (S3Client wrong = DemandClient.s3Client(URI.create("http://127.0.0.1:" + port), "AKIATRY", "not-it", 2)) {
                assertThat(org.assertj.core.api.Assertions.catchThrowable(() -> wrong.listBuckets()))
                        .as("a wrong secret is refused").isNotNull();
            }
            p.signal("TERM");
            int status = p.awaitExit(Duration.ofSeconds(20));
            assertThat(status).as(p.output()).isIn(0, 143);
        }
    }

    @Test
    void aTakenPortIsReportedInOneLine() throws Exception {
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
             RoleProcess p = RoleProcess.start(DIR, "s3-backend-taken", List.of("s3-backend", "--listen",
                     "127.0.0.1:" + taken.getLocalPort()))) {
            int status = p.awaitExit(Duration.ofSeconds(60));
            assertThat(status).isNotZero();
            assertThat(p.output()).contains("S3 backend did not start on 127.0.0.1:" + taken.getLocalPort())
                    .doesNotContain("\tat ");
        }
    }
}
