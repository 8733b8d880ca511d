package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * ClientMatrixIT's comparison of a run with docs/clients.md ({@link MatrixDoc#compare}), on its own: a cell that needs
 * evidence a run may not have ("honours Retry-After": "-" when no refusal with a Retry-After of 3 s or more was sent
 * again) does not fail the comparison for its "-", and every other difference does.
 */
class MatrixDocCompareIT {

    static final List<String> HEADER = List.of("client", "path", "method", "refused, sent again after a back-off",
            "client's class of the errors it raised (measured)", "errors the app saw (measured)",
            "refusals / back-offs / after Retry-After ≥ 3 s / waited for it (measured)",
            "shortest wait after a refusal (measured)", "honours Retry-After");

    @Test
    void aDashWhereEvidenceIsNeededMatchesAndOtherDifferencesDoNot() {
        String doc = "aws-cli|gateway|GET|yes|~|~|~|~|no";
        assertThat(MatrixDoc.sameRow(HEADER, doc, "aws-cli|gateway|GET|yes|~|~|~|~|-")).isTrue();
        assertThat(MatrixDoc.sameRow(HEADER, "aws-cli|gateway|GET|yes|~|~|~|~|-", doc)).isTrue();
        assertThat(MatrixDoc.sameRow(HEADER, doc, doc)).isTrue();
        assertThat(MatrixDoc.sameRow(HEADER, doc, "aws-cli|gateway|GET|yes|~|~|~|~|yes")).as("no against yes").isFalse();
        assertThat(MatrixDoc.sameRow(HEADER, doc, "aws-cli|gateway|GET|**no**|~|~|~|~|no")).as("another column").isFalse();
        assertThat(MatrixDoc.sameRow(HEADER, doc, "aws-cli|gateway|GET|-|~|~|~|~|no")).as("'-' elsewhere").isFalse();
        assertThat(MatrixDoc.sameRow(HEADER, doc, "aws-cli|gateway|GET|yes|~|~|~|~")).as("a cell short").isFalse();
    }

    @Test
    void theWholeComparisonOfADocWithARun(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        String head = "| " + String.join(" | ", HEADER) + " |\n|" + "---|".repeat(HEADER.size()) + "\n";
        String docRow = "| aws-cli | gateway | GET | yes | throttle [3] | 5 of 6 | 15 / 10 / 6 / 0 | 140 ms | no |\n";
        java.nio.file.Path doc = dir.resolve("clients.md");
        java.nio.file.Files.writeString(doc, "# clients\n" + MatrixDoc.BEGIN + "\n" + head + docRow + MatrixDoc.END + "\n");
        String dash = head + "| aws-cli | gateway | GET | yes | throttle [7] | 4 of 6 | 15 / 10 / 0 / 0 | 95 ms | - |\n";
        assertThat(MatrixDoc.compare(doc, MatrixDoc.BEGIN + "\n" + dash + MatrixDoc.END)).isEmpty();
        String yes = head + "| aws-cli | gateway | GET | yes | throttle [7] | 4 of 6 | 15 / 10 / 6 / 6 | 95 ms | yes |\n";
        assertThat(MatrixDoc.compare(doc, MatrixDoc.BEGIN + "\n" + yes + MatrixDoc.END)).hasSize(2)
                .first().asString().contains("this run 'aws-cli|gateway|GET|yes|~|~|~|~|yes'");
    }
}
