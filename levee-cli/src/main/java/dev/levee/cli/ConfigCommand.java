package dev.levee.cli;

import dev.levee.config.QuotaConfigLoader;
import dev.levee.quota.BurstAdvice;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaConfigException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code levee config validate FILE}: checks a quota file offline. */
@Command(name = "config", mixinStandardHelpOptions = true, description = "Quota file tools.",
        subcommands = ConfigCommand.Validate.class)
final class ConfigCommand {

    /**
     * Prints every error of a quota file and exits non-zero when there is any; a valid file's quotas whose burst
     * cannot hold their rate over DF limiters are printed as warnings (exit 0).
     */
    @Command(name = "validate", mixinStandardHelpOptions = true,
            description = "Validate a quota file (single-file form, docs/quotas.md): prints every error, exit 1 if any;"
                    + " warns of bursts that cannot hold their rate (exit 0).")
    static final class Validate implements Callable<Integer> {


        @Parameters(paramLabel = "FILE", description = "quota file")
        Path file;

        @Override
        public Integer call() {
            try {
                QuotaConfig cfg = QuotaConfigLoader.load(file);
                List<BurstAdvice.Finding> weak = BurstAdvice.check(cfg);
                System.out.println(file + ": OK (factor " + cfg.factor() + ", " + cfg.resources().size()
                        + " resources)" + (weak.isEmpty() ? "" : ", " + weak.size() + " warning(s)"));
                // valid (docs/design.md §4 allows any burst >= 0), but said: docs/decisions.md, "Bursts that hold the rate"
                for (BurstAdvice.Finding f : weak) {
                    System.out.println("  warning: " + f.message());
                }
                return 0;
            } catch (QuotaConfigException e) {
                System.err.println(file + ": " + e.errors().size() + " error(s)");
                for (String err : e.errors()) {
                    System.err.println("  " + err);
                }
                String bucket = bucketHint(e);
                if (bucket != null) {
                    System.err.println(bucket);
                }
                return 1;
            }
        }

        /** Top-level fields of one bucket's YAML ({@code levee quota set}) that a quota file has under a bucket. */
        static final java.util.Set<String> BUCKET_FIELDS = java.util.Set.of("quota", "prefixes", "methods");

        /**
         * Says so when the file is one bucket's quotas rather than a quota file (issue 26 item 9): the form
         * {@code levee quota set BUCKET FILE} takes, valid or not as such. Null when it is not.
         */
        String bucketHint(QuotaConfigException e) {
            List<String> fields = e.problems().stream().map(dev.levee.quota.ConfigProblem::path)
                    .filter(p -> p != null && BUCKET_FIELDS.contains(p)).distinct().sorted().toList();
            if (fields.isEmpty()) {
                return null;
            }
            String as;
            try {
                dev.levee.config.QuotaConfigLoader.parseResource("example-bucket",
                        java.nio.file.Files.readString(file, java.nio.charset.StandardCharsets.UTF_8), file.toString());
                as = "valid as one bucket's quotas";
            } catch (java.io.IOException | RuntimeException notEither) {
                as = "not valid as one bucket's quotas either";
            }
            return "  " + file + " looks like one bucket's quotas (" + String.join(", ", fields.stream()
                    .map(f -> f + ":").toList()) + "), " + as + ": 'levee quota set BUCKET " + file + "' takes that form;"
                    + " a quota file has it under resources: {BUCKET: ...} (examples/quotas.yaml)";
        }
    }
}
