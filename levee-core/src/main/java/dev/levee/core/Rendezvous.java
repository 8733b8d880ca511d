package dev.levee.core;

import com.google.common.hash.HashFunction;
import com.google.common.hash.Hashing;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Function;

/**
 * Ranks group members for a resource with rendezvous (highest random weight, HRW) hashing
 * (docs/design.md §5; Thaler &amp; Ravishankar, "Using name-based mappings to increase hit rates", 1998).
 *
 * <p>The score of member {@code m} for resource {@code r} is the 64-bit FarmHash fingerprint
 * (Guava {@link Hashing#farmHashFingerprint64()}, stable across releases and processes) of the
 * UTF-8 bytes of {@code m.id}, a 0x00 separator and {@code r}, compared as unsigned. Members are
 * ranked highest score first; ties (practically impossible) fall back to the id. Every client that
 * sees the same member list computes the same group; removing one member moves only the resources
 * whose group contained it.
 */
public final class Rendezvous {

    private static final HashFunction HASH = Hashing.farmHashFingerprint64();

    private Rendezvous() {
    }

    /**
     * Computes the HRW score of a member for a resource.
     *
     * @param memberId the member's stable id (not null)
     * @param resource the resource (bucket) name (not null)
     * @return the score, to be compared as an unsigned 64-bit value
     */
    public static long score(String memberId, String resource) {
        return HASH.newHasher()
                .putString(memberId, StandardCharsets.UTF_8)
                .putByte((byte) 0)
                .putString(resource, StandardCharsets.UTF_8)
                .hash()
                .asLong();
    }

    /**
     * Returns the top {@code g} members for {@code resource}, highest score first.
     *
     * @param members  the active members, in any order (not modified)
     * @param idOf     extracts a member's id
     * @param resource the resource name
     * @param g        group size wanted; fewer are returned when there are fewer members
     * @param <M>      member type
     * @return a new list of {@code min(g, members.size())} members
     * @throws IllegalArgumentException when {@code g < 0}
     */
    public static <M> List<M> top(List<M> members, Function<M, String> idOf, String resource, int g) {
        if (g < 0) {
            throw new IllegalArgumentException("g must be >= 0, got " + g);
        }
        record Scored<M>(M member, String id, long score) {
        }
        List<Scored<M>> scored = new ArrayList<>(members.size());
        for (M m : members) {
            String id = idOf.apply(m);
            scored.add(new Scored<>(m, id, score(id, resource)));
        }
        scored.sort(Comparator.<Scored<M>>comparingLong(s -> s.score ^ Long.MIN_VALUE).reversed()
                .thenComparing(Scored::id));
        List<M> out = new ArrayList<>(Math.min(g, scored.size()));
        for (int i = 0; i < scored.size() && i < g; i++) {
            out.add(scored.get(i).member);
        }
        return out;
    }

    /**
     * Returns the group size {@code g = min(factor, active)} (docs/design.md §5).
     *
     * @param factor the configured group factor DF, ≥ 1
     * @param active the number of active members, ≥ 0
     * @return the group size, 0 only when there is no active member
     */
    public static int groupSize(int factor, int active) {
        return Math.max(0, Math.min(factor, active));
    }
}
