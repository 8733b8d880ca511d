package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.s3.S3Operation;
import dev.levee.s3.S3Classification;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/** The RateLimit header fields of a quota (docs/decisions.md, "RateLimit header fields"). */
class RateLimitFieldsTest {

    @ParameterizedTest(name = "rate {0} -> q={1};w={2}")
    @CsvSource({
            "1700, 1700, 1",
            "4, 4, 1",
            "27.5, 55, 2",
            "0.5, 1, 2",
            "0.7, 7, 10",
            "1.1, 11, 10",
            "0.001, 1, 1000",
            "0, 0, 1",
            "0.00001, 0, 86400",
    })
    void theWindowIsTheLeastWholeSecondsOverWhichTheRateIsWholeRequests(double rate, long q, long w) {
        assertThat(RateLimitFields.quota(rate)).isEqualTo(q);
        assertThat(RateLimitFields.window(rate)).isEqualTo(w);
        assertThat(RateLimitFields.policy("prefix", rate)).isEqualTo("\"prefix\";q=" + q + ";w=" + w);
    }

    @Test
    void aRefusalShowsNothingLeftUntilRetryAfterAndAnAdmissionItsRemainingAndReset() {
        S3Classification c = new S3Classification("b", "k", S3Operation.GetObject);
        ClientDecision refused = new ClientDecision(ClientDecision.Result.REJECTED, 3, 0, "l", "resource", "resource:b", c,
                1, 4, 2, 5, false);
        assertThat(refused.rateLimitPolicy()).isEqualTo("\"resource\";q=4;w=1");
        assertThat(refused.rateLimit()).isEqualTo("\"resource\";r=0;t=3");
        ClientDecision ok = new ClientDecision(ClientDecision.Result.ACCEPTED, 0, 7, "l", "default", "default:b", c, 1,
                1000, 10, 1, false);
        assertThat(ok.rateLimit()).isEqualTo("\"default\";r=7;t=1");
        ClientDecision shadowOnly = new ClientDecision(ClientDecision.Result.ACCEPTED, 0, 0, "l", null, null, c, 1, 0, 0,
                0, true);
        assertThat(shadowOnly.rateLimitPolicy()).as("a shadow quota is never advertised").isNull();
        assertThat(new ClientDecision(ClientDecision.Result.FAILED, 0, 0, null, null, null, c, 1).rateLimit()).isNull();
    }
}
