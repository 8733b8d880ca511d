package dev.levee.etcd;

import dev.levee.lease.GatewayEntry;
import dev.levee.lease.ShareStore;
import dev.levee.lease.SiteBudget;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.lease.NoSuchLeaseException;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps site leases in etcd itself (docs/design.md §10), under {@code <prefix>bandwidth/}:
 * <ul>
 *   <li>{@code budget} — the {@link SiteBudget} document, written by {@code levee bandwidth};</li>
 *   <li>{@code guard} — moved by every write that raises a share: such a write is one etcd
 *   transaction {@code if mod_revision(guard) = r then put(guard), put(entry)}, where {@code r}
 *   is the guard's revision in the read the new share was computed from;</li>
 *   <li>{@code gateways/<gatewayId>/<incarnation>} — each gateway's {@link GatewayEntry}, attached
 *   to its etcd lease, so etcd deletes it when the lease expires. Every write of it is a
 *   transaction conditional on the key's mod revision in the read it was computed from (0 when
 *   absent), so that a late request cannot overwrite a newer entry.</li>
 * </ul>
 * One range read returns all three at one revision.
 */
public final class EtcdShareStore implements ShareStore {

    private static final Logger LOG = LoggerFactory.getLogger(EtcdShareStore.class);

    private final Client client;
    private final String root;
    private final ByteSequence rootKey;
    private final ByteSequence budgetKey;
    private final ByteSequence guardKey;
    private final String gatewaysPrefix;
    /** Keys found not to be gateway entries, with the revision already warned about: one WARN a value, not a round. */
    private final Map<String, Long> warnedBad = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * @param client the etcd client (not closed by this store)
     * @param prefix the Levee key prefix, e.g. {@code /levee/}
     */
    public EtcdShareStore(Client client, String prefix) {
        this.client = client;
        this.root = Etcd.normalisePrefix(prefix) + "bandwidth/";
        this.rootKey = bytes(root);
        this.budgetKey = bytes(root + "budget");
        this.guardKey = bytes(root + "guard");
        this.gatewaysPrefix = root + "gateways/";
    }

    /** The key of the budget document, e.g. {@code /levee/bandwidth/budget}. */
    public static String budgetKey(String prefix) {
        return Etcd.normalisePrefix(prefix) + "bandwidth/budget";
    }

    /** The prefix of gateway entries, e.g. {@code /levee/bandwidth/gateways/}. */
    public static String gatewaysPrefix(String prefix) {
        return Etcd.normalisePrefix(prefix) + "bandwidth/gateways/";
    }

    @Override
    public String budgetLocation() {
        return "etcd key " + root + "budget";
    }

    @Override
    public CompletionStage<Lease> grant(long ttlSeconds) {
        return client.getLeaseClient().grant(ttlSeconds).thenApply(r -> new Lease(r.getID(), r.getTTL()));
    }

    @Override
    public CompletionStage<Long> keepAlive(long leaseId) {
        return client.getLeaseClient().keepAliveOnce(leaseId).handle((r, e) -> {
            if (e == null) {
                return r.getTTL();
            }
            if (leaseGone(e)) {
                return 0L;
            }
            throw e instanceof CompletionException ce ? ce : new CompletionException(e);
        });
    }

    @Override
    public CompletionStage<View> read() {
        return client.getKVClient().get(rootKey, GetOption.builder().isPrefix(true).build()).thenApply(r -> {
            String budget = null;
            long guard = 0;
            List<GatewayEntry> entries = new ArrayList<>();
            Map<String, Long> revisions = new HashMap<>();
            java.util.Set<String> bad = new java.util.HashSet<>();
            for (KeyValue kv : r.getKvs()) {
                String key = string(kv.getKey());
                if (kv.getKey().equals(budgetKey)) {
                    budget = string(kv.getValue());
                } else if (kv.getKey().equals(guardKey)) {
                    guard = kv.getModRevision();
                } else if (key.startsWith(gatewaysPrefix)) {
                    try {
                        entries.add(GatewayEntry.parse(string(kv.getValue())));
                        revisions.put(key.substring(gatewaysPrefix.length()), kv.getModRevision());
                    } catch (IllegalArgumentException e) {
                        bad.add(key);
                        Long was = warnedBad.put(key, kv.getModRevision());
                        if (was == null || was != kv.getModRevision()) { // once per value written, not every round
                            LOG.warn("etcd key {}: not a gateway entry ({}); ignored (said once for this value)", key,
                                    e.getMessage());
                        }
                    }
                }
            }
            warnedBad.keySet().retainAll(bad); // bounded by the bad keys in etcd now
            return new View(budget, entries, guard, revisions);
        });
    }

    @Override
    public CompletionStage<WriteResult> write(GatewayEntry entry, long leaseId, boolean guarded, long guardRevision,
                                              long entryRevision) {
        ByteSequence key = bytes(gatewaysPrefix + entry.keySuffix());
        ByteSequence value = bytes(entry.toJson());
        PutOption withLease = PutOption.builder().withLeaseId(leaseId).build();
        Cmp own = new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(entryRevision));
        CompletableFuture<WriteResult> f;
        if (guarded) {
            f = client.getKVClient().txn()
                    .If(own, new Cmp(guardKey, Cmp.Op.EQUAL, CmpTarget.modRevision(guardRevision)))
                    .Then(Op.put(guardKey, bytes(entry.keySuffix()), PutOption.DEFAULT), Op.put(key, value, withLease))
                    .commit().thenApply(r -> r.isSucceeded() ? WriteResult.OK : WriteResult.CONFLICT);
        } else {
            f = client.getKVClient().txn().If(own).Then(Op.put(key, value, withLease))
                    .commit().thenApply(r -> r.isSucceeded() ? WriteResult.OK : WriteResult.CONFLICT);
        }
        return f.handle((r, e) -> {
            if (e == null) {
                return r;
            }
            if (leaseGone(e)) {
                return WriteResult.LEASE_GONE;
            }
            throw e instanceof CompletionException ce ? ce : new CompletionException(e);
        });
    }

    @Override
    public CompletionStage<Void> revoke(long leaseId) {
        return client.getLeaseClient().revoke(leaseId).thenApply(r -> null);
    }

    private static boolean leaseGone(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof NoSuchLeaseException) {
                return true;
            }
            String m = c.getMessage();
            if (m != null && m.contains("requested lease not found")) {
                return true;
            }
        }
        return false;
    }

    private static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    private static String string(ByteSequence b) {
        return b.toString(StandardCharsets.UTF_8);
    }

    @Override
    public String toString() {
        return "etcd " + root;
    }
}
