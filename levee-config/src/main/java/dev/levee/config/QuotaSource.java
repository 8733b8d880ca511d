package dev.levee.config;

import dev.levee.quota.QuotaConfig;
import java.util.function.Consumer;

/**
 * Supplies the quota configuration in force and swaps it atomically when a valid update arrives
 * (SPEC.md §4: changes apply without restarts, in order; a limiter never mixes two versions within
 * one decision; a bad update never replaces a good one).
 *
 * <p>Implementations: {@link StaticQuotaSource} (embedded default or a fixed config),
 * {@link FileQuotaSource} (single-file form, reloaded on change) and {@code EtcdQuotaSource}
 * (levee-etcd). Callers read {@link #current()} once per decision.
 */
public interface QuotaSource extends AutoCloseable {

    /** Returns the configuration in force; never null. */
    QuotaConfig current();

    /** Returns the version of {@link #current()}: an etcd revision, a reload count, or 0. */
    long revision();

    /** Returns whether the source is in contact with its origin (etcd reachable, file readable). */
    boolean ready();

    /** Returns how many updates were refused as invalid since start. */
    long rejectedUpdates();

    /** Registers a callback run after each accepted swap, with the new configuration. */
    void onChange(Consumer<QuotaConfig> listener);

    @Override
    void close();
}
