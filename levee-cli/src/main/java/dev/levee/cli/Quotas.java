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

    /**
     * Opens the quota source of a role as the limiter reads its quotas: etcd when {@code client} is given, else the
     * file (reloaded on change), else the embedded defaults. levee limiter and levee client (with leases on, its
     * default) read through this one method, so that they resolve under the same configuration.
     *
     * @param client an etcd client (owned by the caller), or null
     * @param etcd   the etcd options, for the prefix and value size
     * @param file   the quota file, or null
     * @return the source, owned by the caller
     */
    static dev.levee.config.QuotaSource source(io.etcd.jetcd.Client client, EtcdOptions etcd, Path file) {
        return client != null ? dev.levee.roles.RoleAssembler.etcdQuotaSource(client, etcd.prefix, etcd.maxValueBytes,
                dev.levee.runtime.SystemTicker.INSTANCE)
                : file != null ? dev.levee.config.FileQuotaSource.open(file, 1000)
                : new dev.levee.config.StaticQuotaSource(embedded());
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
