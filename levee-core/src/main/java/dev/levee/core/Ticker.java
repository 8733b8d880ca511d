package dev.levee.core;

/**
 * Reads a monotonic clock in nanoseconds.
 *
 * <p>All of Levee's algorithms take time through this interface (or as a {@code long now}
 * argument) so that tests can drive whole timelines without sleeping. Only one production
 * class reads {@link System#nanoTime()} ({@code dev.levee.runtime.SystemTicker}). Values are
 * meaningful only as differences: compare with {@code a - b > 0}, never {@code a > b}, because
 * the origin is arbitrary and may be near {@link Long#MAX_VALUE} or negative.
 */
@FunctionalInterface
public interface Ticker {
    /** Returns the current reading of the monotonic clock, in nanoseconds (arbitrary origin). */
    long read();
}
