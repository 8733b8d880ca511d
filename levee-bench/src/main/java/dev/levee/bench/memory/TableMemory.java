package dev.levee.bench.memory;

import dev.levee.core.GcraLimit;
import dev.levee.core.GcraTable;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;

/**
 * Measures the retained heap of the limiter's GCRA state table per key (issue 10, item 7): fills a
 * table with {@code N} distinct keys of {@code L} characters, forces a full GC and reads the used
 * heap, against the same JVM with an empty table measured just before; then lets every key expire and reads
 * what the emptied table still holds. Run:
 * {@code java -cp levee-bench/target/benchmarks.jar dev.levee.bench.memory.TableMemory 1000000 40}.
 */
public final class TableMemory {

    private TableMemory() {
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        int length = args.length > 1 ? Integer.parseInt(args[1]) : 40;
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        long[] now = {0};
        GcraTable table = GcraTable.create(() -> now[0], Long.MAX_VALUE / 4);
        GcraLimit limit = GcraLimit.of(1.0, 10, 1);
        long before = used(memory);
        StringBuilder sb = new StringBuilder(length);
        for (int i = 0; i < n; i++) {
            sb.setLength(0);
            sb.append(i);
            while (sb.length() < length) {
                sb.append('k');
            }
            table.attempt(sb.toString(), limit, now[0]);
        }
        table.cleanUp();
        long after = used(memory);
        System.out.printf("keys=%d key_chars=%d table_size=%d retained=%.1f MiB bytes_per_key=%.0f%n", n, length,
                table.size(), (after - before) / 1048576.0, (after - before) / (double) n);
        // every key past its horizon and a bucket of Caffeine's timer wheel: what the emptied table still holds
        // (issue 22: its arrays, 24 MiB after 1 M keys, until the table was rebuilt once it had emptied)
        now[0] += 10_000_000_000L;
        table.cleanUp();
        long emptied = used(memory);
        System.out.printf("emptied: table_size=%d retained=%.1f MiB rebuilds=%d%n", table.size(),
                (emptied - before) / 1048576.0, table.rebuilds());
        if (table.size() < 0) {
            System.out.println(table); // keeps the table reachable until here
        }
    }

    private static long used(MemoryMXBean memory) throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(100);
        }
        return memory.getHeapMemoryUsage().getUsed();
    }
}
