package dev.levee.client;

import dev.levee.client.LeveeClient.Member;
import dev.levee.client.LeveeClient.View;
import dev.levee.core.Rendezvous;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * HRW rankings and round-robin positions per resource, kept while the view they were made from is in force
 * (bounded: Caffeine, 100 000 entries): a check neither hashes the resource with every member again nor makes
 * a key string (docs/design.md §5).
 */
final class Rankings {

    private final com.github.benmanes.caffeine.cache.Cache<String, Ranking> rankings =
            com.github.benmanes.caffeine.cache.Caffeine.newBuilder().maximumSize(100_000).build();

    /** Returns the first {@code n} limiters for {@code resource} in HRW rank order in view {@code v}, with its positions. */
    Ranking of(View v, String resource, int n) {
        Ranking r = rankings.getIfPresent(resource);
        if (r == null || r.view() != v || r.n() != n) {
            // a new view keeps the positions: the streams stay spread across a list change
            r = new Ranking(v, n, Rendezvous.top(v.limiters(), Member::id, resource, n),
                    r == null ? new ConcurrentHashMap<>() : r.positions());
            rankings.put(resource, r);
        }
        return r;
    }

    /**
     * A resource's limiters in HRW rank order for one view of the list (the first {@code n}), and its round-robin
     * {@link Positions} per operation, so that each object key's requests are spread evenly over the group's members.
     */
    record Ranking(View view, int n, List<Member> ranked,
                   ConcurrentHashMap<dev.levee.s3.S3Operation, Positions> positions) {

        /** The group size {@code g}: a ranking holds the group and up to as many beyond it ({@code n = 2g}). */
        int g() {
            return n / 2;
        }

        /** Returns the next round-robin position of {@code key}'s requests of {@code op} on this resource. */
        long next(dev.levee.s3.S3Operation op, String key) {
            Positions p = positions.get(op);
            if (p == null) {
                p = positions.computeIfAbsent(op, o -> new Positions());
            }
            return p.next(key);
        }
    }

    /**
     * The round-robin positions of one (resource, operation): one of its own for each of the last few keys asked
     * (up to {@link #SLOTS}, by the key's hash), so that a key's consecutive checks go to the group's members in turn;
     * a key seen for the first time starts at the next position of the resource's shared sequence, so keys asked once
     * each are spread in turn too. One shared position per (resource, operation) was not enough (issue 26 item 1): a
     * counter of its own per object key ({@code prefix: "uploads/*"}) whose requests alternate with other keys' on
     * the same bucket and operation took every 6th position, met only 2 of its 4 limiters and admitted 65 % of its rate
     * ({@code levee demo --quotas examples/quotas.yaml}); so did a shared prefix counter whose two keys were each
     * asked every other time. A key pushed out of its slot by others starts again from the shared sequence. About
     * 130 bytes per (resource, operation); keys are kept as their 32-bit hash (two keys with one hash share a
     * position).
     */
    static final class Positions {
        /** Keys with a position of their own: the hot keys of one (resource, operation). */
        static final int SLOTS = 8;
        /** Slots looked at from a key's home slot before the home slot is taken over. */
        static final int PROBES = 4;

        private final int[] hashes = new int[SLOTS];
        private final long[] next = new long[SLOTS];
        private final boolean[] used = new boolean[SLOTS];
        private long shared;

        /** Returns the position of this check of {@code key}: the key's next, or the shared sequence's for a new key. */
        synchronized long next(String key) {
            int h = key.hashCode();
            int home = (h * 0x9E3779B9) >>> (Integer.SIZE - Integer.numberOfTrailingZeros(SLOTS));
            int free = -1;
            for (int i = 0; i < PROBES; i++) {
                int slot = (home + i) & (SLOTS - 1);
                if (!used[slot]) {
                    free = free < 0 ? slot : free;
                } else if (hashes[slot] == h) {
                    return next[slot]++;
                }
            }
            int slot = free >= 0 ? free : home;
            long start = shared++;
            used[slot] = true;
            hashes[slot] = h;
            next[slot] = start + 1;
            return start;
        }
    }
}
