package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The repository's {@code ./levee} as a new user meets it (issue 13, items 1 and 5). */
class LauncherIT {

    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

    @TempDir
    Path dir;

    record Run(int status, String out, String err) {
    }

    private Run run(String... cmd) throws Exception {
        Path out = dir.resolve("out.txt");
        Path err = dir.resolve("err.txt");
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectOutput(out.toFile()).redirectError(err.toFile())
                .start();
        if (!p.waitFor(3, TimeUnit.MINUTES)) {
            p.descendants().forEach(ProcessHandle::destroy);
            p.destroy();
            throw new AssertionError(String.join(" ", cmd) + " did not finish within 3 min");
        }
        return new Run(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
    }

    /** Debian 12 has no openjdk-21 in apt: the advice names what works there (Temurin, the package). */
    @Test
    void withNoJdkTheLauncherAdvisesTemurinOrThePackageNotAnAptPackageDebian12Lacks() throws Exception {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "hiding /usr/lib/jvm needs root (unshare)");
        Files.createDirectories(dir.resolve("empty"));
        Run r = run("unshare", "--mount", "bash", "-c", "mount --bind \"$1\" /usr/lib/jvm && exec env -u JAVA_HOME \"$2\" --version",
                "-", dir.resolve("empty").toString(), ROOT.resolve("levee").toString());
        assertThat(r.status()).as(r.err()).isEqualTo(1);
        assertThat(r.err()).contains("no JDK >= 21 found").contains("Debian 12: Temurin from Adoptium's apt repository")
                .contains("temurin-21-jdk").contains("scripts/package").contains("dpkg -i")
                .doesNotContain("Exception");
    }

    /**
     * The first build says what it is doing, a line per module, and a failed build stops the launcher
     * with Maven's errors (issue 13, item 4). A stand-in {@code mvnw} prints what Maven prints.
     */
    @Test
    void theBuildPrintsALinePerModuleAndMavensErrorsAndAFailureStopsTheLauncher() throws Exception {
        Path root = dir.resolve("repo");
        Files.createDirectories(root.resolve("scripts"));
        Files.copy(ROOT.resolve("levee"), root.resolve("levee"));
        for (String s : List.of("java-env.sh", "jvm-options.sh", "jvm-access.sh")) {
            Files.copy(ROOT.resolve("scripts").resolve(s), root.resolve("scripts").resolve(s));
        }
        Files.writeString(root.resolve("mvnw"), """
                #!/usr/bin/env bash
                echo "[INFO] Scanning for projects..."
                echo "[INFO] Building Levee core: GCRA, HRW, time (pure) 0.1.0-SNAPSHOT               [2/13]"
                echo "[INFO] --- compiler:3.14.0:compile (default-compile) @ levee-core ---"
                echo "[WARNING] a warning the user need not see"
                echo "[ERROR] COMPILATION ERROR : Ticker.java:[3,1] class, interface, enum, or record expected"
                exit 1
                """);
        root.resolve("levee").toFile().setExecutable(true);
        root.resolve("mvnw").toFile().setExecutable(true);
        Run r = run(root.resolve("levee").toString(), "--version");
        assertThat(r.status()).as(r.err()).isNotZero();
        assertThat(r.err()).contains("levee: building (first run or sources changed; takes a minute)...")
                .contains("levee: building Levee core: GCRA, HRW, time (pure) 0.1.0-SNAPSHOT [2/13]")
                .contains("[ERROR] COMPILATION ERROR : Ticker.java")
                .doesNotContain("Scanning for projects").doesNotContain("a warning the user need not see")
                .doesNotContain("--- compiler");
    }

    /** Guice (S3Proxy's jclouds) calls sun.misc.Unsafe: without the launcher's flags JDK 24+ warns on stderr. */
    @Test
    void theDemoRunsWithoutJvmWarnings() throws Exception {
        Run r = run(ROOT.resolve("levee").toString(), "demo", "--duration", "2s", "--warmup", "1s");
        assertThat(r.status()).as(r.err()).isZero();
        assertThat(r.out()).contains("Summary");
        assertThat(r.err().lines().filter(l -> l.contains("WARNING:")).toList()).as(r.err()).isEmpty();
    }
}
