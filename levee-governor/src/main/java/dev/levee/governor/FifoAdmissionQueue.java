package dev.levee.governor;

import dev.levee.core.Ticker;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Implements {@link AdmissionQueue} with one FIFO of waiters per principal and class.
 *
 * <h2>Model</h2>
 * Each principal that has requests in flight or waiting has a slot record: per class, the count in
 * flight and a FIFO of waiters. A request is admitted at once when its class is under the limit and
 * nobody of the same principal and class waits (so the FIFO is never overtaken). Releasing a slot
 * hands it straight to the head of that one FIFO: a release wakes only that principal, and a
 * principal at its limit never holds up another. Slot records of principals with nothing in
 * flight and nothing waiting are dropped, so memory follows the active principals.
 *
 * <p>Every waiter is also linked, in arrival order, into one global list. The timeout is the same
 * for all, so arrival order is deadline order: one timer task, armed for the oldest waiter's
 * deadline, refuses every expired waiter when it fires and arms for the next oldest. Deadlines
 * only grow, so a new waiter never needs an earlier wake-up; when the oldest waiter leaves early
 * (admitted or cancelled) the armed task fires early, expires nothing and re-arms.
 *
 * <h2>Threads</h2>
 * One {@link ReentrantLock} guards all state; futures are completed after it is released. If a
 * caller completed or cancelled a future behind the queue's back while it was being admitted, the
 * admission is released again, so a slot can never leak.
 */
final class FifoAdmissionQueue implements AdmissionQueue {

    private static final int CLASSES = AdmissionClass.values().length;

    private final ReentrantLock lock = new ReentrantLock();
    private final AdmissionConfig config;
    private final Ticker ticker;

    // guarded by lock
    private final HashMap<String, Slots> table = new HashMap<>();
    private Waiter oldest;
    private Waiter newest;
    private int waiting;
    private boolean closed;
    private final int[] inFlight = new int[CLASSES];
    private final WakeUp wakeUp;

    private long admitted;
    private long refusedQueueFull;
    private long refusedTimeout;
    private long refusedClosed;
    private long cancellations;

    FifoAdmissionQueue(AdmissionConfig config, Ticker ticker, GovernorTimer timer) {
        this.config = config;
        this.ticker = ticker;
        this.wakeUp = new WakeUp(timer, this::onTimer);
    }

    @Override
    public Admission admit(String principalId, AdmissionClass admissionClass) throws InterruptedException {
        CompletableFuture<Admission> f = submit(principalId, admissionClass);
        try {
            return f.get();
        } catch (InterruptedException e) {
            if (!f.cancel(false)) {
                // Decided while we were being interrupted: the outcome is imminent; release a granted slot.
                try {
                    f.join().close();
                } catch (CompletionException | CancellationException ignored) {
                    // refused or cancelled: nothing to release
                }
            }
            throw e;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RefusedException refused) {
                throw refused;
            }
            throw new IllegalStateException("unexpected failure of an admission", e.getCause());
        }
    }

    @Override
    public CompletionStage<Admission> admitAsync(String principalId, AdmissionClass admissionClass) {
        return submit(principalId, admissionClass);
    }

    private CompletableFuture<Admission> submit(String principalId, AdmissionClass admissionClass) {
        if (principalId.isBlank()) {
            throw new IllegalArgumentException("principal id is blank");
        }
        int c = admissionClass.ordinal();
        lock.lock();
        try {
            if (closed) {
                refusedClosed++;
                return CompletableFuture.failedFuture(new GovernorClosedException("admission queue"));
            }
            Slots s = table.get(principalId);
            if (s == null) {
                s = new Slots(principalId);
                table.put(principalId, s);
            }
            if (s.head[c] == null && s.inFlight[c] < config.limit(admissionClass)) {
                return CompletableFuture.completedFuture(take(s, admissionClass));
            }
            if (waiting >= config.maxWaiters()) {
                refusedQueueFull++;
                dropIfIdle(s);
                return CompletableFuture.failedFuture(
                        new WaitQueueFullException("admission queue", config.maxWaiters()));
            }
            long now = ticker.read();
            Waiter w = new Waiter(this, s, admissionClass, now + config.waitTimeoutNanos());
            link(w);
            arm(now);
            return w;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public AdmissionConfig config() {
        return config;
    }

    @Override
    public AdmissionStats stats() {
        lock.lock();
        try {
            return new AdmissionStats(inFlight[AdmissionClass.MUTATING_UPLOAD.ordinal()],
                    inFlight[AdmissionClass.DOWNLOAD.ordinal()], waiting, admitted, refusedQueueFull,
                    refusedTimeout, refusedClosed, cancellations);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        List<Waiter> failed = new ArrayList<>();
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            while (oldest != null) {
                Waiter w = oldest;
                unlink(w);
                dropIfIdle(w.slots);
                failed.add(w);
            }
            refusedClosed += failed.size();
            wakeUp.cancel();
        } finally {
            lock.unlock();
        }
        for (Waiter w : failed) {
            w.completeExceptionally(new GovernorClosedException("admission queue"));
        }
    }

    // ---------------------------------------------------------------- under the lock

    private Ticket take(Slots s, AdmissionClass admissionClass) {
        s.inFlight[admissionClass.ordinal()]++;
        inFlight[admissionClass.ordinal()]++;
        admitted++;
        return new Ticket(this, s, admissionClass);
    }

    private void link(Waiter w) {
        int c = w.admissionClass.ordinal();
        Slots s = w.slots;
        w.prevInSlot = s.tail[c];
        if (s.tail[c] == null) {
            s.head[c] = w;
        } else {
            s.tail[c].nextInSlot = w;
        }
        s.tail[c] = w;
        w.older = newest;
        if (newest == null) {
            oldest = w;
        } else {
            newest.newer = w;
        }
        newest = w;
        w.waiting = true;
        waiting++;
    }

    private void unlink(Waiter w) {
        int c = w.admissionClass.ordinal();
        Slots s = w.slots;
        if (w.prevInSlot == null) {
            s.head[c] = w.nextInSlot;
        } else {
            w.prevInSlot.nextInSlot = w.nextInSlot;
        }
        if (w.nextInSlot == null) {
            s.tail[c] = w.prevInSlot;
        } else {
            w.nextInSlot.prevInSlot = w.prevInSlot;
        }
        if (w.older == null) {
            oldest = w.newer;
        } else {
            w.older.newer = w.newer;
        }
        if (w.newer == null) {
            newest = w.older;
        } else {
            w.newer.older = w.older;
        }
        w.prevInSlot = null;
        w.nextInSlot = null;
        w.older = null;
        w.newer = null;
        w.waiting = false;
        waiting--;
    }

    private void dropIfIdle(Slots s) {
        for (int c = 0; c < CLASSES; c++) {
            if (s.inFlight[c] != 0 || s.head[c] != null) {
                return;
            }
        }
        table.remove(s.id, s);
    }

    private void arm(long now) {
        if (oldest == null) {
            return;
        }
        long next = oldest.deadline;
        wakeUp.armFor(next, now);
    }

    // ---------------------------------------------------------------- events

    private void release(Ticket t) {
        Waiter next;
        Ticket handed = null;
        lock.lock();
        try {
            if (t.released) {
                return;
            }
            t.released = true;
            int c = t.admissionClass.ordinal();
            Slots s = t.slots;
            s.inFlight[c]--;
            inFlight[c]--;
            next = s.head[c];
            if (next != null && s.inFlight[c] < config.limit(t.admissionClass)) {
                unlink(next);
                handed = take(s, t.admissionClass);
            } else {
                next = null;
                dropIfIdle(s);
            }
        } finally {
            lock.unlock();
        }
        if (next != null && !next.complete(handed)) {
            handed.close(); // completed or cancelled behind our back: do not leak the slot
        }
    }

    private boolean cancel(Waiter w) {
        lock.lock();
        try {
            if (!w.waiting) {
                return false;
            }
            unlink(w);
            cancellations++;
            dropIfIdle(w.slots);
        } finally {
            lock.unlock();
        }
        w.completeExceptionally(new CancellationException("admission wait cancelled"));
        return true;
    }

    private void onTimer(WakeUp.Task task) {
        List<Waiter> expired = new ArrayList<>();
        lock.lock();
        try {
            wakeUp.fired(task);
            if (closed) {
                return;
            }
            long now = ticker.read();
            while (oldest != null && oldest.deadline - now <= 0) {
                Waiter w = oldest;
                unlink(w);
                dropIfIdle(w.slots);
                expired.add(w);
            }
            refusedTimeout += expired.size();
            arm(now);
        } finally {
            lock.unlock();
        }
        for (Waiter w : expired) {
            w.completeExceptionally(new AdmissionTimeoutException(config.waitTimeoutNanos()));
        }
    }

    /** Per principal: in flight and FIFO of waiters, per class. */
    private static final class Slots {
        final String id;
        final int[] inFlight = new int[CLASSES];
        final Waiter[] head = new Waiter[CLASSES];
        final Waiter[] tail = new Waiter[CLASSES];

        Slots(String id) {
            this.id = id;
        }
    }

    /** A waiting request; it is also the future its caller holds, and cancelling it cancels the wait. */
    private static final class Waiter extends CompletableFuture<Admission> {
        final FifoAdmissionQueue queue;
        final Slots slots;
        final AdmissionClass admissionClass;
        final long deadline;
        // guarded by the queue's lock
        boolean waiting;
        Waiter prevInSlot;
        Waiter nextInSlot;
        Waiter older;
        Waiter newer;

        Waiter(FifoAdmissionQueue queue, Slots slots, AdmissionClass admissionClass, long deadline) {
            this.queue = queue;
            this.slots = slots;
            this.admissionClass = admissionClass;
            this.deadline = deadline;
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            queue.cancel(this);
            return isCancelled();
        }
    }

    /** One admitted request's slot. */
    private static final class Ticket implements Admission {
        final FifoAdmissionQueue queue;
        final Slots slots;
        final AdmissionClass admissionClass;
        boolean released; // guarded by the queue's lock

        Ticket(FifoAdmissionQueue queue, Slots slots, AdmissionClass admissionClass) {
            this.queue = queue;
            this.slots = slots;
            this.admissionClass = admissionClass;
        }

        @Override
        public String principalId() {
            return slots.id;
        }

        @Override
        public AdmissionClass admissionClass() {
            return admissionClass;
        }

        @Override
        public void close() {
            queue.release(this);
        }
    }
}
