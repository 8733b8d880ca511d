package dev.levee.it;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One Levee role as its own JVM, started with the command line a user types ({@code levee <role> …}
 * through {@code dev.levee.cli.Main} on the test class path), its standard output and error in a file.
 * Signals are sent as an operator or systemd would: SIGTERM, SIGKILL, SIGSTOP, SIGCONT.
 */
final class RoleProcess implements AutoCloseable {

    private final String name;
    private final Process process;
    private final Path output;

    private RoleProcess(String name, Process process, Path output) {
        this.name = name;
        this.process = process;
        this.output = output;
    }

    /**
     * Starts {@code levee args…} in a new JVM.
     *
     * @param dir  directory of the output file ({@code <name>.out})
     * @param name short name for messages and the output file
     * @param args the command line after {@code levee}
     * @return the started process (not yet ready)
     */
    static RoleProcess start(Path dir, String name, List<String> args) {
        return start(dir, name, args, java.util.Map.of());
    }

    /**
     * Starts {@code levee args…} in a new JVM with {@code env} added to this process's environment (a packaged
     * role's env file, e.g. {@code LEVEE_OBSERVERS}).
     */
    static RoleProcess start(Path dir, String name, List<String> args, java.util.Map<String, String> env) {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(java));
        cmd.addAll(launcherJvmOptions(args));
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), "dev.levee.cli.Main"));
        cmd.addAll(args);
        try {
            Files.createDirectories(dir);
            Path out = dir.resolve(name + ".out");
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.to(out.toFile()));
            pb.environment().putAll(env);
            Process p = pb.start();
            return new RoleProcess(name, p, out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The JVM options {@code ./levee} gives this role (scripts/jvm-options.sh, and scripts/jvm-access.sh's
     * native-access options, without which the JVM warns on standard error), so tests run roles as shipped.
     */
    static List<String> launcherJvmOptions(List<String> args) {
        Path script = Path.of("..", "scripts", "jvm-options.sh").toAbsolutePath().normalize();
        Path access = script.resolveSibling("jvm-access.sh");
        if (!Files.isRegularFile(script) || !Files.isRegularFile(access)) {
            return List.of("-Xmx256m");
        }
        List<String> cmd = new ArrayList<>(List.of("bash", "-c", ". \"$0\" && . \"$1\" && java_home=\"$2\" && shift 3"
                + " && o=\"$(levee_jvm_options \"$@\")\" && a=\"$(levee_jvm_access_options \"$java_home\")\" && echo \"$o $a\"",
                script.toString(), access.toString(), System.getProperty("java.home"), "--"));
        cmd.addAll(args);
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0 || out.isEmpty()) {
                throw new IllegalStateException("scripts/jvm-options.sh failed: " + out);
            }
            return List.of(out.split("\\s+"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        }
    }

    /** Returns a loopback port that was free a moment ago. */
    static int freePort() {
        return dev.levee.stack.LoopbackPorts.free();
    }

    /** Waits until the output contains {@code text}, failing early if the process exits. */
    RoleProcess awaitOutput(String text, Duration timeout) {
        await(name + " prints '" + text + "'").atMost(timeout).pollInterval(Duration.ofMillis(20)).until(() -> {
            if (!process.isAlive() && !output().contains(text)) {
                throw new IllegalStateException(name + " exited with " + process.exitValue() + ":\n" + output());
            }
            return output().contains(text);
        });
        return this;
    }

    /** Returns what the process printed so far. */
    String output() {
        try {
            return Files.readString(output, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    long pid() {
        return process.pid();
    }

    boolean alive() {
        return process.isAlive();
    }

    /** Sends a signal by name (TERM, KILL, STOP, CONT). */
    void signal(String sig) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid())).start();
            kill.waitFor(5, TimeUnit.SECONDS);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Waits for the process to exit.
     *
     * @return its exit status
     * @throws IllegalStateException when it is still running after {@code timeout}
     */
    int awaitExit(Duration timeout) {
        try {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException(name + " still running after " + timeout);
            }
            return process.exitValue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        }
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            signal("CONT");
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
