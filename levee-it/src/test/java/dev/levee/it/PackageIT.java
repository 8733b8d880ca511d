package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The Debian package as an operator gets it (issue 13, item 1): {@code scripts/package} builds
 * {@code levee_<version>_amd64.deb} from the levee-cli jar this build made, and {@code scripts/package-check} installs
 * it with {@code dpkg -i}, runs {@code levee --version}, {@code levee limiter --help}, {@code levee demo} and every
 * role as its systemd unit starts it from the bundled runtime with every JDK hidden, verifies the units with
 * {@code systemd-analyze verify}, and purges the package. The package's size is printed (docs/packaging.md).
 * Without root the package is built and inspected, and the install is skipped with the reason.
 */
class PackageIT {

    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Path LOGS = Path.of("target", "package-it").toAbsolutePath();

    record Run(int status, String out) {
    }

    private static Run run(String name, long timeoutMinutes, String... cmd) throws IOException, InterruptedException {
        Files.createDirectories(LOGS);
        Path log = LOGS.resolve(name + ".log");
        Process p = new ProcessBuilder(cmd).directory(ROOT.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        if (!p.waitFor(timeoutMinutes, TimeUnit.MINUTES)) {
            p.descendants().forEach(ProcessHandle::destroy);
            p.destroy();
            p.waitFor(30, TimeUnit.SECONDS);
            throw new AssertionError(name + " did not finish within " + timeoutMinutes + " min; its output: " + log);
        }
        return new Run(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
    }

    @Test
    void packageBuildsInstallsAndRunsFromItsOwnRuntimeWithNoJdk() throws Exception {
        Run built = run("package", 10, ROOT.resolve("scripts/package").toString(), "--no-build");
        assertThat(built.status()).as("scripts/package --no-build:\n%s", built.out()).isZero();
        List<String> lines = built.out().strip().lines().toList();
        Path deb = Path.of(lines.getLast().split(" ")[0]);
        assertThat(deb.getFileName().toString()).matches("levee_[0-9][^_]*_amd64\\.deb");
        long size = Files.size(deb);
        System.out.println("PackageIT: " + deb.getFileName() + " " + size + " bytes (" + size / (1 << 20) + " MiB)");
        // the runtime is the trimmed one (about 80 MiB compressed today); a JDK copied whole or jars twice would exceed this
        assertThat(size).as("package size").isLessThan(150L << 20);

        Run contents = run("contents", 2, "dpkg-deb", "--contents", deb.toString());
        assertThat(contents.status()).isZero();
        assertThat(contents.out()).contains("./usr/bin/levee", "./usr/lib/levee/runtime/bin/java", "./usr/lib/levee/levee-cli.jar",
                "./lib/systemd/system/levee-limiter@.service", "./lib/systemd/system/levee-observer.service",
                "./lib/systemd/system/levee-client.service", "./lib/systemd/system/levee-gateway.service",
                "./etc/levee/limiter.args", "./usr/share/man/man1/levee.1.gz", "./usr/share/doc/levee/reference.txt")
                .doesNotContain("./usr/lib/levee/runtime/bin/javac", "./usr/lib/levee/runtime/include/");

        Run checked = run("package-check", 10, ROOT.resolve("scripts/package-check").toString(), deb.toString());
        checked.out().lines().filter(l -> l.startsWith("package-check: package ") || l.contains(" passed, "))
                .forEach(l -> System.out.println("PackageIT: " + l));
        Assumptions.assumeFalse(checked.status() == 77, () -> checked.out().strip());
        assertThat(checked.status()).as("scripts/package-check:\n%s", checked.out()).isZero();
        assertThat(checked.out()).contains("package-check: ok: levee demo --duration 5s", "package-check: ok: no java on the PATH")
                .doesNotContain("FAILED");
    }
}
