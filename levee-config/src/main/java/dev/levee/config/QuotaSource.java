package dev.levee.config;

import dev.levee.quota.QuotaConfig;
import java.util.function.Consumer;

/**
 * Supplies the quota configuration in force and swaps it atomically when a valid update arrives
 * (docs/design.md §4: changes apply without restarts, in order; a limiter never mixes two versions within
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

    /**
     * Returns the keys of the origin whose value is refused in its current state, each with why (issue 22):
     * full key (for example {@code /levee/resources/x}) → its problems on one line. The configuration in
     * force then holds, for each such key, the last good value this process applied, or nothing (see
     * {@link #usable()}). Empty when every value is valid, and for sources validated whole (a file).
     */
    default java.util.SortedMap<String, String> invalidKeys() {
        return java.util.Collections.emptySortedMap();
    }

    /**
     * Returns false while no configuration could be built at all: a key every decision needs ({@code factor},
     * {@code mode}, {@code quotas/default}, {@code quotas/methods_default}) is invalid or missing and no earlier
     * value of it is known to this process. {@link #current()} is then a placeholder that refuses every
     * request, and a limiter does not join the membership (issue 22, docs/quotas.md "Invalid values in etcd").
     */
    default boolean usable() {
        return true;
    }

    /** Registers a callback run after each accepted swap, with the new configuration. */
    void onChange(Consumer<QuotaConfig> listener);

    @Override
    void close();
}
