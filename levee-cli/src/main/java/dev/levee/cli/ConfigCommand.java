package dev.levee.cli;

import dev.levee.config.QuotaConfigLoader;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaConfigException;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code levee config validate FILE}: checks a quota file offline. */
@Command(name = "config", mixinStandardHelpOptions = true, description = "Quota file tools.",
        subcommands = ConfigCommand.Validate.class)
final class ConfigCommand {

    /** Prints every error of a quota file and exits non-zero when there is any. */
    @Command(name = "validate", mixinStandardHelpOptions = true,
            description = "Validate a quota file (single-file form, docs/quotas.md): prints every error, exit 1 if any.")
    static final class Validate implements Callable<Integer> {


        @Parameters(paramLabel = "FILE", description = "quota file")
        Path file;

        @Override
        public Integer call() {
            try {
                QuotaConfig cfg = QuotaConfigLoader.load(file);
                System.out.println(file + ": OK (factor " + cfg.factor() + ", " + cfg.resources().size()
                        + " resources)");
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
