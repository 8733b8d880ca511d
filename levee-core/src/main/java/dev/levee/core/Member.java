package dev.levee.core;

/**
 * One active limiter as the observer lists it (docs/design.md §7).
 *
 * @param id      the limiter's stable id (the HRW member id)
 * @param address {@code host:port} where clients send checks
 */
public record Member(String id, String address) {
}
