package dev.levee.gateway;

import dev.levee.lease.ShareKeeper;
import java.util.List;
import java.util.Objects;

/**
 * Where and how a gateway shares the site-wide bandwidth budgets with the other gateways (docs/design.md
 * §10): the etcd cluster that keeps budgets and leases, and the lease timing.
 *
 * @param etcdEndpoints   etcd endpoint URIs, not empty
 * @param prefix          the Levee key prefix in etcd (default {@code /levee}); the budget is at
 *                        {@code <prefix>/bandwidth/budget}
 * @param maxMessageBytes the largest gRPC message accepted from etcd, bytes
 * @param keeper          the gateway id and lease timing
 */
public record SiteSettings(List<String> etcdEndpoints, String prefix, int maxMessageBytes, ShareKeeper.Settings keeper) {

    public SiteSettings {
        etcdEndpoints = List.copyOf(etcdEndpoints);
        if (etcdEndpoints.isEmpty()) {
            throw new IllegalArgumentException("site budgets need at least one etcd endpoint");
        }
        Objects.requireNonNull(prefix, "prefix");
        Objects.requireNonNull(keeper, "keeper");
    }
}
