package dev.levee.it;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;

/**
 * Open-loop load on loopback: issues {@code rate} requests per second for a bounded duration, each on
 * its own virtual thread, and counts outcomes. Bounded in count (rate × duration) and time.
 */
final class Load {

    enum Outcome { ACCEPTED, SLOWDOWN, OTHER }

    record Result(long offered, long accepted, long slowDown, long other, double seconds) {
    }

    private Load() {
    }

    static Result run(double rate, double seconds, LongFunction<Outcome> request) throws InterruptedException {
        AtomicLong accepted = new AtomicLong();
        AtomicLong slow = new AtomicLong();
        AtomicLong other = new AtomicLong();
        long total = (long) (rate * seconds);
        long start = System.nanoTime();
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            for (long i = 0; i < total; i++) {
                long due = start + (long) (i / rate * 1e9);
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    TimeUnit.NANOSECONDS.sleep(wait); // pacing of the load generator, not synchronisation
                }
                long seq = i;
                pool.submit(() -> {
                    switch (request.apply(seq)) {
                        case ACCEPTED -> accepted.incrementAndGet();
                        case SLOWDOWN -> slow.incrementAndGet();
                        default -> other.incrementAndGet();
                    }
                });
            }
            pool.shutdown();
            pool.awaitTermination(60, TimeUnit.SECONDS);
        }
        double secs = (System.nanoTime() - start) / 1e9;
        return new Result(total, accepted.get(), slow.get(), other.get(), secs);
    }
}
