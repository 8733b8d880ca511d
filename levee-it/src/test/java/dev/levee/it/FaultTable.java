package dev.levee.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The table a fault suite prints (issue 10): one row per probe with what the load saw — requests,
 * errors (answers an operator's client or NGINX counts as failed, or no answer), failovers — and the
 * time from the fault to recovery, plus a note with the probe's own measurements. Each suite prints its
 * table when it ends and appends it to {@code target/it-logs/faults/fault-suite.txt}.
 */
final class FaultTable {

    static final Path FILE = Path.of("target", "it-logs", "faults", "fault-suite.txt").toAbsolutePath();

    private final String title;
    private final List<String> rows = new ArrayList<>();

    FaultTable(String title) {
        this.title = title;
    }

    /**
     * Adds a row.
     *
     * @param probe     what was broken
     * @param requests  requests (or checks) the load sent during the probe
     * @param errors    of those, the ones that failed or got no answer
     * @param failovers failovers counted by the component that recovers, or -1 when not measured
     * @param recoverMs milliseconds from the fault to recovery
     * @param note      the probe's own figures
     */
    synchronized void row(String probe, long requests, long errors, long failovers, long recoverMs, String note) {
        rows.add(String.format(Locale.ROOT, "%-46s %8d %7d %9s %8d ms  %s%n", probe, requests, errors,
                failovers < 0 ? "-" : Long.toString(failovers), recoverMs, note));
    }

    /** Adds an indented detail line under the last row (e.g. one of its errors). */
    synchronized void detail(String text) {
        rows.add("    " + text + "\n");
    }

    /** Prints the table and appends it to {@link #FILE}. */
    synchronized void print() {
        String table = title + "\n" + String.format(Locale.ROOT, "%-46s %8s %7s %9s %11s  %s%n", "probe", "requests",
                "errors", "failovers", "recover", "note") + String.join("", rows);
        System.out.println("\n" + table);
        try {
            Files.createDirectories(FILE.getParent());
            Files.writeString(FILE, table + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                    StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
