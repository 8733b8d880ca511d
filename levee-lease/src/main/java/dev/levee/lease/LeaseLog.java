package dev.levee.lease;

/**
 * Where {@link ShareKeeper} says what happens to its lease. levee-lease does no I/O: the gateway
 * passes one that writes to its logger. Messages are SLF4J-style patterns ({@code {}} for each
 * argument).
 */
public interface LeaseLog {

    /** A log that says nothing (tests, simulations). */
    static LeaseLog none() {
        return new LeaseLog() {
            @Override
            public void debug(String pattern, Object... args) {
            }

            @Override
            public void info(String pattern, Object... args) {
            }

            @Override
            public void warn(String pattern, Object... args) {
            }

            @Override
            public void error(String pattern, Object... args) {
            }
        };
    }

    /** A store call that failed or timed out; the next round retries. */
    void debug(String pattern, Object... args);

    /** A lease granted, shares valid again, a new budget in force. */
    void info(String pattern, Object... args);

    /** The lease lost: failing closed. */
    void warn(String pattern, Object... args);

    /** A budget document refused. */
    void error(String pattern, Object... args);
}
