/**
 * Shapes bytes per second and limits requests in flight per principal, for the streaming
 * gateway (docs/design.md §8).
 *
 * <p>Two pure libraries live here:
 * <ul>
 *   <li>{@link dev.levee.governor.BandwidthGovernor}: one per direction (upload, download); every
 *       content chunk passes the direction's shared token bucket and the principal's token
 *       bucket; waiting requests are served fairly (deficit round robin over principals) and
 *       bounded (256 waiting quanta by default);</li>
 *   <li>{@link dev.levee.governor.AdmissionQueue}: per principal and {@link
 *       dev.levee.governor.AdmissionClass class}, a limit on requests in flight with a bounded,
 *       timed FIFO of waiters.</li>
 * </ul>
 *
 * <p>Neither reads a clock nor performs I/O: time comes from an injected {@link
 * dev.levee.core.Ticker} and every wake-up from an injected {@link
 * dev.levee.governor.GovernorTimer}, so tests drive whole timelines with a fake clock and no
 * sleeps. Both are thread-safe and can be used from blocking code (virtual threads) and from
 * asynchronous code ({@link java.util.concurrent.CompletionStage}). Refusals are subclasses of
 * {@link dev.levee.governor.RefusedException}; the gateway answers them with
 * {@code 503 SlowDown} and {@code Retry-After}.
 */
package dev.levee.governor;
