package dev.levee.config;

import dev.levee.quota.QuotaConfig;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * A {@link QuotaSource} that holds one configuration, replaceable by {@link #set} (tests, the demo).
 */
public final class StaticQuotaSource implements QuotaSource {

    private volatile QuotaConfig config;
    private volatile long revision;
    private final CopyOnWriteArrayList<Consumer<QuotaConfig>> listeners = new CopyOnWriteArrayList<>();

    /**
     * Holds {@code config}.
     *
     * @throws NullPointerException when {@code config} is null
     */
    public StaticQuotaSource(QuotaConfig config) {
        this.config = Objects.requireNonNull(config, "config");
    }

    /** Replaces the configuration (atomically) and notifies listeners. */
    public void set(QuotaConfig next) {
        config = Objects.requireNonNull(next, "config");
        revision++;
        listeners.forEach(l -> l.accept(next));
    }

    @Override
    public QuotaConfig current() {
        return config;
    }

    @Override
    public long revision() {
        return revision;
    }

    @Override
    public boolean ready() {
        return true;
    }

    @Override
    public long rejectedUpdates() {
        return 0;
    }

    @Override
    public void onChange(Consumer<QuotaConfig> listener) {
        listeners.add(listener);
    }

    @Override
    public void close() {
        listeners.clear();
    }
}
