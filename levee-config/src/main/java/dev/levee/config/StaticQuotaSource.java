package dev.levee.config;

import dev.levee.quota.QuotaConfig;

/**
 * A {@link QuotaSource} that holds one configuration, replaceable by {@link #set} (tests, the demo).
 */
public final class StaticQuotaSource extends AbstractQuotaSource {

    /**
     * Holds {@code config}.
     *
     * @throws NullPointerException when {@code config} is null
     */
    public StaticQuotaSource(QuotaConfig config) {
        super(config, 0);
    }

    /**
     * Replaces the configuration (atomically) and notifies listeners.
     *
     * @throws NullPointerException when {@code next} is null
     */
    public synchronized void set(QuotaConfig next) {
        swap(next, revision() + 1);
        notifyListeners(next);
    }

    @Override
    public boolean ready() {
        return true;
    }
}
