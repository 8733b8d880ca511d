package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The demo's per-second table counts each event in the second it arrives; late answers show as pending. */
class DemoTableTest {

    static final long S = 1_000_000_000L;

    @Test
    void answersCountInTheSecondTheyArriveAndWhatIsInFlightShowsAsPending() {
        AtomicLong now = new AtomicLong(0);
        DemoTable t = new DemoTable(1, 2, now::get, 0);
        List<String> rows = new ArrayList<>();
        now.set(S / 10);
        for (int i = 0; i < 3; i++) {
            t.record(0, DemoTable.OFFERED);
        }
        t.record(0, DemoTable.SLOWDOWN);
        now.set(S + S / 2); // second 1 over: two requests still in flight
        rows.addAll(t.dueRows());
        t.record(0, DemoTable.ACCEPTED); // late answer of a request of second 1, in second 2
        now.set(2 * S + S / 3); // the run is over; one answer arrives while it drains
        t.record(0, DemoTable.ACCEPTED);
        rows.addAll(t.remainingRows());
        assertThat(rows).hasSize(3);
        // ok, slow of the stream; sent, pending of all streams
        assertThat(cells(rows.get(0))).as(rows.get(0)).containsExactly(0, 1, 3, 2);
        assertThat(cells(rows.get(1))).as(rows.get(1)).containsExactly(1, 0, 0, 1);
        assertThat(rows.get(2)).startsWith("  end ");
        assertThat(cells(rows.get(2))).as(rows.get(2)).containsExactly(1, 0, 0, 0);
        assertThat(t.total(0, DemoTable.OFFERED)).isEqualTo(3);
        assertThat(t.total(0, DemoTable.ACCEPTED)).isEqualTo(2);
        assertThat(t.total(0, DemoTable.SLOWDOWN)).isEqualTo(1);
    }

    @Test
    void aRowIsPrintedOnceItsSecondIsOverAndNothingCountsIntoItAfterwards() {
        AtomicLong now = new AtomicLong(0);
        DemoTable t = new DemoTable(2, 3, now::get, 0);
        assertThat(t.dueRows()).isEmpty();
        now.set(S - 1);
        assertThat(t.dueRows()).as("second 1 is not over").isEmpty();
        now.set(S);
        assertThat(t.dueRows()).hasSize(1);
        now.set(S + 5);
        t.record(1, DemoTable.OFFERED);
        t.record(1, DemoTable.ACCEPTED);
        now.set(5 * S); // the drain: second 2 and 3 are over, no end row without late answers
        assertThat(t.dueRows()).hasSize(2);
        assertThat(t.remainingRows()).as("nothing arrived after the last second").isEmpty();
    }

    @Test
    void aRequestSentLateByTheLoadGeneratorCountsInTheLastSecond() {
        AtomicLong now = new AtomicLong(2 * S + 1);
        DemoTable t = new DemoTable(1, 2, now::get, 0);
        t.record(0, DemoTable.OFFERED);
        t.record(0, DemoTable.NOT_SENT);
        List<String> rows = t.remainingRows();
        assertThat(rows).hasSize(2);
        assertThat(cells(rows.get(1))).as(rows.get(1)).containsExactly(0, 0, 0, 0);
    }

    @Test
    void theHeaderNamesEveryStreamAndTheColumnsOfAllStreams() {
        DemoTable t = new DemoTable(2, 1, () -> 0, 0);
        assertThat(t.header()).hasSize(2);
        assertThat(t.header().get(0)).contains("[1]").contains("[2]").endsWith("| all streams");
        assertThat(t.header().get(1)).contains("|  ok slow |  ok slow |").endsWith("|  sent  pend");
    }

    /** Issue 26 item 9: a row fits 100 columns; more streams than fit continue on further lines. */
    @Test
    void everyLineFitsAHundredColumnsWhateverTheNumberOfStreams() {
        AtomicLong now = new AtomicLong(0);
        DemoTable t = new DemoTable(16, 1, now::get, 0);
        for (int i = 0; i < 16; i++) {
            t.record(i, DemoTable.OFFERED);
            t.record(i, DemoTable.SLOWDOWN);
        }
        now.set(S);
        List<String> lines = new ArrayList<>(t.header());
        List<String> row = t.dueRows();
        lines.addAll(row);
        assertThat(lines).allMatch(l -> l.length() <= DemoTable.WIDTH, "at most 100 columns");
        assertThat(row).as("16 streams: three lines a second").hasSize(3);
        assertThat(row.get(0)).startsWith("    1 |").endsWith("|    16     0");
        assertThat(row.get(1)).startsWith("      |");
        assertThat(t.header()).hasSize(6);
    }

    static long[] cells(String row) {
        String[] f = row.trim().split("\\s*\\|\\s*|\\s+");
        return java.util.Arrays.stream(f).skip(1).filter(x -> !x.isEmpty()).mapToLong(Long::parseLong).toArray();
    }
}
