package dev.levee.lease;

/**
 * Estimates what one resource (a direction's budget, or one principal's ceiling) on one gateway
 * would use if its share allowed it: the demand the gateway publishes for max-min fair division
 * (docs/design.md §10, docs/site-bandwidth.md "Demand"). Pure: no I/O and no clock reads; the caller
 * passes each round's {@code now} and the governor's cumulative counters. Not thread-safe (one
 * instance per resource, used on the keeper's loop).
 *
 * <h2>The model</h2>
 * Each round gives the bytes granted since the previous round, how many of them were granted to
 * requests that had to wait, and how many requests wait now. A round is <em>limited</em> when the
 * share held bytes back: requests wait now, at least half the round's bytes were granted after a
 * wait, and the round used at least {@value #USED_FRACTION_PERCENT} % of its share (a round that
 * sent well below its share was held back by its clients — TCP back-pressure — not by the share).
 * A round whose requests queued while it used less than {@value #STALLED_FRACTION_PERCENT} % of its
 * share (the gateway itself was slow: CPU, a pause; or fenced) is evidence of nothing and changes nothing.
 * <ul>
 *   <li><b>What clients take</b> ({@code taken}): the bytes granted in the <em>not limited</em>
 *   rounds of the last {@value #HORIZON} rounds divided by their time (quiet rounds — nothing granted,
 *   nothing waiting: a pause between two GETs — left out) — a share that was not the
 *   bottleneck shows what the clients read. With no such round, the bytes of all of them over their
 *   time (then that is the share, and the clients would take more).</li>
 *   <li><b>Following</b> (not probing): the demand is {@code 1.05 ×} what the clients took (5 % headroom,
 *   so a share given exactly that is not the bottleneck). It rises when both the last {@value #DOWN_ROUNDS}
 *   rounds and the whole horizon say so (a few rounds' bytes swing with the socket buffers' level and the
 *   bucket's burst); it falls, to what the last {@value #DOWN_ROUNDS} rounds took (limited ones at what their share
 *   let through), only after
 *   {@value #DOWN_ROUNDS} rounds in a row more than 3 % below (hysteresis), and a target from 3 %
 *   below to 5 % above the demand in force leaves it unchanged (a dead band: the clients' jitter and the
 *   kernel's socket buffers filling and draining move neither the demand nor the shares).</li>
 *   <li><b>Probing</b>: after {@value #UP_ROUNDS} limited rounds in a row the clients want more than
 *   the share: the demand is {@code 1.25 × max(taken, share)}, again each limited round (growth by a
 *   quarter per round until the share stops being the bottleneck or max-min fairness caps it). While
 *   the horizon still holds {@value #FREE_EVIDENCE} not-limited rounds, the growth stops at {@code 1.08 ×} what the clients
 *   took in those rounds (never below the share): a new response filling the kernel's socket buffers
 *   makes a share look limited for a while, and must not push it far above what the clients read; a
 *   real rise in demand keeps it limited for the whole horizon, after which it grows freely. One
 *   not-limited round ends probing; the demand then follows what the clients took — except after growing
 *   past the cap: if that first free round took no more than {@code 1.05 ×} the demand before that step, the
 *   probe found nothing and the demand is back there at once.</li>
 *   <li><b>Newcomer</b>: no share and requests waiting: {@code budget / gateways} at once.</li>
 *   <li><b>Idle</b>: nothing granted and nothing waiting for {@value #IDLE_ROUNDS} rounds in a row:
 *   0 (the share is given back). One quiet round — a new share whose first bytes have not arrived
 *   from the backend yet, a pause between two GETs — does not give it back.</li>
 * </ul>
 * Every demand is at most the budget.
 */
public final class DemandEstimator {

    /** Rounds whose not-limited bytes and time make {@code taken}. */
    public static final int HORIZON = 10;
    /** Limited rounds in a row before probing. */
    public static final int UP_ROUNDS = 2;
    /** Rounds in a row below the dead band before the demand falls. */
    public static final int DOWN_ROUNDS = 3;
    /** Quiet rounds in a row (nothing granted, nothing waiting) before the demand is 0. */
    public static final int IDLE_ROUNDS = 2;
    /** Not-limited rounds in the horizon that cap probing (fewer: one slow round of a busy gateway caps nothing). */
    public static final int FREE_EVIDENCE = 2;
    /** A round whose requests queued while it used less than this share of its share stalled (changes nothing), percent. */
    public static final int STALLED_FRACTION_PERCENT = 50;
    /**
     * A limited round used at least this share of its share, percent. Above {@code 1 / 1.05} = 95.2 %, what a share
     * that follows its clients with 5 % headroom is used at, plus a round's jitter: at 90 % such steady rounds counted
     * as limited (most quanta wait a moment for tokens at that use of a bucket), the estimate probed 1.25× above the
     * clients' rate in 2 of 3 runs of SiteBandwidthIT on a quiet machine (issue 22 item 2). A share that is the
     * bottleneck is used at 99–100 % (the demand-shift scenario's utilisation: 0.990–1.000).
     */
    public static final int USED_FRACTION_PERCENT = 97;

    private static final double HEADROOM = 1.05;
    private static final double BAND_UP = 0.05;
    private static final double BAND_DOWN = 0.03;
    private static final double PROBE = 1.25;
    private static final double PROBE_CAP = 1.08;

    // the last HORIZON rounds, newest at (head - 1)
    private final long[] roundBytes = new long[HORIZON];
    private final long[] roundNanos = new long[HORIZON];
    private final boolean[] roundLimited = new boolean[HORIZON];
    private final boolean[] roundQuiet = new boolean[HORIZON];
    private int rounds;
    private int head;

    private long lastNow;
    private long lastGranted;
    private long lastWaited;

    private long beforeProbe = -1; // the demand before probing went past the cap; -1: not probing past it
    private long demand;
    private double lastRate;
    private double lastWaitedFraction;
    private long lastWaiting;
    private long lastShare;
    private int limitedInARow;
    private int belowInARow;
    private int quietInARow;

    /**
     * Starts an estimate whose first round counts from this baseline.
     *
     * @param now     the ticker's reading, ns
     * @param granted the resource's cumulative granted bytes then (0 for one that appears now)
     * @param waited  of those, cumulative bytes granted after a wait
     */
    public DemandEstimator(long now, long granted, long waited) {
        this.lastNow = now;
        this.lastGranted = granted;
        this.lastWaited = waited;
    }

    /**
     * Takes one round's measurement and returns the demand, bytes/s.
     *
     * @param now      the ticker's reading, ns (compared by subtraction only)
     * @param granted  bytes granted to the resource, cumulative, ≥ 0 (a smaller value than before means its
     *                 counters started again: the round counts from 0)
     * @param waited   of those, bytes granted to requests that had to wait, cumulative
     * @param waiting  requests waiting now, ≥ 0
     * @param share    the resource's share in use now, bytes/s, ≥ 0 (0: none, held)
     * @param budget   the resource's budget or ceiling, bytes/s, &gt; 0
     * @param gateways live gateways, ≥ 1
     * @return the demand, bytes/s, in [0, budget]
     */
    public long update(long now, long granted, long waited, long waiting, long share, long budget, int gateways) {
        long dt = now - lastNow;
        long bytes = granted >= lastGranted ? granted - lastGranted : granted;
        long waitedBytes = waited >= lastWaited ? waited - lastWaited : waited;
        lastNow = now;
        lastGranted = granted;
        lastWaited = waited;
        if (dt <= 0) {
            return demand; // two looks at the same instant: nothing new
        }
        boolean used = share > 0 && bytes * 1e9 / dt >= share * (USED_FRACTION_PERCENT / 100.0);
        boolean queued = waiting > 0 && waitedBytes * 2 >= bytes;
        boolean limited = waiting > 0 && (share == 0 || (used && queued));
        boolean stalled = share > 0 && bytes * 1e9 / dt < share * (STALLED_FRACTION_PERCENT / 100.0);
        if (queued && stalled) {
            // requests queued while less than half the share went out: the gateway itself was slow (CPU, a pause) or
            // fenced — evidence of neither what the clients take nor of a share too small: the round changes nothing.
            // (Between half and 90 % it is a share the clients do not fill: at that use of its bucket most quanta
            // wait a moment for tokens, and a request is often waiting when the round looks — it was taken for a
            // stall too, which froze a share 17 % above what its clients read, issue 22 item 2)
            return demand;
        }
        boolean quiet = bytes == 0 && waiting == 0;
        lastRate = bytes * 1e9 / dt;
        lastWaitedFraction = bytes > 0 ? waitedBytes / (double) bytes : 0;
        lastWaiting = waiting;
        lastShare = share;
        record(bytes, dt, limited, quiet);
        quietInARow = quiet ? quietInARow + 1 : 0;
        limitedInARow = limited ? limitedInARow + 1 : 0;
        long taken = taken();
        long next;
        if (quietInARow >= IDLE_ROUNDS) {
            next = 0;
            belowInARow = 0;
        } else if (share == 0 && waiting > 0) {
            next = Math.max(demand, budget / Math.max(1, gateways)); // a newcomer asks for an equal share at once
        } else if (limitedInARow >= UP_ROUNDS) {
            next = (long) (Math.max(taken, share) * PROBE);
            long free = takenWhileFree();
            boolean capped = free > 0 && freeRounds() >= FREE_EVIDENCE;
            if (!capped && beforeProbe < 0) {
                beforeProbe = demand;
            }
            if (capped) {
                // the clients took less than their share within the horizon: the kernel's socket buffers filling (a
                // new response) look limited too; grow no further than a little above what they took until the
                // share has been the bottleneck for the whole horizon
                next = Math.max(share, Math.min(next, (long) (free * PROBE_CAP)));
            }
            belowInARow = 0;
        } else {
            // falls to the last few rounds (older ones may hold a socket-buffer fill, which would keep the demand
            // high); rises only when the whole horizon agrees (a few rounds' bytes swing with the buffers' level)
            if (beforeProbe >= 0) {
                // the first free round after probing beyond what the clients took while free: if they took no more
                // than the demand before it allowed, the probe found nothing (a long run of rounds just above a
                // share that followed its clients closely looks limited for the whole horizon): back at once rather
                // than after DOWN_ROUNDS rounds (issue 22: 6.3-7.3 MiB/s for 1.5-3.8 s above clients reading 5.0)
                long was = beforeProbe;
                beforeProbe = -1;
                if (lastRate <= was * (1 + BAND_UP)) {
                    demand = was;
                    belowInARow = 0;
                    return demand;
                }
            }
            // the last few rounds limited or not: a limited round counts at what the share let through (a lower bound of
            // what the clients wanted). Counting only the free ones kept the rounds in which the clients happened to read
            // less, and a share that followed them closely fell below their rate (4.49-4.93 MiB/s for clients at 5.0 in
            // SiteBandwidthIT); then every round looked limited, until the horizon held only those and probing went
            // uncapped (issue 22)
            long recent = takenInAll(DOWN_ROUNDS);
            long target = recent == 0 ? (quietInARow > 0 ? demand : 0) : (long) (recent * HEADROOM) + 1;
            long longer = (long) (taken * HEADROOM) + 1;
            if (Math.min(target, longer) > demand * (1 + BAND_UP)) {
                next = Math.min(target, longer);
                belowInARow = 0;
            } else if (target < demand * (1 - BAND_DOWN)) {
                belowInARow++;
                next = belowInARow >= DOWN_ROUNDS ? target : demand;
                if (belowInARow >= DOWN_ROUNDS) {
                    belowInARow = 0;
                }
            } else {
                next = demand;
                belowInARow = 0;
            }
        }
        demand = Math.max(0, Math.min(next, budget));
        return demand;
    }

    /** Returns whether the last round probed: limited for {@value #UP_ROUNDS} rounds in a row or more. */
    public boolean probing() {
        return limitedInARow >= UP_ROUNDS;
    }

    /**
     * Describes the last round that counted, for a DEBUG log line: its rate and use of the share, how much of it
     * waited, whether it was limited, what the clients took (in all, while free), the counters in a row, and the
     * demand. Not meant to be parsed.
     */
    public String describe() {
        int last = Math.floorMod(head - 1, HORIZON);
        return String.format(java.util.Locale.ROOT, "round %.0f B/s (%.1f %% of share %d B/s), %.0f %% after a wait,"
                        + " %d waiting, %s; taken %d B/s, while free %d B/s in %d rounds; limited %d, below %d in a row;"
                        + " demand %d B/s", lastRate, lastShare > 0 ? lastRate * 100 / lastShare : 0.0, lastShare,
                lastWaitedFraction * 100, lastWaiting, rounds == 0 ? "none yet" : roundLimited[last] ? "limited"
                        : roundQuiet[last] ? "quiet" : "free", taken(), takenWhileFree(), freeRounds(), limitedInARow,
                belowInARow, demand);
    }

    /** Returns the demand last returned, bytes/s. */
    public long demand() {
        return demand;
    }

    private void record(long bytes, long dt, boolean limited, boolean quiet) {
        roundBytes[head] = bytes;
        roundNanos[head] = dt;
        roundLimited[head] = limited;
        roundQuiet[head] = quiet;
        head = (head + 1) % HORIZON;
        rounds = Math.min(HORIZON, rounds + 1);
    }

    /** Returns the not-limited, not-quiet rounds in the horizon. */
    private int freeRounds() {
        int n = 0;
        for (int i = 0; i < rounds; i++) {
            n += !roundLimited[i] && !roundQuiet[i] ? 1 : 0;
        }
        return n;
    }

    /** The not-limited rounds' bytes over their time, bytes/s; 0 when every round of the horizon was limited. */
    private long takenWhileFree() {
        long freeBytes = 0;
        long freeNanos = 0;
        for (int i = 0; i < rounds; i++) {
            if (!roundLimited[i] && !roundQuiet[i]) {
                freeBytes += roundBytes[i];
                freeNanos += roundNanos[i];
            }
        }
        return freeNanos == 0 ? 0 : (long) (freeBytes * 1e9 / freeNanos);
    }

    /** What the clients take, bytes/s: not-limited rounds' bytes over their time, else all rounds'. */
    private long taken() {
        return taken(HORIZON);
    }

    /** The last {@code last} rounds' bytes over their time, limited or not (quiet ones left out), bytes/s. */
    private long takenInAll(int last) {
        long bytes = 0;
        long nanos = 0;
        for (int i = 0; i < Math.min(rounds, last); i++) {
            int k = Math.floorMod(head - 1 - i, HORIZON);
            if (!roundQuiet[k]) {
                bytes += roundBytes[k];
                nanos += roundNanos[k];
            }
        }
        return nanos == 0 ? 0 : (long) (bytes * 1e9 / nanos);
    }

    /** {@link #taken()} over the last {@code last} rounds only. */
    private long taken(int last) {
        long freeBytes = 0;
        long freeNanos = 0;
        long allBytes = 0;
        long allNanos = 0;
        for (int i = 0; i < Math.min(rounds, last); i++) {
            int k = Math.floorMod(head - 1 - i, HORIZON);
            if (roundQuiet[k]) {
                continue; // a pause (between two GETs, before a new share's first bytes) is not what clients take
            }
            allBytes += roundBytes[k];
            allNanos += roundNanos[k];
            if (!roundLimited[k]) {
                freeBytes += roundBytes[k];
                freeNanos += roundNanos[k];
            }
        }
        if (freeNanos > 0) {
            return (long) (freeBytes * 1e9 / freeNanos);
        }
        return allNanos == 0 ? 0 : (long) (allBytes * 1e9 / allNanos);
    }
}
