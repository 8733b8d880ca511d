package dev.levee.client;

import dev.levee.client.LeveeClient.Member;
import dev.levee.core.SpillOrder;
import dev.levee.s3.S3Classification;
import dev.levee.wire.BinaryChecks;
import io.vertx.core.Completable;

/**
 * One check on its way (docs/design.md §5): what is checked, the limiters it may ask and in which order, when it started
 * (ticker ns), who waits for its decision, and where it is now. A check waits for, or is in, at most one
 * limiter's request, batch or wire frame at a time, so the attempt in progress ({@link #i}: it asks
 * {@code member(i)}) and when it was queued for it live here too: one object per check, not one per attempt.
 * The order is kept as an array only when a limiter was in back-off as the check started ({@link #order}); else
 * it is the plain one ({@link SpillOrder#plainRank}).
 */
final class Plan {
    final S3Classification c;
    /** The group and those beyond it in HRW rank order, and the group size. */
    final Rankings.Ranking ranking;
    /** HRW ranks in asking order ({@link SpillOrder#order}), or null: the plain order ({@link SpillOrder#plainRank}). */
    final int[] order;
    /** The round-robin position the plain order starts from ({@link SpillOrder#position}). */
    final int position;
    final long startedAt;
    final Completable<ClientDecision> decision;
    /** The event loop the check was made on: where its wire sends go. */
    final io.netty.channel.EventLoop loop;
    /** The attempt in progress: the limiter asked is {@code member(i)}. */
    int i;
    /** When the check was queued for attempt {@link #i} (ticker ns). */
    long queuedAt;

    Plan(S3Classification c, Rankings.Ranking ranking, int[] order, int position, long startedAt,
         Completable<ClientDecision> decision, io.netty.channel.EventLoop loop) {
        this.c = c;
        this.ranking = ranking;
        this.order = order;
        this.position = position;
        this.startedAt = startedAt;
        this.decision = decision;
        this.loop = loop;
    }

    /** The group size sent with every attempt. */
    int g() {
        return ranking.g();
    }

    /** How many limiters the check may ask. */
    int size() {
        return ranking.ranked().size();
    }

    /** The HRW rank of the limiter of attempt {@code k}. */
    int rank(int k) {
        return order != null ? order[k] : SpillOrder.plainRank(size(), g(), position, k);
    }

    /** The limiter of attempt {@code k}. */
    Member member(int k) {
        return ranking.ranked().get(rank(k));
    }

    /** Whether attempt {@code k} goes beyond the group (a spill-over). */
    boolean beyond(int k) {
        return rank(k) >= g();
    }

    /** The JSON form, for a limiter that takes JSON only (made when needed: not kept, as few checks need it). */
    byte[] json() {
        return CheckBodies.json(this);
    }

    /** Bytes of this check in the body of a binary request or wire frame. */
    int binarySize() {
        return BinaryChecks.checkSize(c.resource(), c.key(), c.operation().name());
    }
}
