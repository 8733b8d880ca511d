package dev.levee.client;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The {@code batch=<n>} query of {@code GET /v1/s3check} (docs/design.md §12, "Batches in NGINX"). */
class BatchQueryTest {

    @ParameterizedTest
    @CsvSource({"batch=0, 0", "batch=48, 48", "batch=1000000, 1000000", "batch=0000007, 7", "batch=1000001, -1",
            "batch=, -1", "batch=-1, -1", "batch=1x, -1", "batch=12345678, -1", "'batch=1&ratelimit=1', -1"})
    void aBatchQueryIsAWholeNumberOfRequestsWithinItsRange(String query, int used) {
        assertThat(ClientService.batchUsed(query)).isEqualTo(used);
    }
}
