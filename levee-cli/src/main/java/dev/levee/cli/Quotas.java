package dev.levee.cli;

import dev.levee.config.QuotaConfigLoader;
import dev.levee.quota.QuotaConfig;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/** Loads the quota configuration: a file given with {@code --quotas}, or the embedded default. */
final class Quotas {

    /** Classpath location of the embedded default quotas. */
    static final String EMBEDDED = "/dev/levee/cli/default-quotas.yaml";

    private Quotas() {
    }

    static QuotaConfig load(Path file) {
        return file == null ? embedded() : QuotaConfigLoader.load(file);
    }

    static String embeddedText() {
        try (InputStream in = Quotas.class.getResourceAsStream(EMBEDDED)) {
            if (in == null) {
                throw new IllegalStateException("embedded default quotas missing from the jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read embedded default quotas", e);
        }
    }

    static QuotaConfig embedded() {
        return QuotaConfigLoader.parse(embeddedText(), "embedded default quotas");
    }
}
