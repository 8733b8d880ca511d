package dev.levee.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * Entry point of the {@code levee} command: every role, the demo, benchmarks and config tools.
 *
 * <p>Errors reach the user as one line naming what was wrong, never as a stack trace
 * ({@code --stacktrace} shows it for debugging). Options may also come from an argument file:
 * {@code levee limiter @/etc/levee/limiter.args}.
 */
@Command(name = "levee", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "Traffic governor for S3-compatible object storage.",
        subcommands = {DemoCommand.class, LimiterCommand.class, ObserverCommand.class, ClientCommand.class,
                GatewayCommand.class, S3BackendCommand.class, ConfigCommand.class, QuotaCommand.class, BandwidthCommand.class, BenchCommand.class, NginxConfigCommand.class, TopCommand.class,
                CommandLine.HelpCommand.class})
public final class Main {

    private Main() {
    }

    /**
     * Runs the command line and exits with its status.
     *
     * @param args command-line arguments
     */
    public static void main(String[] args) {
        int status = run(args);
        dev.levee.runtime.Logging.shutdown(); // flushes what is queued, bounded (Log4j's own hook is off)
        System.exit(status);
    }

    /**
     * Runs the command line without exiting.
     *
     * @param args command-line arguments
     * @return the exit status: 0 success, 1 failure, 2 usage error
     */
    public static int run(String... args) {
        boolean trace = java.util.Arrays.asList(args).contains("--stacktrace");
        // gRPC (jetcd) logs through java.util.logging: keep its INFO chatter off the terminal
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
        java.util.logging.Logger.getLogger("io.grpc").setLevel(java.util.logging.Level.WARNING);
        String[] rest = java.util.Arrays.stream(args).filter(a -> !a.equals("--stacktrace")).toArray(String[]::new);
        CommandLine cl = commandLine(rest);
        cl.setCaseInsensitiveEnumValuesAllowed(true);
        // a value error: the error and one hint, not the whole usage (after which the error has scrolled away)
        cl.setParameterExceptionHandler((e, argv) -> usageError(e.getCommandLine(), e, trace));
        cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
            if (e instanceof UsageException) { // a value the command checks itself: reported as picocli's own
                return usageError(cmd, e, trace);
            }
            cmd.getErr().println(cmd.getCommandSpec().qualifiedName() + ": " + describe(e));
            if (trace) {
                e.printStackTrace(cmd.getErr());
            }
            return 1;
        });
        return cl.execute(rest);
    }

    /**
     * Reports a usage error of {@code cmd} — the error, picocli's suggestions for a mistyped option, a hint to
     * {@code --help}, not the whole usage (after which the error has scrolled away) — and returns its status, 2.
     */
    private static int usageError(CommandLine cmd, Exception e, boolean trace) {
        java.io.PrintWriter err = cmd.getErr();
        String name = cmd.getCommandSpec().qualifiedName();
        err.println(name + ": " + e.getMessage());
        if (e instanceof CommandLine.ParameterException p) {
            CommandLine.UnmatchedArgumentException.printSuggestions(p, err);
        }
        err.println("Try '" + name + " --help' for more information.");
        if (trace) {
            e.printStackTrace(err);
        }
        return cmd.getCommandSpec().exitCodeOnInvalidInput();
    }

    /**
     * The roles that run as services, built alone when the command line starts with one (issue 12, item 5: start-up):
     * picocli builds the model of every command it is given from their annotations, and with the whole tree a role
     * spent more time there (~0.25 s on a 2-core machine, the gateway's static logger set up among them) than in
     * starting itself.
     */
    private static final java.util.Map<String, java.util.function.Supplier<Object>> ROLES = java.util.Map.of(
            "limiter", LimiterCommand::new, "observer", ObserverCommand::new, "client", ClientCommand::new,
            "gateway", GatewayCommand::new);

    /**
     * The command line for {@code args}: for a role run as a service ({@code levee limiter ...}), the root with that
     * one sub-command — same name, version, options and messages; every other command line (help, the tools, a
     * typo) gets the whole tree.
     */
    static CommandLine commandLine(String... args) {
        var role = args.length > 0 ? ROLES.get(args[0]) : null;
        if (role == null) {
            return new CommandLine(new Main());
        }
        return new CommandLine(new Root()).addSubcommand(args[0], role.get());
    }

    /** The root command without its sub-commands (see {@link #commandLine}). */
    @Command(name = "levee", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
            description = "Traffic governor for S3-compatible object storage.")
    static final class Root {
    }

    /**
     * Why {@code file} could not be read, in words that name it: no such file, permission denied, a directory, not
     * UTF-8 text (Java says "Input length = 1", or repeats the path as its message).
     */
    static String unreadable(java.nio.file.Path file, Exception e) {
        if (e instanceof java.nio.charset.CharacterCodingException) {
            return file + " is not UTF-8 text (a binary file?)";
        }
        if (e instanceof java.nio.file.NoSuchFileException) {
            return "no such file: " + file;
        }
        if (e instanceof java.nio.file.AccessDeniedException) {
            return "permission denied: " + file;
        }
        if (e instanceof java.nio.file.FileSystemException f && f.getReason() != null) {
            return "cannot read " + file + ": " + f.getReason();
        }
        return "cannot read " + file + ": " + describe(e);
    }

    static String describe(Throwable e) {
        if (e instanceof dev.levee.quota.QuotaConfigException q) {
            return "invalid quotas:\n  " + String.join("\n  ", q.errors());
        }
        if (e instanceof java.nio.file.NoSuchFileException f) {
            return "no such file: " + f.getFile();
        }
        if (e instanceof java.nio.file.AccessDeniedException f) {
            return "permission denied: " + f.getFile();
        }
        if (e instanceof java.nio.file.FileSystemException f) {
            return "cannot read " + f.getFile() + (f.getReason() == null ? "" : ": " + f.getReason());
        }
        if (e instanceof java.nio.charset.CharacterCodingException) { // Java's words: "Input length = 1"
            return "the input is not UTF-8 text (a binary file?)";
        }
        if (e instanceof java.net.ConnectException) { // Netty's words: "finishConnect(..) failed with error(-111): …"
            return "connection refused: nothing listens there";
        }
        String m = e.getMessage();
        return m == null || m.isBlank() ? e.getClass().getSimpleName() : m;
    }

    /**
     * Reports the version of the build: the Maven project version and, when built in a git work tree, the
     * commit ({@code levee 0.1.0 (commit 1a2b3c4)}, {@code -dirty} when the tree had uncommitted changes):
     * {@code version.properties} filtered by Maven and {@code commit.properties} written by git at build time.
     */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() throws java.io.IOException {
            java.util.Properties p = new java.util.Properties();
            for (String name : new String[] {"version.properties", "commit.properties"}) {
                try (var in = Main.class.getResourceAsStream(name)) {
                    if (in != null) {
                        p.load(in);
                    }
                }
            }
            String version = filtered(p.getProperty("version"));
            String commit = filtered(p.getProperty("commit"));
            if (version == null) {
                version = "(unknown version: built without Maven's resource filtering)";
            }
            return new String[] {"levee " + version + (commit == null ? "" : " (commit " + commit + ")")};
        }

        /** The value, or null when missing, empty or left unfiltered ({@code ${...}}: no git, say). */
        private static String filtered(String value) {
            return value == null || value.isBlank() || value.startsWith("${") ? null : value.strip();
        }
    }
}
