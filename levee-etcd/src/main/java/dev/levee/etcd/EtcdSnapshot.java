package dev.levee.etcd;

import dev.levee.core.Ticker;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.common.exception.CompactedException;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import java.util.Arrays;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One consistent read of every key under a prefix, in pages (issue 10, defect 3).
 *
 * <p>The first page is read at etcd's current revision; every further page is read at that same
 * revision, continuing after the last key returned, so the pages together are the state of one
 * revision however many keys there are (a single range read of 100 000 buckets would exceed any sane
 * gRPC message limit). A page that exceeds the client's inbound limit is read again with a smaller
 * page size, down to one key; a single value that still exceeds it is not read: its key (read
 * keys-only) is listed in {@link #tooLarge()}. Values larger than {@code maxValueBytes} are listed in
 * {@link #oversized()} with their size and not decoded. When the revision is compacted while paging,
 * the read starts again at the new current revision.
 *
 * @param revision  the etcd revision of the whole read
 * @param values    relative key → value (UTF-8), in key order
 * @param oversized relative key → value size in bytes, for values above the value limit
 * @param tooLarge  relative keys of values above the client's inbound message limit
 */
public record EtcdSnapshot(long revision, Map<String, String> values, Map<String, Long> oversized,
        java.util.Set<String> tooLarge) {

    /** Default number of keys per page. */
    public static final int DEFAULT_PAGE_KEYS = 1000;

    /**
     * Reads the prefix.
     *
     * @param client        the etcd client
     * @param prefix        the prefix, ending with {@code /}; keys are returned relative to it
     * @param maxValueBytes values larger than this, in bytes, are listed as oversized and not kept
     * @param pageKeys      keys per page, ≥ 1 (default {@value #DEFAULT_PAGE_KEYS})
     * @param timeoutMs     time allowed for the whole read, in milliseconds
     * @param ticker        the monotonic clock the time allowed is measured on ({@code SystemTicker} in production)
     * @return the snapshot
     * @throws ExecutionException   when etcd answers a page with an error (other than a message that
     *                              is too large, or a compaction)
     * @throws TimeoutException     when the whole read takes longer than {@code timeoutMs}
     * @throws InterruptedException when interrupted
     */
    public static EtcdSnapshot read(Client client, String prefix, int maxValueBytes, int pageKeys, long timeoutMs,
                                    Ticker ticker) throws ExecutionException, TimeoutException, InterruptedException {
        long deadline = ticker.read() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        for (int attempt = 1; ; attempt++) {
            try {
                return readOnce(client, prefix, maxValueBytes, Math.max(1, pageKeys), deadline, ticker);
            } catch (ExecutionException e) {
                boolean compacted = e.getCause() instanceof CompactedException
                        || String.valueOf(e.getCause() == null ? null : e.getCause().getMessage()).contains("compacted");
                if (!compacted || attempt >= 5) {
                    throw e;
                }
                // the revision of the first page was compacted while paging: start again at the current one
            }
        }
    }

    private static EtcdSnapshot readOnce(Client client, String prefix, int maxValueBytes, int pageKeys, long deadline,
                                         Ticker ticker) throws ExecutionException, TimeoutException, InterruptedException {
        ByteSequence end = rangeEnd(Etcd.bytes(prefix));
        ByteSequence from = Etcd.bytes(prefix);
        Map<String, String> values = new TreeMap<>();
        Map<String, Long> oversized = new TreeMap<>();
        java.util.Set<String> tooLarge = new java.util.TreeSet<>();
        long revision = 0; // 0: etcd's current revision, for the first page
        int limit = pageKeys;
        while (true) {
            GetOption opt = GetOption.builder().withRange(end).withLimit(limit).withRevision(revision).build();
            GetResponse page;
            try {
                page = client.getKVClient().get(from, opt).get(remaining(deadline, ticker), TimeUnit.NANOSECONDS);
            } catch (ExecutionException e) {
                if (!Etcd.messageTooLarge(e)) {
                    throw e;
                }
                if (limit > 1) {
                    limit = Math.max(1, limit / 4);
                    continue;
                }
                // one value alone exceeds the inbound limit: name it (keys only) and step over it
                GetResponse key = client.getKVClient().get(from, GetOption.builder().withRange(end).withLimit(1)
                        .withRevision(revision).withKeysOnly(true).build()).get(remaining(deadline, ticker), TimeUnit.NANOSECONDS);
                if (revision == 0) {
                    revision = key.getHeader().getRevision();
                }
                if (key.getKvs().isEmpty()) {
                    break;
                }
                ByteSequence k = key.getKvs().get(0).getKey();
                tooLarge.add(Etcd.string(k).substring(prefix.length()));
                from = after(k);
                if (!key.isMore()) {
                    break;
                }
                continue;
            }
            if (revision == 0) {
                revision = page.getHeader().getRevision();
            }
            for (KeyValue kv : page.getKvs()) {
                String rel = Etcd.string(kv.getKey()).substring(prefix.length());
                if (kv.getValue().size() > maxValueBytes) {
                    oversized.put(rel, (long) kv.getValue().size());
                } else {
                    values.put(rel, Etcd.string(kv.getValue()));
                }
            }
            if (!page.isMore() || page.getKvs().isEmpty()) {
                break;
            }
            from = after(page.getKvs().get(page.getKvs().size() - 1).getKey());
            limit = Math.min(pageKeys, limit * 2);
        }
        return new EtcdSnapshot(revision, Collections.unmodifiableMap(values), Collections.unmodifiableMap(oversized),
                Collections.unmodifiableSet(tooLarge));
    }

    private static long remaining(long deadline, Ticker ticker) throws TimeoutException {
        long left = deadline - ticker.read();
        if (left <= 0) {
            throw new TimeoutException("etcd snapshot read took too long");
        }
        return left;
    }

    /** The smallest key after {@code k}: {@code k + "\0"}. */
    static ByteSequence after(ByteSequence k) {
        byte[] b = Arrays.copyOf(k.getBytes(), k.size() + 1);
        return ByteSequence.from(b);
    }

    /** The end of the range of keys starting with {@code prefix} (its last byte below 0xff plus one). */
    static ByteSequence rangeEnd(ByteSequence prefix) {
        byte[] b = prefix.getBytes();
        for (int i = b.length - 1; i >= 0; i--) {
            if ((b[i] & 0xff) != 0xff) {
                byte[] out = Arrays.copyOf(b, i + 1);
                out[i]++;
                return ByteSequence.from(out);
            }
        }
        return ByteSequence.from(new byte[] {0}); // every key
    }
}
