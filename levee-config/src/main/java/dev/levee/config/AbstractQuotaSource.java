package dev.levee.config;

import dev.levee.quota.QuotaConfig;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * Holds what every {@link QuotaSource} keeps: the configuration in force, its revision, the count of
 * refused updates and the change listeners. Subclasses decide when to swap; readers see one
 * immutable snapshot at a time (the field is volatile and the snapshot immutable).
 */
public abstract class AbstractQuotaSource implements QuotaSource {

    private final CopyOnWriteArrayList<Consumer<QuotaConfig>> listeners = new CopyOnWriteArrayList<>();
    private volatile QuotaConfig config;
    private volatile long revision;
    private volatile long rejected;

    /**
     * Starts with {@code initial} in force at {@code initialRevision}.
     *
     * @throws NullPointerException when {@code initial} is null
     */
    protected AbstractQuotaSource(QuotaConfig initial, long initialRevision) {
        this.config = Objects.requireNonNull(initial, "config");
        this.revision = initialRevision;
    }

    /** Puts {@code next} in force at {@code newRevision}; call {@link #notifyListeners} afterwards, outside locks. */
    protected final void swap(QuotaConfig next, long newRevision) {
        config = Objects.requireNonNull(next, "config");
        revision = newRevision;
    }

    /** Moves the revision of the configuration in force without changing it (an update that changed nothing). */
    protected final void revision(long newRevision) {
        revision = newRevision;
    }

    /** Runs every listener with {@code next}. */
    protected final void notifyListeners(QuotaConfig next) {
        listeners.forEach(l -> l.accept(next));
    }

    /** Counts one refused update; called by the single thread that applies updates. */
    protected final void countRejected() {
        rejected++;
    }

    @Override
    public final QuotaConfig current() {
        return config;
    }

    @Override
    public final long revision() {
        return revision;
    }

    @Override
    public final long rejectedUpdates() {
        return rejected;
    }

    @Override
    public final void onChange(Consumer<QuotaConfig> listener) {
        listeners.add(listener);
    }

    /** Drops the listeners; subclasses stop their own work and call this. */
    @Override
    public void close() {
        listeners.clear();
    }
}
