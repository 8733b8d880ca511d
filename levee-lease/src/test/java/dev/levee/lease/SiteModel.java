package dev.levee.lease;

import dev.levee.core.Ticker;
import dev.levee.governor.Direction;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * A deterministic, single-threaded model of a site (docs/design.md §10) for {@link ShareKeeper}: one
 * store with etcd's semantics on the store's clock (the "true" time of the model), N gateways
 * whose {@link Ticker}s run at a rate 1 + δ of it (|δ| < ρ, any origin), and a network that
 * loses and delays requests and replies. Gateways can crash (the keeper stops; its lease is not
 * revoked), be restarted (a new incarnation), and be paused (their loop does not run; their clock
 * goes on). Invariants are checked at every event and at every revision; the first violation is
 * kept with the recent history of the run.
 */
final class SiteModel {

    /** How the network and the gateways misbehave. All probabilities in [0, 1]. */
    record Faults(double requestLoss, double replyLoss, long minDelayNanos, long maxDelayNanos, double longDelay,
                  long longDelayMaxNanos) {
        static Faults none(long minDelay, long maxDelay) {
            return new Faults(0, 0, minDelay, maxDelay, 0, 0);
        }
    }

    // ------------------------------------------------------------------------------ time and events

    private record Event(long at, long seq, Runnable run) {
    }

    private final PriorityQueue<Event> queue = new PriorityQueue<>((a, b) -> a.at != b.at ? Long.compare(a.at, b.at)
            : Long.compare(a.seq, b.seq));
    private long seq;
    private long now;
    private long events;
    final Random rnd;
    /** The network's faults; may be changed between events (for example to end them). */
    Faults faults;
    final Store store = new Store();
    final List<Node> nodes = new ArrayList<>();
    private final ArrayDeque<String> history = new ArrayDeque<>();
    private String violation;
    private final boolean checkUse;
    /** Whether to keep the recent history (off in large simulations). */
    boolean notes = true;
    /** Scripted request delays: (gateway id, call) → delay in ns, or null for the random one. */
    java.util.function.BiFunction<String, String, Long> requestDelay = (id, what) -> null;

    SiteModel(long seed, Faults faults, boolean checkUse) {
        this.rnd = new Random(seed);
        this.faults = faults;
        this.checkUse = checkUse;
    }

    long now() {
        return now;
    }

    long events() {
        return events;
    }

    void at(long time, Runnable r) {
        queue.add(new Event(Math.max(time, now), seq++, r));
    }

    /** Runs events until {@code until} (true ns) or {@code maxEvents}; stops at the first violation. */
    void run(long until, long maxEvents) {
        while (violation == null && !queue.isEmpty() && events < maxEvents) {
            Event e = queue.peek();
            if (e.at - until > 0) {
                break;
            }
            queue.poll();
            now = e.at;
            events++;
            e.run.run();
            if (checkUse && checkUseAtEvents) {
                checkUse();
            }
        }
        if (violation == null) {
            now = Math.max(now, until);
        }
    }

    String violation() {
        return violation;
    }

    void note(String what) {
        if (!notes) {
            return;
        }
        if (history.size() >= 80) {
            history.removeFirst();
        }
        history.addLast(String.format("%9.3f ms  %s", now / 1e6, what));
    }

    private void violated(String what) {
        if (violation == null) {
            violation = what + "\nlast events:\n  " + String.join("\n  ", history);
        }
    }

    static long ms(double ms) {
        return (long) (ms * 1_000_000);
    }

    long delay() {
        if (faults.longDelay > 0 && rnd.nextDouble() < faults.longDelay) {
            return (long) (rnd.nextDouble() * faults.longDelayMaxNanos);
        }
        return faults.minDelayNanos + (long) (rnd.nextDouble() * (faults.maxDelayNanos - faults.minDelayNanos));
    }

    // ------------------------------------------------------------------------------ invariants

    /** Resources with a budget in force in the store now. */
    List<Resource> budgeted() {
        List<Resource> out = new ArrayList<>();
        SiteBudget b = store.budget;
        for (Direction d : Direction.values()) {
            if (b.budget(d) > 0) {
                out.add(Resource.of(d));
            }
        }
        for (String p : b.principals().keySet()) {
            for (Direction d : Direction.values()) {
                if (b.ceiling(d, p) > 0) {
                    out.add(Resource.of(d, p));
                }
            }
        }
        return out;
    }

    /** Whether {@link #checkUse} runs at every event (off while a budget decrease takes effect). */
    boolean checkUseAtEvents = true;

    /** Σ of shares that gateways may use at this instant ≤ the budget, per resource. */
    void checkUse() {
        SiteBudget b = store.budget;
        for (Resource r : budgeted()) {
            long sum = 0;
            StringBuilder who = new StringBuilder();
            for (Node n : nodes) {
                ShareKeeper k = n.keeper;
                if (k != null && k.owned(r.direction())) {
                    long s = k.shares().getOrDefault(r, 0L);
                    sum += s;
                    who.append(' ').append(n.id).append('=').append(s);
                }
            }
            if (sum > b.budget(r)) {
                violated("Σ shares in use of " + r + " = " + sum + " > budget " + b.budget(r) + " at " + now
                        + " ns:" + who);
            }
        }
    }

    // ------------------------------------------------------------------------------ the store

    /** etcd's semantics as far as ShareKeeper uses them; every operation at one instant of the true clock. */
    final class Store {
        private record Kv(String value, GatewayEntry entry, long modRevision, long lease) {
        }

        private final TreeMap<String, Kv> kv = new TreeMap<>();
        private final Map<Long, long[]> leases = new HashMap<>(); // id → {expiry, ttl s}
        private long revision = 1;
        private long nextLease = 0x1000;
        SiteBudget budget = SiteBudget.NONE;
        final Map<String, long[]> requests = new TreeMap<>(); // op → {count}
        long conflicts;

        void count(String op) {
            requests.computeIfAbsent(op, k -> new long[1])[0]++;
        }

        void setBudget(SiteBudget b) {
            expire();
            budget = b;
            kv.put("budget", new Kv(b.toYaml(), null, ++revision, 0));
            note("store: budget " + b.download() + "/" + b.upload() + " rev " + revision);
            checkStore();
        }

        private void expire() {
            for (Iterator<Map.Entry<Long, long[]>> it = leases.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<Long, long[]> l = it.next();
                if (l.getValue()[0] - now <= 0) {
                    it.remove();
                    drop(l.getKey(), "expired");
                }
            }
        }

        private void drop(long lease, String why) {
            boolean any = kv.values().removeIf(v -> v.lease == lease);
            if (any) {
                revision++;
            }
            note("store: lease " + Long.toHexString(lease) + " " + why + (any ? ", its key deleted rev " + revision : ""));
        }

        ShareStore.Lease grant(long ttl) {
            expire();
            count("grant");
            long id = nextLease++;
            leases.put(id, new long[] {now + ttl * 1_000_000_000L, ttl});
            note("store: grant " + Long.toHexString(id));
            return new ShareStore.Lease(id, ttl);
        }

        long keepAlive(long id) {
            expire();
            count("keepAlive");
            long[] l = leases.get(id);
            if (l == null) {
                note("store: keepAlive " + Long.toHexString(id) + " → 0 (gone)");
                return 0;
            }
            l[0] = now + l[1] * 1_000_000_000L;
            return l[1];
        }

        ShareStore.View read() {
            expire();
            count("read");
            List<GatewayEntry> entries = new ArrayList<>();
            kv.forEach((k, v) -> {
                if (k.startsWith("gw/")) {
                    entries.add(v.entry);
                }
            });
            Map<String, Long> revisions = new HashMap<>();
            kv.forEach((k, v) -> {
                if (k.startsWith("gw/")) {
                    revisions.put(k.substring(3), v.modRevision);
                }
            });
            Kv g = kv.get("guard");
            Kv b = kv.get("budget");
            return new ShareStore.View(b == null ? null : b.value, entries, g == null ? 0 : g.modRevision, revisions);
        }

        ShareStore.WriteResult write(GatewayEntry e, long lease, boolean guarded, long guardRevision,
                                     long entryRevision) {
            expire();
            count(guarded ? "write-guarded" : "write");
            if (!leases.containsKey(lease)) {
                note("store: write " + e.keySuffix() + " → LEASE_GONE");
                return ShareStore.WriteResult.LEASE_GONE;
            }
            Kv g = kv.get("guard");
            if (guarded && (g == null ? 0 : g.modRevision) != guardRevision) {
                conflicts++;
                note("store: write " + e.keySuffix() + " → CONFLICT");
                return ShareStore.WriteResult.CONFLICT;
            }
            Kv own = kv.get("gw/" + e.keySuffix());
            if ((own == null ? 0 : own.modRevision) != entryRevision) {
                note("store: write " + e.keySuffix() + " " + e.claims() + " → CONFLICT (entry at rev "
                        + (own == null ? 0 : own.modRevision) + ", not " + entryRevision + ")");
                return ShareStore.WriteResult.CONFLICT;
            }
            revision++;
            if (guarded) {
                kv.put("guard", new Kv(e.keySuffix(), null, revision, 0));
            }
            kv.put("gw/" + e.keySuffix(), new Kv(e.toJson(), GatewayEntry.parse(e.toJson()), revision, lease));
            note("store: write " + (guarded ? "guarded " : "") + e.keySuffix() + " " + e.claims() + " rev " + revision);
            checkStore();
            return ShareStore.WriteResult.OK;
        }

        void revoke(long lease) {
            expire();
            count("revoke");
            if (leases.remove(lease) != null) {
                drop(lease, "revoked");
            }
        }

        /** Whether {@link #checkStore} runs at every revision (off while a budget decrease takes effect). */
        boolean checkRevisions = true;

        /** Σ live shares ≤ budget at this revision, per resource. */
        void checkStore() {
            if (!checkRevisions) {
                return;
            }
            for (Resource r : budgeted()) {
                long sum = 0;
                for (Map.Entry<String, Kv> e : kv.entrySet()) {
                    if (e.getKey().startsWith("gw/")) {
                        sum += e.getValue().entry.claim(r).share();
                    }
                }
                if (sum > budget.budget(r)) {
                    violated("store revision " + revision + ": Σ live shares of " + r + " = " + sum + " > budget "
                            + budget.budget(r));
                }
            }
        }

        /** Live shares by gateway entry (key suffix), for one resource. */
        Map<String, Long> shares(Resource r) {
            expire();
            Map<String, Long> out = new TreeMap<>();
            kv.forEach((k, v) -> {
                if (k.startsWith("gw/")) {
                    out.put(k.substring(3), v.entry.claim(r).share());
                }
            });
            return out;
        }
    }

    // ------------------------------------------------------------------------------ gateways

    /** One gateway: its clock, its loop (per incarnation), its keeper and its demands. */
    final class Node implements Ticker {
        final String id;
        final double drift;
        final long origin;
        long pausedUntil;
        Map<Resource, Long> demands = Map.of();
        ShareKeeper keeper;
        private NodeLoop loop;
        int incarnations;

        Node(String id, double drift, long origin) {
            this.id = id;
            this.drift = drift;
            this.origin = origin;
        }

        @Override
        public long read() {
            return origin + Math.round(now * (1 + drift));
        }

        boolean paused() {
            return pausedUntil - now > 0;
        }

        /** Starts a new incarnation (after a crash: a restart that inherits nothing). */
        void start(ShareKeeper.Settings settings) {
            loop = new NodeLoop(this);
            incarnations++;
            keeper = new ShareKeeper(settings, new Link(this, loop), this, loop,
                    (budget, shares, gateways, t) -> demands, l -> note(id + ": in use " + l.shares()));
            note(id + ": start incarnation " + keeper.incarnation().substring(0, 8));
            keeper.start();
        }

        /** The process dies: nothing more runs, nothing is revoked. */
        void crash() {
            if (keeper == null) {
                return;
            }
            note(id + ": crash");
            loop.dead = true;
            keeper = null;
        }

        void pause(long forNanos) {
            note(id + ": pause " + forNanos / 1_000_000 + " ms");
            pausedUntil = Math.max(pausedUntil, now + forNanos);
        }
    }

    /** A gateway's event loop: tasks of a dead incarnation are dropped; a paused gateway runs them later. */
    final class NodeLoop implements ShareKeeper.Loop {
        private final Node node;
        boolean dead;

        NodeLoop(Node node) {
            this.node = node;
        }

        @Override
        public void execute(Runnable task) {
            at(now, gate(task));
        }

        @Override
        public void schedule(Runnable task, long delayNanos) {
            at(now + (long) Math.ceil(Math.max(0, delayNanos) / (1 + node.drift)), gate(task));
        }

        Runnable gate(Runnable task) {
            return new Runnable() {
                @Override
                public void run() {
                    if (dead) {
                        return;
                    }
                    if (node.paused()) {
                        at(node.pausedUntil, this);
                        return;
                    }
                    task.run();
                }
            };
        }
    }

    /** A gateway's view of the store, through the faulty network. */
    final class Link implements ShareStore {
        private final Node node;
        private final NodeLoop loop;

        Link(Node node, NodeLoop loop) {
            this.node = node;
            this.loop = loop;
        }

        private <T> CompletionStage<T> call(String what, Supplier<T> op) {
            CompletableFuture<T> reply = new CompletableFuture<>();
            if (rnd.nextDouble() < faults.requestLoss) {
                note(node.id + ": " + what + " lost on the way");
                return reply;
            }
            Long scripted = requestDelay.apply(node.id, what);
            if (scripted != null) {
                note(node.id + ": " + what + " delayed " + scripted / 1_000_000 + " ms");
            }
            at(now + (scripted != null ? scripted : delay()), () -> {
                T result = op.get();
                if (rnd.nextDouble() < faults.replyLoss) {
                    note(node.id + ": reply to " + what + " lost");
                    return;
                }
                at(now + delay(), loop.gate(() -> reply.complete(result)));
            });
            return reply;
        }

        @Override
        public CompletionStage<Lease> grant(long ttlSeconds) {
            return call("grant", () -> store.grant(ttlSeconds));
        }

        @Override
        public CompletionStage<Long> keepAlive(long leaseId) {
            return call("keepAlive", () -> store.keepAlive(leaseId));
        }

        @Override
        public CompletionStage<View> read() {
            return call("read", store::read);
        }

        @Override
        public CompletionStage<WriteResult> write(GatewayEntry entry, long leaseId, boolean guarded, long guardRevision,
                                                  long entryRevision) {
            return call("write " + entry.claims(), () -> store.write(entry, leaseId, guarded, guardRevision,
                    entryRevision));
        }

        @Override
        public CompletionStage<Void> revoke(long leaseId) {
            return call("revoke", () -> {
                store.revoke(leaseId);
                return null;
            });
        }
    }

    Node addNode(String id, double drift, long origin) {
        Node n = new Node(id, drift, origin);
        nodes.add(n);
        return n;
    }

    static ShareKeeper.Settings settings(String id, Duration ttl, Duration renew, double drift, Duration margin,
                                         Duration callTimeout) {
        return new ShareKeeper.Settings(id, ttl, renew, drift, margin, callTimeout, 3);
    }
}
