package dev.levee.quota;

import java.util.List;
import java.util.Objects;

/**
 * Holds the quotas configured for one resource (bucket): the value of
 * {@code resources.<bucket>} in the single-file form or of {@code /levee/resources/<bucket>}
 * in etcd (docs/design.md §4).
 *
 * @param quota    the resource-level quota (resolution step 2), or {@code null}
 * @param prefixes the prefix entries in configured order (order breaks ties, docs/design.md §4);
 *                 copied, unmodifiable; may be empty
 */
public record ResourceQuotas(Quota quota, List<PrefixRule> prefixes) {

    /**
     * Copies {@code prefixes} into an unmodifiable list.
     *
     * @throws NullPointerException if {@code prefixes} is or contains {@code null}
     */
    public ResourceQuotas {
        prefixes = List.copyOf(Objects.requireNonNull(prefixes, "prefixes"));
    }

    /**
     * Creates a resource with a resource-level quota only.
     *
     * @param quota the quota for the whole resource
     * @return the resource configuration
     * @throws NullPointerException if {@code quota} is {@code null}
     */
    public static ResourceQuotas of(Quota quota) {
        return new ResourceQuotas(Objects.requireNonNull(quota, "quota"), List.of());
    }
}
