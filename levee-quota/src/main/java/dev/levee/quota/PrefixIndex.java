package dev.levee.quota;

import dev.levee.core.S3Operation;
import java.util.Arrays;
import java.util.List;

/**
 * Resolves the requests of one configured resource: a trie over the literal prefixes finds the
 * longest matching entry without allocating, and every answer that does not depend on the
 * object key is precomputed.
 */
final class PrefixIndex {

    private static final S3Operation[] OPS = S3Operation.values();

    private final Node root;
    private final ResolvedQuota resourceLevel;
    private final ResolvedQuota[] methodsDefault;
    private final ResolvedQuota defaultLevel;

    PrefixIndex(String resource, ResourceQuotas config, ResolvedQuota[] methodsDefault, ResolvedQuota defaultLevel) {
        this.root = new Node();
        List<PrefixRule> prefixes = config.prefixes();
        for (PrefixRule rule : prefixes) {
            root.insert(rule.literal(), new Entry(resource, rule));
        }
        this.resourceLevel = config.quota() == null
                ? null
                : new ResolvedQuota(config.quota(), QuotaLevel.RESOURCE, LimitKeys.resourceKey(resource), null, null);
        this.methodsDefault = methodsDefault;
        this.defaultLevel = defaultLevel;
    }

    /** Applies SPEC.md §4 steps 1–4 to a request of this resource. */
    ResolvedQuota resolve(String key, S3Operation op) {
        Entry entry = root.longestMatch(key);
        if (entry != null) {
            ResolvedQuota hit = entry.resolve(key, op);
            if (hit != null) {
                return hit;
            }
        }
        if (resourceLevel != null) {
            return resourceLevel;
        }
        ResolvedQuota byMethod = methodsDefault[op.ordinal()];
        return byMethod != null ? byMethod : defaultLevel;
    }

    /** One prefix entry, compiled: by operation ordinal, the quota and the counter. */
    private static final class Entry {
        private final String prefix;
        private final boolean wildcard;
        private final Quota quota;
        private final String quotaKey;               // the whole key, or the stem before the object key
        private final Quota[] opQuota;               // null when the entry has no methods
        private final S3Operation[] opConfigured;
        private final String[] opKey;
        private final ResolvedQuota[] fixed;         // precomputed answers of a non-wildcard entry

        Entry(String resource, PrefixRule rule) {
            this.prefix = rule.prefix();
            this.wildcard = rule.wildcard();
            this.quota = rule.quota();
            String base = LimitKeys.prefixKey(resource, prefix);
            this.quotaKey = wildcard ? base + "@" : base;
            if (rule.methods().isEmpty()) {
                opQuota = null;
                opConfigured = null;
                opKey = null;
            } else {
                opQuota = new Quota[OPS.length];
                opConfigured = new S3Operation[OPS.length];
                opKey = new String[OPS.length];
                for (S3Operation op : OPS) {
                    S3Operation configured = LimitKeys.configuredFor(rule.methods(), op);
                    if (configured != null) {
                        int i = op.ordinal();
                        opQuota[i] = rule.methods().get(configured);
                        opConfigured[i] = configured;
                        opKey[i] = base + LimitKeys.operationSuffix(configured) + (wildcard ? "@" : "");
                    }
                }
            }
            this.fixed = wildcard ? null : precompute();
        }

        private ResolvedQuota[] precompute() {
            ResolvedQuota[] answers = new ResolvedQuota[OPS.length];
            ResolvedQuota byQuota = quota == null ? null : new ResolvedQuota(quota, QuotaLevel.PREFIX, quotaKey, prefix, null);
            for (S3Operation op : OPS) {
                int i = op.ordinal();
                answers[i] = opQuota != null && opQuota[i] != null
                        ? new ResolvedQuota(opQuota[i], QuotaLevel.PREFIX_METHOD, opKey[i], prefix, opConfigured[i])
                        : byQuota;
            }
            return answers;
        }

        /** Returns the entry's answer, or {@code null} to continue with step 2. */
        ResolvedQuota resolve(String key, S3Operation op) {
            int i = op.ordinal();
            if (!wildcard) {
                return fixed[i];
            }
            if (opQuota != null && opQuota[i] != null) {
                return new ResolvedQuota(opQuota[i], QuotaLevel.PREFIX_METHOD, opKey[i].concat(key), prefix, opConfigured[i]);
            }
            return quota == null ? null : new ResolvedQuota(quota, QuotaLevel.PREFIX, quotaKey.concat(key), prefix, null);
        }
    }

    /** A trie node; children sorted by their character for binary search. */
    private static final class Node {
        private static final char[] NO_LABELS = {};
        private static final Node[] NO_CHILDREN = {};

        private char[] labels = NO_LABELS;
        private Node[] children = NO_CHILDREN;
        private Entry entry;

        void insert(String literal, Entry value) {
            Node node = this;
            for (int i = 0; i < literal.length(); i++) {
                node = node.childOrCreate(literal.charAt(i));
            }
            if (node.entry == null) { // equal literal length: the entry listed first wins
                node.entry = value;
            }
        }

        Entry longestMatch(String key) {
            Entry best = entry;
            Node node = this;
            for (int i = 0; i < key.length(); i++) {
                int at = Arrays.binarySearch(node.labels, key.charAt(i));
                if (at < 0) {
                    break;
                }
                node = node.children[at];
                if (node.entry != null) {
                    best = node.entry;
                }
            }
            return best;
        }

        private Node childOrCreate(char c) {
            int at = Arrays.binarySearch(labels, c);
            if (at >= 0) {
                return children[at];
            }
            int insertAt = -at - 1;
            Node child = new Node();
            char[] newLabels = new char[labels.length + 1];
            Node[] newChildren = new Node[children.length + 1];
            System.arraycopy(labels, 0, newLabels, 0, insertAt);
            System.arraycopy(children, 0, newChildren, 0, insertAt);
            newLabels[insertAt] = c;
            newChildren[insertAt] = child;
            System.arraycopy(labels, insertAt, newLabels, insertAt + 1, labels.length - insertAt);
            System.arraycopy(children, insertAt, newChildren, insertAt + 1, children.length - insertAt);
            labels = newLabels;
            children = newChildren;
            return child;
        }
    }
}
