package dev.levee.lease;

import dev.levee.core.Gcra;
import dev.levee.core.GcraLimit;
import dev.levee.core.Rendezvous;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Random;

/**
 * A discrete-event model of request leases (docs/design.md §12) for one hot limit key: clients with drifting clocks
 * that admit from leases and fall back to per-request checks, limiters that reserve with {@link Gcra#reserve} and
 * decide with {@link Gcra#attempt}, a network that delays and loses messages, crashes of both, limiters that restart
 * without state behind the restart fence, quota changes and membership changes that each side learns late.
 *
 * <p>Real time is every limiter's clock. An admission is counted where it is decided: a leased one at the client, at
 * the real instant it took the slot; a per-request one at the limiter, when GCRA admitted it. Each admission belongs
 * to a <em>period</em>: the run of decisions one limiter made with one limit value (a restart with the same limit
 * continues the period, which is what the fence must make safe). At every admission the model checks, for every
 * window that ends at it, the period bound {@code count ≤ ⌈w / T⌉ + c} (a closed window of w ns) and, when
 * asked, the spec bound over all admissions {@code count ≤ rate × w + g × burst + g}; it also checks that a leased
 * admission falls in its slot's real window {@code [v_k − τ, v_k + T)} and happens under the client's current epoch.
 *
 * <p>Its parts, in this order: the knobs and the period record; the limiter and the client (a drifting clock, a
 * {@link RequestLeaseHolder}, when to ask each member again); the client's events (arrivals, ticks, grants); the
 * limiter's (checks, reservations, the restart fence); faults and changes; the network; the accounting that checks
 * the bounds.
 */
final class RequestLeaseModel {

    static final String RESOURCE = "bucket";
    static final long MS = 1_000_000L;

    /** The run's knobs. Probabilities per message or per event; times in ns. */
    record Knobs(int clients, int limiters, int factor, double rate, int burst, double rho, long marginNs,
                 long oneWayMinNs, long oneWayMaxNs, double loss, double longDelay, double demandFactor,
                 boolean limiterCrashes, boolean clientCrashes, boolean configChanges, boolean membershipChanges,
                 boolean checkSpecBound, long checkWindowNs, long runNs) {
    }

    private record Event(long at, long seq, Runnable action) {
    }

    /** One period's admissions (real times, ascending) and its limit. */
    private static final class Period {
        final long t;
        final int c;
        final List<Long> times = new ArrayList<>();

        Period(GcraLimit limit) {
            this.t = limit.emissionIntervalNs();
            this.c = limit.capacity();
        }
    }

    private final class Limiter {
        final String id;
        boolean up = true;
        long startedAt = Long.MIN_VALUE / 4; // at the run's start nothing was held before: no fence
        Gcra.State state;
        double rate;
        int burst;
        long revision = 1;
        GcraLimit lastLimit;
        Period period;
        long nextLeaseId = 1;

        Limiter(String id) {
            this.id = id;
        }

        /** Returns the limit for a request with group size g, moving to a new period when it differs. */
        GcraLimit limitFor(int g) {
            GcraLimit l = GcraLimit.of(rate, burst, g);
            if (!l.equals(lastLimit)) {
                lastLimit = l;
                period = new Period(l);
            }
            return l;
        }

        boolean fenced(GcraLimit l) {
            return now - startedAt < rules.restartFenceNs(l);
        }
    }

    private final class Client {
        final int index;
        int incarnation;
        boolean up = true;
        long localAnchor;
        long realAnchor;
        double skew; // local = anchor + (real − realAnchor) × (1 + skew), |skew| < ρ
        RequestLease.Epoch epoch;
        double rate;
        int burst;
        List<String> members;
        int factor;
        RequestLeaseHolder holder;
        final Map<String, Long> renewAt = new HashMap<>();
        final Map<String, Long> pendingSince = new HashMap<>();
        int roundRobin;
        /** The slots handed to this client's NGINX (docs/design.md §12, "Batches in NGINX"): it outlives a crash of the client. */
        RequestLeaseHolder.Batch batch;
        int batchUsed;

        Client(int index) {
            this.index = index;
        }

        long local() {
            long d = now - realAnchor;
            return localAnchor + d + (long) Math.floor(d * skew);
        }

        void reanchor(double newSkew) {
            localAnchor = local();
            realAnchor = now;
            skew = newSkew;
        }

        int g() {
            return Math.min(factor, members.size());
        }

        List<String> group() {
            return Rendezvous.top(members, m -> m, RESOURCE, g());
        }

        GcraLimit limit() {
            return GcraLimit.of(rate, burst, g());
        }
    }

    /** The model's record of a grant, by (limiter, lease id). */
    private record Grant(long decidedAt, Period period, long firstNs, long t, long tau) {
    }

    final Random rnd;
    final Knobs k;
    final RequestLeaseRules rules;
    final LeaseSizer sizer = new LeaseSizer(50 * MS, 10, 4096);
    private final PriorityQueue<Event> queue = new PriorityQueue<>((a, b) -> a.at != b.at
            ? Long.compare(a.at, b.at) : Long.compare(a.seq, b.seq));
    private long seq;
    long now;
    private final List<Limiter> limiters = new ArrayList<>();
    private final List<Client> clients = new ArrayList<>();
    private final Map<String, Grant> grants = new HashMap<>();
    private final List<Long> all = new ArrayList<>();
    private long configRevision = 1;
    private long membershipVersion = 1;
    private double rate;
    private int burst;
    private List<String> members;
    String violation;
    long admitted;
    long admittedLeased;
    /** Of {@link #admittedLeased}, those NGINX admitted from a batch. */
    long admittedBatched;
    /** Slots per batch handed to NGINX after a leased admission; 0: no batches. */
    private int batchMax;
    private long batchMinLifeNs;
    long refusedGrants;
    long staleGrants;
    long grantedSlots;
    long perRequestChecks;
    private long countFrom;
    private long countedAdmissions;

    RequestLeaseModel(long seed, Knobs knobs, RequestLeaseRules rules) {
        this.rnd = new Random(seed);
        this.k = knobs;
        this.rules = rules;
        this.rate = knobs.rate();
        this.burst = knobs.burst();
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < knobs.limiters(); i++) {
            Limiter l = new Limiter("l" + i);
            l.state = new Gcra.State(0);
            l.rate = rate;
            l.burst = burst;
            limiters.add(l);
            ids.add(l.id);
        }
        members = List.copyOf(ids);
        for (int i = 0; i < knobs.clients(); i++) {
            Client c = new Client(i);
            c.localAnchor = rnd.nextBoolean() ? Long.MAX_VALUE - rnd.nextInt(1_000_000_000) : rnd.nextLong();
            c.skew = randomSkew();
            c.epoch = new RequestLease.Epoch(configRevision, membershipVersion);
            c.rate = rate;
            c.burst = burst;
            c.members = members;
            c.factor = knobs.factor();
            c.holder = new RequestLeaseHolder(rules, c.epoch);
            clients.add(c);
        }
    }

    /**
     * Hands NGINX batches: after each admission from a lease, the client takes up to {@code max} more usable slots
     * ({@link RequestLeaseHolder#take}) for its NGINX, which admits arrivals from them, on the same machine's clock,
     * until the first one's window ends, whether the client is up or not.
     */
    RequestLeaseModel withBatches(int max, long minLifeNs) {
        this.batchMax = max;
        this.batchMinLifeNs = minLifeNs;
        return this;
    }

    /** Runs the model to its end; returns this (see {@link #violation}). */
    RequestLeaseModel run() {
        for (Client c : clients) {
            at(exp(1e9 / demandOf(c)), () -> arrival(c));
            at(rnd.nextInt(1_000_000), () -> tick(c));
        }
        if (k.limiterCrashes()) {
            at(randomBetween(100 * MS, 800 * MS), this::limiterCrash);
        }
        if (k.clientCrashes()) {
            at(randomBetween(100 * MS, 800 * MS), this::clientCrash);
        }
        if (k.configChanges()) {
            at(randomBetween(200 * MS, 900 * MS), this::configChange);
        }
        if (k.membershipChanges()) {
            at(randomBetween(200 * MS, 900 * MS), this::membershipChange);
        }
        if (k.rho() > 0) {
            at(randomBetween(50 * MS, 300 * MS), this::driftChange);
        }
        countFrom = Math.min(k.runNs() / 5, 1_000 * MS);
        while (!queue.isEmpty() && violation == null) {
            Event e = queue.poll();
            if (e.at > k.runNs()) {
                break;
            }
            now = e.at;
            e.action.run();
        }
        return this;
    }

    /** Admissions per second of real time from a fifth of the run (at most 1 s) to its end. */
    double admittedRate() {
        return countedAdmissions * 1e9 / (k.runNs() - countFrom);
    }

    private double demandOf(Client c) {
        return k.demandFactor() * k.rate() / k.clients();
    }

    // ---- clients ----

    private void arrival(Client c) {
        at(now + exp(1e9 / demandOf(c)), () -> arrival(c));
        long local = c.local();
        if (c.batch != null && c.batchUsed < c.batch.slots() && c.batch.endNs() - local > 0) {
            // NGINX's admission from its batch: no epoch of its own (a batch lives until its first slot's window ends)
            RequestLease used = c.batch.lease();
            Grant g = grants.get(used.limiterId() + "/" + used.id());
            int slot = c.batch.firstSlot() + c.batchUsed++;
            long v = g.decidedAt + g.firstNs + (slot - 1) * g.t;
            if (now - (v - g.tau) < 0 || now - (v + g.t) >= 0) {
                fail("batch admission at " + now + " outside its slot's window [" + (v - g.tau) + ", " + (v + g.t)
                        + ")");
                return;
            }
            admittedLeased++;
            admittedBatched++;
            admit(g.period);
            return;
        }
        if (!c.up) {
            return;
        }
        RequestLease used = c.holder.admit(local);
        if (used != null) {
            Grant g = grants.get(used.limiterId() + "/" + used.id());
            int slot = c.holder.lastSlot();
            long v = g.decidedAt + g.firstNs + (slot - 1) * g.t;
            if (now - (v - g.tau) < 0 || now - (v + g.t) >= 0) {
                fail("leased admission at " + now + " outside its slot's window [" + (v - g.tau) + ", " + (v + g.t)
                        + ")");
                return;
            }
            if (!used.epoch().equals(c.epoch)) {
                fail("admission under epoch " + used.epoch() + " while the client knows " + c.epoch);
                return;
            }
            admittedLeased++;
            admit(g.period);
            if (batchMax > 0) {
                RequestLeaseHolder.Batch b = c.holder.take(local, batchMax, batchMinLifeNs);
                if (b != null) {
                    c.batch = b;
                    c.batchUsed = 0;
                }
            }
            return;
        }
        if (c.holder.waitNs(local) != RequestLeaseHolder.NO_LEASE) {
            return; // refused with the wait until the next held slot
        }
        List<String> group = c.group();
        String target = group.get(Math.floorMod(c.roundRobin++, group.size()));
        int g = c.g();
        perRequestChecks++;
        send(() -> check(target, g));
    }

    private void tick(Client c) {
        at(now + MS, () -> tick(c));
        if (!c.up || c.rate == 0 || c.limit().blocked()) {
            return;
        }
        GcraLimit limit = c.limit();
        long local = c.local();
        long rtt = 2 * k.oneWayMaxNs();
        if (!sizer.leased(demandOf(c)) || !rules.worthLeasing(limit, c.burst, rtt)) {
            return;
        }
        for (String m : c.group()) {
            Long pending = c.pendingSince.get(m);
            if (pending != null && local - pending < 100 * MS) {
                continue; // the reply may still come
            }
            Long when = c.renewAt.get(m);
            if (when != null && local - when < 0) {
                continue;
            }
            int n = sizer.slots(demandOf(c), c.g(), limit);
            if (c.holder.unused(local, m) > n / 2) {
                continue; // ask again as the slots held run low, not whenever the limiter would accept: the demand
                          // decides how much of the rate this client books
            }
            c.pendingSince.put(m, local);
            RequestLease.Epoch epoch = c.epoch;
            int g = c.g();
            int incarnation = c.incarnation;
            long sent = local;
            long lead = sizer.leadNs(demandOf(c), g, limit, n); // as levee-client asks (LeaseAdmission)
            send(() -> reserve(m, c, incarnation, epoch, g, n, lead, sent));
        }
    }

    private void granted(Client c, int incarnation, String m, long leaseId, RequestLease.Epoch epoch, long sent,
                         Gcra.Reservation r) {
        if (!c.up || c.incarnation != incarnation) {
            return;
        }
        long local = c.local();
        c.pendingSince.remove(m);
        if (!r.granted()) {
            c.renewAt.put(m, local + (long) (r.waitNs() * (1 + k.rho())) + 1);
            return;
        }
        RequestLease lease = new RequestLease(leaseId, epoch, m, r.firstNs(), r.intervalNs(), r.toleranceNs(),
                r.slots(), sent, local);
        if (!epoch.equals(c.epoch)) {
            staleGrants++; // decided under a quota or membership this client has left or not learned yet: not used
            return;
        }
        if (rules.problem(lease, c.limit()) != null) {
            refusedGrants++;
            return;
        }
        if (c.holder.offer(lease)) {
            // the limiter accepts the next reservation once TAT − τ ≤ now: not before the last slot's window opens + T
            c.renewAt.put(m, rules.slotStartNs(lease, lease.slots()) + (long) (r.intervalNs() * (1 + k.rho())) + 1);
        }
    }

    // ---- limiters ----

    private Limiter limiter(String id) {
        for (Limiter l : limiters) {
            if (l.id.equals(id)) {
                return l;
            }
        }
        throw new IllegalStateException(id);
    }

    private void check(String target, int g) {
        Limiter l = limiter(target);
        if (!l.up || l.rate == 0) {
            return;
        }
        GcraLimit limit = l.limitFor(g);
        if (l.fenced(limit)) {
            return;
        }
        if (Gcra.admitted(Gcra.attempt(l.state, limit, now))) {
            admit(l.period);
        }
    }

    private void reserve(String target, Client c, int incarnation, RequestLease.Epoch epoch, int g, int n, long lead,
                         long sent) {
        Limiter l = limiter(target);
        if (!l.up || l.rate == 0) {
            return;
        }
        GcraLimit limit = l.limitFor(g);
        Gcra.Reservation r;
        if (l.fenced(limit)) {
            r = new Gcra.Reservation(0, 0, limit.emissionIntervalNs(), limit.toleranceNs(),
                    rules.restartFenceNs(limit) - (now - l.startedAt));
        } else {
            r = Gcra.reserve(l.state, limit, now, lead, n, rules.maxLifetimeNs());
        }
        long id = l.nextLeaseId++;
        // the grant's epoch: the quota revision this limiter decided under, the membership the client asked under
        RequestLease.Epoch decided = new RequestLease.Epoch(l.revision, epoch.membershipVersion());
        if (r.granted()) {
            grantedSlots += r.slots();
            grants.put(l.id + "/" + id, new Grant(now, l.period, r.firstNs(), r.intervalNs(), r.toleranceNs()));
        }
        sendReply(() -> granted(c, incarnation, target, id, decided, sent, r));
        if (rnd.nextDouble() < k.loss() / 2) {
            sendReply(() -> granted(c, incarnation, target, id, decided, sent, r)); // a duplicate
        }
    }

    // ---- faults and changes ----

    private void limiterCrash() {
        at(now + randomBetween(100 * MS, 800 * MS), this::limiterCrash);
        Limiter l = limiters.get(rnd.nextInt(limiters.size()));
        if (!l.up) {
            return;
        }
        l.up = false;
        at(now + randomBetween(MS, 300 * MS), () -> {
            l.up = true;
            l.startedAt = now;
            l.state = new Gcra.State(0);
        });
    }

    private void clientCrash() {
        at(now + randomBetween(200 * MS, 900 * MS), this::clientCrash);
        Client c = clients.get(rnd.nextInt(clients.size()));
        if (!c.up) {
            return;
        }
        c.up = false;
        c.incarnation++;
        c.holder.clear();
        c.renewAt.clear();
        c.pendingSince.clear();
        at(now + randomBetween(MS, 100 * MS), () -> c.up = true);
    }

    private void configChange() {
        at(now + randomBetween(200 * MS, 900 * MS), this::configChange);
        double newRate = k.rate() * (0.25 + rnd.nextDouble() * 1.75);
        int newBurst = Math.max(1, (int) (k.burst() * (0.25 + rnd.nextDouble() * 1.75)));
        long revision = ++configRevision;
        for (Limiter l : limiters) {
            at(now + randomBetween(0, 150 * MS), () -> {
                if (revision > l.revision) { // a watch delivers in order: an older revision never follows a newer
                    l.rate = newRate;
                    l.burst = newBurst;
                    l.revision = revision;
                }
            });
        }
        for (Client c : clients) {
            at(now + randomBetween(0, 150 * MS), () -> {
                if (revision > c.epoch.configRevision()) {
                    c.rate = newRate;
                    c.burst = newBurst;
                    learn(c, revision, c.epoch.membershipVersion());
                }
            });
        }
    }

    private void membershipChange() {
        at(now + randomBetween(200 * MS, 900 * MS), this::membershipChange);
        List<String> next = new ArrayList<>();
        for (Limiter l : limiters) {
            if (rnd.nextInt(4) > 0) {
                next.add(l.id);
            }
        }
        if (next.isEmpty()) {
            next.add(limiters.get(0).id);
        }
        List<String> list = List.copyOf(next);
        long version = ++membershipVersion;
        for (Client c : clients) {
            at(now + randomBetween(0, 300 * MS), () -> {
                if (version > c.epoch.membershipVersion()) {
                    c.members = list;
                    learn(c, c.epoch.configRevision(), version);
                }
            });
        }
    }

    private void learn(Client c, long revision, long version) {
        RequestLease.Epoch e = new RequestLease.Epoch(revision, version);
        c.epoch = e;
        c.holder.epoch(e);
        c.renewAt.clear();
    }

    private void driftChange() {
        at(now + randomBetween(50 * MS, 300 * MS), this::driftChange);
        clients.get(rnd.nextInt(clients.size())).reanchor(randomSkew());
    }

    private double randomSkew() {
        // within ρ, with 2 % of it left for the model's own nanosecond rounding
        return k.rho() == 0 ? 0 : (rnd.nextDouble() * 2 - 1) * k.rho() * 0.98;
    }

    // ---- network ----

    private void send(Runnable delivery) {
        if (rnd.nextDouble() < k.loss()) {
            return;
        }
        at(now + delay(), delivery);
    }

    private void sendReply(Runnable delivery) {
        send(delivery);
    }

    private long delay() {
        if (rnd.nextDouble() < k.longDelay()) {
            return randomBetween(50 * MS, 400 * MS);
        }
        return randomBetween(k.oneWayMinNs(), k.oneWayMaxNs());
    }

    // ---- accounting ----

    private void admit(Period p) {
        admitted++;
        if (now - countFrom >= 0) {
            countedAdmissions++;
        }
        p.times.add(now);
        List<Long> ts = p.times;
        int j = ts.size() - 1;
        for (int i = j - 1; i >= 0; i--) {
            long w = now - ts.get(i);
            if (w > k.checkWindowNs()) {
                break;
            }
            long bound = (w + p.t - 1) / p.t + p.c; // ⌈w / T⌉ + c
            if (j - i + 1 > bound) {
                fail("period bound: " + (j - i + 1) + " admissions in " + w + " ns with T=" + p.t + ", c=" + p.c
                        + " (bound " + bound + ")");
                return;
            }
        }
        if (k.checkSpecBound()) {
            all.add(now);
            int gs = Math.min(k.factor(), k.limiters());
            int c = k.burst(); // §5's bound: g × burst + g, whatever c = max(burst, 1) is
            int n = all.size() - 1;
            for (int i = n - 1; i >= 0; i--) {
                long w = now - all.get(i);
                if (w > k.checkWindowNs()) {
                    break;
                }
                double bound = k.rate() * w / 1e9 + (double) gs * c + gs + 1e-6;
                if (n - i + 1 > bound) {
                    fail("spec bound: " + (n - i + 1) + " admissions in " + w + " ns, bound rate·w + g·burst + g = "
                            + bound);
                    return;
                }
            }
        }
    }

    private void fail(String what) {
        if (violation == null) {
            violation = "at " + now + " ns: " + what;
        }
    }

    // ---- helpers ----

    private void at(long when, Runnable action) {
        queue.add(new Event(when, seq++, action));
    }

    private long exp(double meanNs) {
        return Math.max(1, (long) (-Math.log(1 - rnd.nextDouble()) * meanNs));
    }

    private long randomBetween(long lo, long hi) {
        return hi <= lo ? lo : lo + (long) (rnd.nextDouble() * (hi - lo));
    }
}
