package dev.levee.core;

/**
 * Supplies the list of active limiters (docs/design.md §7): from heartbeats ({@code dev.levee.observer.HeartbeatMembership}) or
 * from etcd leases ({@code dev.levee.etcd.EtcdMembership}).
 */
public interface MembershipSource {

    /** Returns the current list, with its revision and the group factor. */
    MembershipView view();
}
