package dev.levee.lease;

/**
 * The two messages of a request lease between levee-client and a limiter (docs/design.md §12), carried as JSON on
 * the limiter's HTTP listener: {@code POST /v1/lease} with an {@link Ask}, answered {@code 200} with a {@link Grant}
 * (granted or not), or {@code 400} naming the field of a malformed ask. A lease is asked for rarely (once per
 * member and hot key per half a lease window, about 40 times a second per key at the defaults), so it goes by plain
 * HTTP and JSON beside the check wire, not inside it.
 *
 * <p>Both records are shapes only (Jackson maps them, unknown fields fail); {@link Ask#problem} and
 * {@link Grant#problem} say what is wrong with one, and {@link Grant#toLease} turns a granted answer into the
 * {@link RequestLease} a {@link RequestLeaseHolder} takes.
 */
public final class RequestLeaseWire {

    /** The path of the lease endpoint: {@value}. */
    public static final String PATH = "/v1/lease";
    /** {@link Grant#reason} when the key's quota may not be leased (none enforced, {@code lease: false}, burst 0). */
    public static final String NOT_LEASABLE = "not_leasable";
    /** {@link Grant#reason} when the limiter is within its restart fence ({@link RequestLeaseRules#restartFenceNs}). */
    public static final String FENCED = "fenced";
    /**
     * {@link Grant#reason} when the ask's {@link Ask#quotas} digest is not the limiter's for the resource: the client
     * resolves the bucket with other quotas (another file or etcd), so slots of the key it named could admit requests
     * the limiter counts elsewhere; nothing is reserved.
     */
    public static final String QUOTAS_DIFFER = "quotas_differ";
    /** {@link Grant#reason} when GCRA refuses the first slot ({@code Gcra.reserve}); the wait says when to ask again. */
    public static final String REFUSED = "refused";

    private RequestLeaseWire() {
    }

    /**
     * A client's request for slots of one key: the facts of a check (the same fields and limits as
     * {@code POST /v1/check}), the slots wanted and who asks.
     *
     * @param resource  bucket name, {@code ""} for service-level requests; ≤ 1024 bytes UTF-8
     * @param key       object key (decoded), {@code ""} when none; ≤ 1024 bytes UTF-8
     * @param operation AWS API operation name
     * @param g         group size the client computed, {@code 1 ≤ g ≤ DF}
     * @param slots     slots wanted, in {@code [1, 4096]} ({@link LeaseSizer})
     * @param leadNs    the earliest the first slot is wanted after the decision, ns, in {@code [0, 1 s]}; 0 by default
     * @param client    who asks, for the limiter's grant log line: 1–128 printable characters
     * @param quotas    the client's {@code QuotaConfig.resolutionDigest} of {@code resource}: 1–64 printable
     *                  characters; the limiter grants only if it is its own ({@link #QUOTAS_DIFFER}); absent from a
     *                  client older than the field, and then not compared
     */
    public record Ask(String resource, String key, String operation, Integer g, Integer slots, Long leadNs,
                      String client, String quotas) {

        /** The most slots one ask may name: {@value}. */
        public static final int MAX_SLOTS = 4096;
        /** The longest lead, ns: 1 s. */
        public static final long MAX_LEAD_NS = 1_000_000_000L;

        /**
         * Returns what is wrong with the fields this record checks alone (resource, key and operation are checked as a
         * check's are, by the limiter), naming the field, or null when nothing is.
         */
        public String problem() {
            if (slots == null) {
                return "field 'slots' is missing";
            }
            if (slots < 1 || slots > MAX_SLOTS) {
                return "field 'slots' must be between 1 and " + MAX_SLOTS + ", got " + slots;
            }
            if (leadNs != null && (leadNs < 0 || leadNs > MAX_LEAD_NS)) {
                return "field 'leadNs' must be between 0 and " + MAX_LEAD_NS + ", got " + leadNs;
            }
            if (client == null || client.isEmpty() || client.length() > 128) {
                return "field 'client' must be 1 to 128 characters";
            }
            if (!printable(client)) {
                return "field 'client' must be printable ASCII without spaces";
            }
            if (quotas != null && (quotas.isEmpty() || quotas.length() > 64 || !printable(quotas))) {
                return "field 'quotas' must be 1 to 64 printable ASCII characters without spaces";
            }
            return null;
        }

        private static boolean printable(String s) {
            for (int i = 0; i < s.length(); i++) {
                char ch = s.charAt(i);
                if (ch < 0x21 || ch > 0x7e) {
                    return false;
                }
            }
            return true;
        }

        /** Returns the lead, 0 when absent. */
        public long lead() {
            return leadNs == null ? 0 : leadNs;
        }
    }

    /**
     * A limiter's answer to an {@link Ask}. Granted: {@code slots ≥ 1} slots whose virtual times are
     * {@code firstNs + (k − 1) × intervalNs} after the limiter's decision ({@code Gcra.Reservation}). Not granted:
     * {@code reason} and, for {@link #FENCED} and {@link #REFUSED}, {@code waitNs} until asking again may succeed.
     *
     * @param granted     whether slots were granted
     * @param lease       the lease id, unique per limiter incarnation (granted only)
     * @param limiter     the limiter's id
     * @param limitKey    the counter the slots were taken from (granted only)
     * @param slots       slots granted, ≥ 1 (granted only)
     * @param firstNs     {@code v_1 − t}, ns, ≥ 0
     * @param intervalNs  {@code T}, ns, ≥ 1
     * @param toleranceNs {@code τ}, ns, ≥ 0
     * @param reason      {@link #NOT_LEASABLE}, {@link #FENCED} or {@link #REFUSED} (not granted only)
     * @param waitNs      ns until another ask may be granted (not granted only), ≥ 0
     */
    public record Grant(boolean granted, Long lease, String limiter, String limitKey, Integer slots, Long firstNs,
                       Long intervalNs, Long toleranceNs, String reason, Long waitNs) {

        /** A granted answer: {@code slots} slots from {@code firstNs} after the decision, {@code intervalNs} apart. */
        public static Grant of(long lease, String limiter, String limitKey, int slots, long firstNs, long intervalNs,
                               long toleranceNs) {
            return new Grant(true, lease, limiter, limitKey, slots, firstNs, intervalNs, toleranceNs, null, null);
        }

        /** An answer granting nothing, with its reason and the wait (ns, ≥ 0) until asking again may succeed. */
        public static Grant refused(String limiter, String reason, long waitNs) {
            return new Grant(false, null, limiter, null, null, null, null, null, reason, waitNs);
        }

        /**
         * Returns what makes this answer unusable as a grant, or null: a granted answer needs every granted field,
         * in range; a refusal needs its reason.
         */
        public String problem() {
            if (limiter == null || limiter.isEmpty()) {
                return "grant without 'limiter'";
            }
            if (!granted) {
                return reason == null ? "refusal without 'reason'" : waitNs != null && waitNs < 0
                        ? "refusal with a negative 'waitNs'" : null;
            }
            if (lease == null || limitKey == null || slots == null || firstNs == null || intervalNs == null
                    || toleranceNs == null) {
                return "grant missing one of lease, limitKey, slots, firstNs, intervalNs, toleranceNs";
            }
            if (slots < 1 || firstNs < 0 || intervalNs < 1 || toleranceNs < 0) {
                return "grant with slots " + slots + ", firstNs " + firstNs + ", intervalNs " + intervalNs
                        + ", toleranceNs " + toleranceNs;
            }
            return null;
        }

        /**
         * Returns the lease a client holds from this granted answer; check {@link #problem} first, then the lease with
         * {@link RequestLeaseRules#problem} against the client's own resolution of the quota.
         *
         * @param epoch      the client's epoch when it sent the ask
         * @param sentNs     the client's monotonic reading when it sent the ask
         * @param receivedNs its reading when the answer arrived
         * @throws IllegalArgumentException when a field is out of range (as {@link RequestLease} checks)
         */
        public RequestLease toLease(RequestLease.Epoch epoch, long sentNs, long receivedNs) {
            return new RequestLease(lease, epoch, limiter, firstNs, intervalNs, toleranceNs, slots, sentNs, receivedNs);
        }
    }
}
