package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** {@code levee --version} names the build: the Maven project version and, built from git, the commit. */
class VersionTest {

    @Test
    void versionPrintsTheProjectVersionAndTheCommitNotDev() {
        MainTest.Run r = MainTest.run("--version");
        assertThat(r.status()).isZero();
        String expected = java.util.Objects.requireNonNull(System.getProperty("levee.expected.version"), "levee.expected.version (set by the pom)");
        // "levee 0.1.0-SNAPSHOT (commit 1a2b3c4)" when built in a git work tree, without the commit otherwise
        assertThat(r.out().strip()).startsWith("levee " + expected).doesNotContain("dev").doesNotContain("${");
        if (new java.io.File("../.git").exists()) {
            assertThat(r.out().strip()).matches("levee \\S+ \\(commit [0-9a-f]{7,}(-dirty)?\\)");
        }
    }
}
