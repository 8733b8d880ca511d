package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Objects;
import org.junit.jupiter.api.Test;

/** {@code levee --version} names the build: the Maven project version and, built in a git work tree, its commit. */
class VersionTest {

    @Test
    void versionPrintsTheProjectVersionAndTheCommitOfThisWorkTreeNotDev() throws Exception {
        String expected = Objects.requireNonNull(System.getProperty("levee.expected.version"),
                "levee.expected.version (set in levee-cli/pom.xml)");
        MainTest.Run r = MainTest.run("--version");
        assertThat(r.status()).isZero();
        assertThat(r.out().strip()).startsWith("levee " + expected + " ").doesNotContain("dev").doesNotContain("${");
        // this work tree's HEAD (a linked work tree of git worktree too), not another tree's of the same repository
        Process git = new ProcessBuilder("git", "rev-parse", "--short=7", "HEAD").redirectErrorStream(true).start();
        String head = new String(git.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).strip();
        if (git.waitFor() == 0) {
            assertThat(r.out().strip()).matches("levee \\S+ \\(commit " + head + "(-dirty)?\\)");
        }
    }
}
