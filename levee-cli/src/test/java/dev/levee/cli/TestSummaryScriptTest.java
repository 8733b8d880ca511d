package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code scripts/test} ends with one total across every module's surefire and failsafe reports (issue 13 item 6). */
class TestSummaryScriptTest {

    static void report(Path dir, String module, String kind, String name, int tests, int failures, int errors, int skipped)
            throws Exception {
        Path d = dir.resolve(module).resolve("target").resolve(kind + "-reports");
        Files.createDirectories(d);
        Files.writeString(d.resolve("TEST-" + name + ".xml"), "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                + "<testsuite xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" name=\"" + name + "\" time=\"1.2\""
                + " tests=\"" + tests + "\" errors=\"" + errors + "\" skipped=\"" + skipped + "\" failures=\"" + failures
                + "\">\n  <testcase name=\"x\" classname=\"" + name + "\" time=\"0.1\"/>\n</testsuite>\n");
    }

    @Test
    void theTotalAddsUpSurefireAndFailsafeReportsOfEveryModule(@TempDir Path dir) throws Exception {
        report(dir, "levee-core", "surefire", "dev.levee.core.GcraTest", 17, 0, 0, 0);
        report(dir, "levee-cli", "surefire", "dev.levee.cli.MainTest", 60, 1, 0, 2);
        report(dir, "levee-it", "failsafe", "dev.levee.it.EtcdIT", 9, 0, 1, 1);
        Files.writeString(dir.resolve("levee-it/target/failsafe-reports/failsafe-summary.xml"),
                "<failsafe-summary><completed>9</completed></failsafe-summary>");
        Process p = new ProcessBuilder("bash", Path.of("..", "scripts", "test-summary").toString(), dir.toString())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out.strip()).isEqualTo("81 passed, 2 failed, 3 skipped (3 test classes)");
    }

    @Test
    void scriptsTestPrintsTheTotalAndKeepsMavensExitStatus() throws Exception {
        String script = Files.readString(Path.of("..", "scripts", "test"));
        assertThat(script).contains("scripts/test-summary").contains("exit \"$status\"").doesNotContain("exec ./mvnw");
    }
}
