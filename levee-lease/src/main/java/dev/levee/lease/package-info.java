/**
 * Finite, fail-closed leases on the site bandwidth budgets (docs/design.md §10; operator's view in
 * docs/site-bandwidth.md) and on request-rate slots of hot keys (docs/design.md §12). Pure: no I/O
 * and no clock reads — time comes from an injected {@link dev.levee.core.Ticker}, the store behind
 * the {@link dev.levee.lease.ShareStore} port (etcd in levee-etcd, a model with loss, delays, crashes
 * and drift in the tests), the event loop behind {@link dev.levee.lease.ShareKeeper.Loop}, log lines
 * behind {@link dev.levee.lease.LeaseLog}. It depends on levee-core, on levee-governor for its types
 * ({@code Direction}, {@code GovernorConfig}'s bounds) and on Jackson, which parses the budget
 * document and the gateway entries from text.
 *
 * <h2>Model</h2>
 * <ul>
 *   <li>A <em>resource</em> ({@link dev.levee.lease.Resource}) is what a budget bounds: a direction's
 *       site budget, or one principal's site-wide ceiling in a direction. The budget of each is in
 *       the {@link dev.levee.lease.SiteBudget} document.</li>
 *   <li>Each gateway holds one store lease and, under it, one entry ({@link
 *       dev.levee.lease.GatewayEntry}): a {@link dev.levee.lease.Claim} (share, demand) per
 *       resource. Entries vanish with their lease.</li>
 *   <li>Every renew interval the {@link dev.levee.lease.ShareKeeper} renews the lease, reads the
 *       budget and all entries at one revision, and moves its shares toward the max-min fair
 *       division of each budget by the demands ({@link dev.levee.lease.MaxMinFair}; its own demand
 *       from a {@link dev.levee.lease.ShareKeeper.DemandSource}, typically one {@link
 *       dev.levee.lease.DemandEstimator} per resource): lowering locally first, raising only by a
 *       write conditional on the guard revision of the read.</li>
 *   <li>What the gateway may use is one immutable {@link dev.levee.lease.SiteLease} (lease id,
 *       epoch, budget with its per-principal ceilings, shares, local deadline), published whole
 *       through one atomic reference. The governors' rates, their ownership check and the gateway's
 *       fail-closed state all read that one value.</li>
 * </ul>
 *
 * <h2>Invariants</h2>
 * <ul>
 *   <li><b>Fail closed: no share is used after its local deadline.</b> The deadline of a renewal
 *       is {@code sent + ttl × (1 − ρ) − ε} on the gateway's monotonic clock, where {@code sent} is
 *       when the renewal was sent; the store counts the TTL from when it received it, so the share
 *       stops being used before the store can expire the entry that holds it, while the clocks'
 *       rates differ by less than ρ. {@link dev.levee.lease.SiteLease#owned} is false for a budgeted
 *       direction past the deadline, without a lease and before the first budget: the governors
 *       then grant nothing, and there is no fallback to a local rate.</li>
 *   <li>At every store revision Σ live shares ≤ budget (only a guarded write raises a share), and
 *       at every moment Σ shares in use ≤ Σ live shares (raised after the write, lowered before
 *       it, never used past the deadline). {@code ShareKeeperModelTest} checks both under message
 *       loss, delays, crashes, pauses and drift.</li>
 * </ul>
 *
 * <h2>Adding a kind of leased resource</h2>
 * A new kind of budget (say, one per bucket) goes in four places, all here but the last:
 * <ol>
 *   <li>{@link dev.levee.lease.Resource}: a way to name it, with its order and its key in an entry
 *       ({@link dev.levee.lease.GatewayEntry}'s codec writes and reads every resource);</li>
 *   <li>{@link dev.levee.lease.SiteBudget}: its field in the budget document, its parse and
 *       checks, and {@link dev.levee.lease.SiteBudget#budget(dev.levee.lease.Resource)} for it;</li>
 *   <li>{@link dev.levee.lease.SiteLease#owned}, if it changes which directions fail closed
 *       without a lease;</li>
 *   <li>in the adapter (levee-gateway's {@code SiteShares}): its demand into the {@code
 *       DemandSource}'s map, and its share from the published {@link dev.levee.lease.SiteLease}
 *       into whatever enforces it.</li>
 * </ol>
 * The keeper itself needs no change: it divides every resource that has a budget and a demand or
 * a share, and publishes every share in the same value under the same deadline.
 *
 * <h2>Request leases</h2>
 * The second kind of lease here is not a share of a budget but a grant of GCRA conformance slots of one
 * hot limit key (docs/design.md §12): {@link dev.levee.lease.RequestLease} (the grant as a client holds
 * it), {@link dev.levee.lease.RequestLeaseRules} (a slot's window on the client's clock, which grants to
 * accept, the restart fence), {@link dev.levee.lease.RequestLeaseHolder} (local admission, in order,
 * per key and epoch) and {@link dev.levee.lease.LeaseSizer}; the reservation itself is {@code
 * Gcra.reserve} in levee-core, next to the state it advances. Both kinds follow one pattern: a finite
 * grant, a local deadline from the <em>send</em> time minus drift ρ and a margin ε, nothing used past
 * it, nothing inherited by a restarted grantor. So a new leased resource goes where its grantor's state
 * is: a share of a budget divided among gateways is a {@link dev.levee.lease.Resource} above; a
 * reservation of an allocator's future (slots, tokens, quanta) is a grant record, a rules record mapping
 * it onto the holder's clock with the same ρ/ε construction, and a holder, beside the request leases,
 * with its bound proved in docs/design.md and checked by a model test in the style of {@code
 * RequestLeaseModelTest}.
 */
package dev.levee.lease;
