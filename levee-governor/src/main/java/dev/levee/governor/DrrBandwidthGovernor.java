package dev.levee.governor;

import dev.levee.core.Ticker;
import java.util.HashMap;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Implements {@link BandwidthGovernor} for one direction: two levels of token buckets and a
 * deficit-round-robin scheduler over principals (docs/design.md §8).
 *
 * <h2>Buckets</h2>
 * There is one bucket for the direction (shared) and one per principal. A bucket of rate {@code R}
 * bytes/s holds at most {@code burst = min(R / 10, 1 MiB)} bytes. Its content ("credit") is kept
 * in nano-bytes (10<sup>-9</sup> byte): {@code dt} ns of refill add exactly {@code dt × R}
 * nano-bytes, so the fraction of a byte that a short interval earns is carried to the next refill
 * instead of being rounded away, and the long-run rate is exact. Refill compares {@code dt} with
 * the time still needed to fill the bucket before multiplying, so a bucket idle for hours at
 * 10 GB/s becomes full without forming {@code dt × R} (which would overflow). A grant of {@code n}
 * bytes needs {@code n × 10⁹} nano-bytes in <em>both</em> buckets and debits both; credit never goes
 * negative. Hence, for any window {@code [s, e]}: granted ≤ credit(s) + R × (e − s) ≤ burst +
 * R × (e − s) — the ceiling of docs/design.md §8 for windows that start at creation (buckets start full)
 * or at a full bucket, and in fact for every window. A bucket of rate 0 is disabled: it always pays.
 *
 * <h2>Requests and quanta</h2>
 * A stream has at most one outstanding request, of any size. The request is granted in quanta of
 * at most {@code min(64 KiB, shared burst, principal burst)} bytes, so that a quantum always fits
 * in a full bucket, and completes when all its bytes are granted. While it waits it counts as one
 * waiting quantum (at most {@code maxWaitingQuanta} per direction, 256 by default; the next one is
 * refused at once). The stream object itself is the queue node, so waiting allocates nothing but
 * the future an asynchronous caller receives.
 *
 * <h2>Scheduling</h2>
 * A principal with waiting requests keeps them in a FIFO and is in exactly one of two places:
 * <ul>
 *   <li><b>blocked</b>: its own bucket cannot pay its head quantum. It sits in a min-heap ordered by
 *   {@code readyAt}, the exact time its bucket will hold that quantum. The time is stable because
 *   only the scheduler debits the bucket of a principal that has waiting requests. A blocked
 *   principal takes no part in the round robin: waiting for its own bucket, it holds up nobody.</li>
 *   <li><b>active</b>: its own bucket can pay. It sits in a circular ring served by deficit round
 *   robin (Shreedhar and Varghese, 1996) for the shared bucket. On reaching the head of the ring, a
 *   principal's deficit grows by {@code Q}, the direction's largest quantum; it is granted quanta
 *   while its deficit covers them, then the ring rotates. Backlogged principals therefore receive
 *   equal bytes per round, within one quantum. A principal whose FIFO empties or which becomes
 *   blocked leaves the ring and forfeits its deficit; it re-enters at the tail.</li>
 * </ul>
 * <b>Head-of-line protection:</b> when the principal at the head of the ring could pay from its
 * own bucket and its deficit but the shared bucket is short, the scheduler stops and waits for the
 * shared bucket to cover that quantum. Nobody behind it, and no newcomer (see the fast path), may
 * take the shared refill first, so a stream of small quanta cannot starve a large one.
 *
 * <p>One pass, {@code drain(now)}, first moves every blocked principal whose {@code readyAt} has
 * come to the tail of the ring, then grants every quantum it can (a batch), then computes the
 * earliest moment anything can be granted next: when the shared bucket covers the head's quantum
 * if the ring is not empty, else the earliest {@code readyAt}. (A blocked principal that becomes
 * ready while the ring is waiting only joins the tail, so it cannot be granted earlier.) A pass
 * runs on every request that has to wait, every cancellation, reconfiguration and timer wake-up;
 * nothing polls.
 *
 * <h2>Timer</h2>
 * At most one task is scheduled, for the earliest moment. It is re-armed only when that moment
 * moves earlier; when it moves later the task fires early, the pass grants nothing and arms for
 * the new moment. There are no per-stream timers.
 *
 * <h2>Fast path</h2>
 * A request that fits in one quantum, from a principal with nothing waiting, while the ring is
 * empty and no blocked principal is overdue, is granted at once if both buckets pay: a clock read,
 * a few multiplications and no allocation, under the lock.
 *
 * <h2>Threads</h2>
 * One {@link ReentrantLock} guards all state; the ticker is read under it, so time never runs
 * backwards for the buckets. Decisions (grant, refusal, cancellation) are taken under the lock and
 * linked into a list through the stream nodes; the outcomes are published after the lock is
 * released: the publisher reads what it needs from a node, then writes the node's volatile state
 * (after which the owner may reuse it), then completes the future or unparks the blocked thread.
 *
 * <h2>Fencing and closing</h2>
 * The ownership check is consulted when a stream opens and before each grant. While it answers
 * false, a new stream is refused with {@link OwnershipLostException} (the gateway answers
 * {@code 503 SlowDown}) and nothing is granted: requests of open streams wait, so their transfers
 * stall under back-pressure, and resume when the owner calls {@link #reconfigure} (or {@link
 * #wake}) after regaining the budget — never granted unlimited (docs/design.md §8, §10). A bucket of rate
 * {@link GovernorConfig#HELD} likewise grants nothing until its rate changes. {@link #close()}
 * fails every waiting request with {@link GovernorClosedException}, cancels the timer and refuses
 * everything later.
 */
final class DrrBandwidthGovernor implements BandwidthGovernor {

    /** Observes every grant under the lock; a seam for tests, which check the rate bound per principal. */
    @FunctionalInterface
    interface GrantObserver {
        GrantObserver NONE = (principalId, bytes, nowNs) -> { };

        void granted(String principalId, long bytes, long nowNs);
    }

    // stream states (StreamNode.state)
    static final int IDLE = 0;
    static final int WAITING = 1;
    static final int COMPLETING = 2;

    // outcomes (StreamNode.outcome) and results of submit()
    static final int GRANTED = 0;
    static final int CANCELLED = 1;
    static final int REFUSED_QUEUE_FULL = 2;
    static final int REFUSED_OWNERSHIP = 3;
    static final int REFUSED_CLOSED = 4;
    static final int ENQUEUED = 5;
    static final int NOT_GRANTED = 6;

    private final ReentrantLock lock = new ReentrantLock();
    private final Ticker ticker;
    private final OwnershipCheck ownership;
    private final GrantObserver observer;
    private final Direction direction;
    private final CompletionStage<Void> grantedStage = CompletableFuture.completedStage(null);

    // all below guarded by lock (config is also volatile for lock-free reads)
    private volatile GovernorConfig config;
    private final TokenBucket shared;
    private long drrQuantum;
    private final HashMap<String, Principal> principals = new HashMap<>();
    private Principal ringHead;
    private final PrincipalHeap blocked = new PrincipalHeap();
    private int waiting;
    private boolean closed;
    private StreamNode doneHead;
    private StreamNode doneTail;
    private final WakeUp wakeUp;

    private long grantedBytes;
    private long grantedQuanta;
    private long refusedQueueFull;
    private long refusedOwnership;
    private long refusedClosed;
    private long refusedPrincipalTable;
    private long cancellations;
    private boolean stalled;

    DrrBandwidthGovernor(GovernorConfig config, Ticker ticker, GovernorTimer timer, OwnershipCheck ownership,
                         GrantObserver observer) {
        this.config = config;
        this.ticker = ticker;
        this.wakeUp = new WakeUp(timer, this::onTimer);
        this.ownership = ownership;
        this.observer = observer;
        this.direction = config.direction();
        this.shared = new TokenBucket(config.rateBytesPerSecond(), config.sharedBurstBytes(), ticker.read());
        this.drrQuantum = config.quantumFor(0);
    }

    @Override
    public GovernedStream openStream(String principalId) {
        if (principalId.isBlank()) {
            throw new IllegalArgumentException("principal id is blank");
        }
        lock.lock();
        try {
            if (closed) {
                refusedClosed++;
                throw closedException();
            }
            if (!ownership.owned()) {
                refusedOwnership++;
                throw new OwnershipLostException();
            }
            Principal p = principals.get(principalId);
            if (p == null) {
                GovernorConfig c = config;
                if (principals.size() >= c.maxPrincipals()) {
                    refusedPrincipalTable++;
                    throw new PrincipalTableFullException(c.maxPrincipals());
                }
                long rate = c.principalRate(principalId);
                p = new Principal(principalId, new TokenBucket(rate, ticker.read()),
                        c.quantumFor(rate));
                principals.put(principalId, p);
            }
            return new StreamNode(this, p);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void reconfigure(GovernorConfig newConfig) {
        if (newConfig.direction() != direction) {
            throw new IllegalArgumentException("governor shapes " + direction + ", configuration is for "
                    + newConfig.direction());
        }
        StreamNode done;
        lock.lock();
        try {
            config = newConfig;
            if (closed) {
                return;
            }
            long now = ticker.read();
            shared.setRate(newConfig.rateBytesPerSecond(), newConfig.sharedBurstBytes(), now);
            drrQuantum = newConfig.quantumFor(0);
            for (Principal p : principals.values()) {
                long rate = newConfig.principalRate(p.id);
                p.bucket.setRate(rate, now);
                p.quantum = newConfig.quantumFor(rate);
                if (p.blocked()) {
                    p.readyAt = now + p.bucket.nanosUntil(headQuantum(p));
                }
            }
            blocked.heapify();
            drain(now);
            done = takeDone();
        } finally {
            lock.unlock();
        }
        publish(done);
    }

    @Override
    public GovernorConfig config() {
        return config;
    }

    @Override
    public GovernorStats stats() {
        lock.lock();
        try {
            return new GovernorStats(direction, grantedBytes, grantedQuanta, waiting, principals.size(),
                    refusedQueueFull, refusedOwnership, refusedClosed, refusedPrincipalTable, cancellations);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void wake() {
        pass(null);
    }

    @Override
    public boolean stalled() {
        lock.lock();
        try {
            return stalled;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void usage(UsageVisitor visitor) {
        lock.lock();
        try {
            for (Principal p : principals.values()) {
                int w = 0;
                for (StreamNode r = p.head; r != null; r = r.next) {
                    w++;
                }
                visitor.principal(p.id, p.grantedBytes, p.waitedBytes, w);
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        StreamNode done;
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            refusedClosed += refuseAll(REFUSED_CLOSED);
            wakeUp.cancel();
            done = takeDone();
        } finally {
            lock.unlock();
        }
        publish(done);
    }

    // ---------------------------------------------------------------- requests

    /**
     * Submits a request of {@code s}: grants it at once (fast path), or, unless {@code fastOnly},
     * enqueues it with the given completion target. Returns {@link #GRANTED}, {@link #ENQUEUED},
     * {@link #NOT_GRANTED} (fastOnly) or a refusal.
     */
    int submit(StreamNode s, long bytes, boolean fastOnly, GrantFuture future, Thread waiter) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes must be ≥ 0, got " + bytes);
        }
        StreamNode done;
        lock.lock();
        try {
            if (s.closed) {
                throw new IllegalStateException("stream is closed");
            }
            if (s.state != IDLE) {
                throw new IllegalStateException("a request of this stream is outstanding (one at a time)");
            }
            if (closed) {
                refusedClosed++;
                return REFUSED_CLOSED;
            }
            if (bytes == 0) {
                return GRANTED;
            }
            long now = ticker.read();
            Principal p = s.principal;
            if (bytes <= p.quantum && ownership.owned() && p.head == null && ringHead == null
                    && (blocked.isEmpty() || blocked.peek().readyAt - now > 0)) {
                shared.refill(now);
                p.bucket.refill(now);
                if (shared.canPay(bytes) && p.bucket.canPay(bytes)) {
                    shared.debit(bytes);
                    p.bucket.debit(bytes);
                    p.grantedBytes += bytes;
                    grantedBytes += bytes;
                    grantedQuanta++;
                    observer.granted(p.id, bytes, now);
                    return GRANTED;
                }
            }
            if (fastOnly) {
                return NOT_GRANTED;
            }
            int max = config.maxWaitingQuanta();
            if (waiting >= max) {
                refusedQueueFull++;
                return REFUSED_QUEUE_FULL;
            }
            s.remaining = bytes;
            s.future = future;
            s.waiter = waiter;
            s.state = WAITING;
            enqueue(s, now);
            drain(now);
            done = takeDone();
        } finally {
            lock.unlock();
        }
        publish(done);
        return ENQUEUED;
    }

    /** Cancels the waiting request of {@code s} (only if its future is {@code expected}, when given). */
    boolean cancel(StreamNode s, GrantFuture expected) {
        StreamNode done;
        lock.lock();
        try {
            if (s.state != WAITING || (expected != null && s.future != expected)) {
                return false;
            }
            long now = ticker.read();
            remove(s, now);
            cancellations++;
            finish(s, CANCELLED);
            drain(now);
            done = takeDone();
        } finally {
            lock.unlock();
        }
        publish(done);
        return true;
    }

    void closeStream(StreamNode s) {
        lock.lock();
        try {
            s.closed = true;
        } finally {
            lock.unlock();
        }
        cancel(s, null);
    }

    long quantumOf(Principal p) {
        lock.lock();
        try {
            return p.quantum;
        } finally {
            lock.unlock();
        }
    }

    /** Blocks until the request of {@code s} is published; see {@link GovernedStream#acquire}. */
    void await(StreamNode s) throws InterruptedException {
        boolean interrupted = false;
        while (s.state != IDLE) {
            LockSupport.park(this);
            if (Thread.interrupted()) {
                interrupted = true;
                cancel(s, null); // if it was already decided, wait for the decision to be published
            }
        }
        int outcome = s.outcome;
        if (outcome == CANCELLED && interrupted) {
            throw new InterruptedException("interrupted while waiting for bandwidth; request cancelled");
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        if (outcome == CANCELLED) {
            throw new CancellationException("bandwidth request cancelled");
        }
        if (outcome != GRANTED) {
            throw refusal(outcome);
        }
    }

    RefusedException refusal(int outcome) {
        return switch (outcome) {
            case REFUSED_QUEUE_FULL -> new WaitQueueFullException("bandwidth governor (" + direction + ")",
                    config.maxWaitingQuanta());
            case REFUSED_OWNERSHIP -> new OwnershipLostException();
            case REFUSED_CLOSED -> closedException();
            default -> throw new IllegalArgumentException("not a refusal: " + outcome);
        };
    }

    private GovernorClosedException closedException() {
        return new GovernorClosedException("bandwidth governor (" + direction + ")");
    }

    CompletionStage<Void> grantedStage() {
        return grantedStage;
    }

    // ---------------------------------------------------------------- scheduler (under lock)

    private static long headQuantum(Principal p) {
        return Math.min(p.head.remaining, p.quantum);
    }

    private void enqueue(StreamNode s, long now) {
        Principal p = s.principal;
        boolean wasIdle = p.head == null;
        s.prev = p.tail;
        s.next = null;
        if (wasIdle) {
            p.head = s;
        } else {
            p.tail.next = s;
        }
        p.tail = s;
        waiting++;
        if (wasIdle) {
            place(p, now);
        }
    }

    /** Puts a principal that has just got a head request into the ring or the blocked heap. */
    private void place(Principal p, long now) {
        long size = headQuantum(p);
        p.bucket.refill(now);
        if (p.bucket.canPay(size)) {
            ringAppend(p);
        } else {
            p.readyAt = now + p.bucket.nanosUntil(size);
            blocked.add(p);
        }
    }

    /** Removes a waiting request from its principal's FIFO and fixes the principal's place. */
    private void remove(StreamNode s, long now) {
        Principal p = s.principal;
        boolean wasHead = p.head == s;
        if (s.prev != null) {
            s.prev.next = s.next;
        } else {
            p.head = s.next;
        }
        if (s.next != null) {
            s.next.prev = s.prev;
        } else {
            p.tail = s.prev;
        }
        s.prev = null;
        s.next = null;
        waiting--;
        if (p.head == null) {
            if (p.active()) {
                ringRemove(p);
            } else if (p.blocked()) {
                blocked.remove(p);
            }
        } else if (wasHead && p.blocked()) {
            blocked.remove(p);
            place(p, now);
        }
    }

    private void ringAppend(Principal p) {
        p.deficit = 0;
        p.visited = false;
        if (ringHead == null) {
            ringHead = p;
            p.prev = p;
            p.next = p;
        } else {
            Principal tail = ringHead.prev;
            p.prev = tail;
            p.next = ringHead;
            tail.next = p;
            ringHead.prev = p;
        }
    }

    private void ringRemove(Principal p) {
        if (p.next == p) {
            ringHead = null;
        } else {
            p.prev.next = p.next;
            p.next.prev = p.prev;
            if (ringHead == p) {
                ringHead = p.next;
            }
        }
        p.prev = null;
        p.next = null;
        p.deficit = 0;
        p.visited = false;
    }

    /** Grants every quantum grantable at {@code now}, in round-robin order, then arms the timer. */
    private void drain(long now) {
        stalled = false;
        while (!blocked.isEmpty() && blocked.peek().readyAt - now <= 0) {
            ringAppend(blocked.poll());
        }
        shared.refill(now);
        Principal p;
        while ((p = ringHead) != null) {
            StreamNode r = p.head;
            long size = Math.min(r.remaining, p.quantum);
            TokenBucket own = p.bucket;
            own.refill(now);
            if (!own.canPay(size)) {
                ringRemove(p);
                p.readyAt = now + own.nanosUntil(size);
                blocked.add(p);
                continue;
            }
            if (!p.visited) {
                p.visited = true;
                p.deficit += drrQuantum;
            }
            if (p.deficit < size) {
                p.visited = false;
                ringHead = p.next;
                continue;
            }
            if (!shared.canPay(size)) {
                break; // head-of-line: nobody overtakes p on the shared bucket
            }
            if (!ownership.owned()) {
                stalled = true;
                return; // fenced: nothing granted, nothing refused; the owner wakes us when it is back
            }
            shared.debit(size);
            own.debit(size);
            p.deficit -= size;
            r.remaining -= size;
            p.grantedBytes += size;
            p.waitedBytes += size;
            grantedBytes += size;
            grantedQuanta++;
            observer.granted(p.id, size, now);
            if (r.remaining == 0) {
                p.head = r.next;
                if (r.next != null) {
                    r.next.prev = null;
                } else {
                    p.tail = null;
                }
                r.next = null;
                waiting--;
                finish(r, GRANTED);
                if (p.head == null) {
                    ringRemove(p);
                }
            }
        }
        arm(now);
    }

    /** Arms the timer for the earliest moment anything can be granted, unless armed no later. */
    private void arm(long now) {
        long next;
        if (ringHead != null) {
            next = now + Math.max(1, shared.nanosUntil(headQuantum(ringHead)));
        } else if (!blocked.isEmpty()) {
            next = blocked.peek().readyAt;
        } else {
            return;
        }
        wakeUp.armFor(next, now);
    }

    private void onTimer(WakeUp.Task task) {
        pass(task);
    }

    /** One scheduling pass now (after the timer's {@code fired} task, when given), then publication. */
    private void pass(WakeUp.Task fired) {
        StreamNode done;
        lock.lock();
        try {
            if (fired != null) {
                wakeUp.fired(fired);
            }
            if (closed) {
                return;
            }
            drain(ticker.read());
            done = takeDone();
        } finally {
            lock.unlock();
        }
        publish(done);
    }

    /** Refuses every waiting request with {@code outcome}; returns how many. */
    private int refuseAll(int outcome) {
        int n = 0;
        Principal p;
        while ((p = ringHead) != null) {
            n += refuseQueue(p, outcome);
            ringRemove(p);
        }
        for (int i = 0; i < blocked.size(); i++) {
            n += refuseQueue(blocked.get(i), outcome);
        }
        blocked.clear();
        waiting -= n;
        return n;
    }

    private int refuseQueue(Principal p, int outcome) {
        int n = 0;
        StreamNode r = p.head;
        while (r != null) {
            StreamNode next = r.next;
            r.prev = null;
            r.next = null;
            finish(r, outcome);
            n++;
            r = next;
        }
        p.head = null;
        p.tail = null;
        return n;
    }

    private void finish(StreamNode s, int outcome) {
        s.outcome = outcome;
        s.state = COMPLETING;
        if (doneTail == null) {
            doneHead = s;
        } else {
            doneTail.nextDone = s;
        }
        doneTail = s;
    }

    private StreamNode takeDone() {
        StreamNode h = doneHead;
        doneHead = null;
        doneTail = null;
        return h;
    }

    // ---------------------------------------------------------------- publication (outside the lock)

    private void publish(StreamNode h) {
        while (h != null) {
            StreamNode n = h;
            h = n.nextDone;
            n.nextDone = null;
            GrantFuture f = n.future;
            Thread t = n.waiter;
            int outcome = n.outcome;
            n.future = null;
            n.waiter = null;
            n.state = IDLE; // publishes the outcome; from here on the owner may reuse n
            if (f != null) {
                switch (outcome) {
                    case GRANTED -> f.complete(null);
                    case CANCELLED -> f.completeExceptionally(new CancellationException("bandwidth request cancelled"));
                    default -> f.completeExceptionally(refusal(outcome));
                }
            }
            if (t != null && t != Thread.currentThread()) {
                LockSupport.unpark(t);
            }
        }
    }

    /** The future of an asynchronous request; cancelling it cancels the request. */
    static final class GrantFuture extends CompletableFuture<Void> {
        private final StreamNode stream;

        GrantFuture(StreamNode stream) {
            this.stream = stream;
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            stream.governor.cancel(stream, this);
            return isCancelled();
        }
    }

    /** A stream, and the queue node of its (single) outstanding request. */
    static final class StreamNode implements GovernedStream {
        final DrrBandwidthGovernor governor;
        final Principal principal;

        /** IDLE, WAITING or COMPLETING; written under the lock, except COMPLETING → IDLE by the publisher. */
        volatile int state;
        // guarded by the governor's lock; read by the publisher before it writes state
        int outcome;
        long remaining;
        boolean closed;
        StreamNode prev;
        StreamNode next;
        StreamNode nextDone;
        GrantFuture future;
        Thread waiter;

        StreamNode(DrrBandwidthGovernor governor, Principal principal) {
            this.governor = governor;
            this.principal = principal;
        }

        @Override
        public String principalId() {
            return principal.id;
        }

        @Override
        public long quantumBytes() {
            return governor.quantumOf(principal);
        }

        @Override
        public boolean tryAcquire(long bytes) {
            int r = governor.submit(this, bytes, true, null, null);
            if (r == GRANTED) {
                return true;
            }
            if (r == NOT_GRANTED) {
                return false;
            }
            throw governor.refusal(r);
        }

        @Override
        public void acquire(long bytes) throws InterruptedException {
            int r = governor.submit(this, bytes, false, null, Thread.currentThread());
            if (r == GRANTED) {
                return;
            }
            if (r != ENQUEUED) {
                throw governor.refusal(r);
            }
            governor.await(this);
        }

        @Override
        public CompletionStage<Void> acquireAsync(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("bytes must be ≥ 0, got " + bytes);
            }
            // The future is allocated only when the request has to wait: try the fast path first.
            int r = governor.submit(this, bytes, true, null, null);
            if (r == GRANTED) {
                return governor.grantedStage();
            }
            if (r != NOT_GRANTED) {
                return CompletableFuture.failedStage(governor.refusal(r));
            }
            GrantFuture f = new GrantFuture(this);
            r = governor.submit(this, bytes, false, f, null);
            if (r == GRANTED) {
                return governor.grantedStage();
            }
            if (r != ENQUEUED) {
                return CompletableFuture.failedStage(governor.refusal(r));
            }
            return f;
        }

        @Override
        public boolean cancel() {
            return governor.cancel(this, null);
        }

        @Override
        public void close() {
            governor.closeStream(this);
        }

        @Override
        public String toString() {
            return "GovernedStream[" + governor.direction + "]";
        }
    }
}
