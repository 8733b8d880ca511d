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
                // valid (SPEC.md §4 allows any burst >= 0), but said: docs/decisions.md, "Bursts that hold the rate"
                for (BurstAdvice.Finding f : weak) {
                    System.out.println("  warning: " + f.message());
                }
                return 0;
            } catch (QuotaConfigException e) {
                System.err.println(file + ": " + e.errors().size() + " error(s)");
                for (String err : e.errors()) {
                    System.err.println("  " + err);
                }
                return 1;
            }
        }
    }
}
