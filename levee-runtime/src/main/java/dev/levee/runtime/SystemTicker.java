package dev.levee.runtime;

import dev.levee.core.Ticker;

/** Reads {@link System#nanoTime()}: the only production class that reads the clock. */
public final class SystemTicker implements Ticker {

    /** The shared instance. */
    public static final SystemTicker INSTANCE = new SystemTicker();

    private SystemTicker() {
    }

    @Override
    public long read() {
        return System.nanoTime();
    }
}
