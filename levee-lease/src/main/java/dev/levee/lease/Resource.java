package dev.levee.lease;

import dev.levee.governor.Direction;
import java.util.Objects;

/**
 * What a site share is a share of (docs/design.md §10): a direction's site budget, or one principal's
 * site-wide ceiling in a direction.
 *
 * @param direction the direction
 * @param principal the service-account id, or null for the direction's whole budget
 */
public record Resource(Direction direction, String principal) implements Comparable<Resource> {

    public Resource {
        Objects.requireNonNull(direction, "direction");
    }

    /** The whole budget of a direction. */
    public static Resource of(Direction direction) {
        return new Resource(direction, null);
    }

    /** One principal's ceiling in a direction. */
    public static Resource of(Direction direction, String principal) {
        return new Resource(direction, Objects.requireNonNull(principal, "principal"));
    }

    /** Whether this is a principal's ceiling rather than a direction's budget. */
    public boolean perPrincipal() {
        return principal != null;
    }

    @Override
    public int compareTo(Resource o) {
        int c = direction.compareTo(o.direction);
        if (c != 0) {
            return c;
        }
        if (principal == null || o.principal == null) {
            return principal == null ? (o.principal == null ? 0 : -1) : 1;
        }
        return principal.compareTo(o.principal);
    }

    @Override
    public String toString() {
        return direction.name().toLowerCase(java.util.Locale.ROOT) + (principal == null ? "" : "/" + principal);
    }
}
