package dev.levee.core;

import java.util.List;

/**
 * The observer's answer to {@code GET /v1/limiters} (docs/design.md §7).
 *
 * @param revision  increases whenever the list or the factor changes
 * @param factor    the group factor DF, ≥ 1
 * @param limiters  active limiters sorted by id
 */
public record MembershipView(long revision, int factor, List<Member> limiters) {
    /** Copies the list. */
    public MembershipView {
        limiters = List.copyOf(limiters);
    }
}
