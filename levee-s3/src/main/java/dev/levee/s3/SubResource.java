package dev.levee.s3;

import java.util.HashMap;
import java.util.Map;

/**
 * Lists the query parameters that select an S3 operation (AWS S3 API reference, "Amazon S3
 * REST API" operation URIs), by their exact, case-sensitive wire names.
 *
 * <p>Parameters that only modify an operation ({@code partNumber}, {@code list-type},
 * {@code select-type}, {@code versionId}) are not sub-resources; {@link QueryFacts} records the
 * ones the decision table needs. Everything else ({@code prefix}, {@code max-keys},
 * {@code X-Amz-Signature}, {@code x-id}, …) is ignored.
 */
enum SubResource {
    // bucket configuration
    ACL("acl"),
    POLICY("policy"),
    POLICY_STATUS("policyStatus"),
    CORS("cors"),
    LIFECYCLE("lifecycle"),
    VERSIONING("versioning"),
    LOCATION("location"),
    TAGGING("tagging"),
    WEBSITE("website"),
    LOGGING("logging"),
    NOTIFICATION("notification"),
    REPLICATION("replication"),
    ENCRYPTION("encryption"),
    OBJECT_LOCK("object-lock"),
    REQUEST_PAYMENT("requestPayment"),
    ACCELERATE("accelerate"),
    PUBLIC_ACCESS_BLOCK("publicAccessBlock"),
    OWNERSHIP_CONTROLS("ownershipControls"),
    // listings and multi-object requests
    VERSIONS("versions"),
    UPLOADS("uploads"),
    DELETE("delete"),
    // object configuration and multipart
    RETENTION("retention"),
    LEGAL_HOLD("legal-hold"),
    ATTRIBUTES("attributes"),
    TORRENT("torrent"),
    RESTORE("restore"),
    SELECT("select"),
    UPLOAD_ID("uploadId"),
    /**
     * Real S3 sub-resources whose operations have no {@code S3Operation} constant; a request that
     * carries one is Unknown rather than mistaken for the plain operation (a
     * {@code GET /bucket?analytics} is not a listing).
     */
    OTHER("analytics", "inventory", "metrics", "intelligent-tiering", "session",
            "metadataTable", "metadataConfiguration", "renameObject");

    private static final SubResource[] VALUES = values();
    private static final Map<String, SubResource> BY_WIRE_NAME = new HashMap<>();
    /** Every wire name, and the sub-resource of each: for looking names up where they stand. */
    private static final String[] WIRE_NAMES;
    private static final SubResource[] OF_WIRE_NAME;
    private static final int LONGEST;

    static {
        for (SubResource s : VALUES) {
            for (String name : s.wireNames) {
                BY_WIRE_NAME.put(name, s);
            }
        }
        WIRE_NAMES = BY_WIRE_NAME.keySet().toArray(new String[0]);
        OF_WIRE_NAME = new SubResource[WIRE_NAMES.length];
        int longest = 0;
        for (int k = 0; k < WIRE_NAMES.length; k++) {
            OF_WIRE_NAME[k] = BY_WIRE_NAME.get(WIRE_NAMES[k]);
            longest = Math.max(longest, WIRE_NAMES[k].length());
        }
        LONGEST = longest;
    }

    private final String[] wireNames;

    SubResource(String... wireNames) {
        this.wireNames = wireNames;
    }

    /** Returns the bit of this sub-resource in {@link QueryFacts#subResources()}. */
    long bit() {
        return 1L << ordinal();
    }

    /**
     * Looks a parameter name up.
     *
     * @param name the decoded parameter name, not null
     * @return the sub-resource, or null when the name is not one
     */
    static SubResource byWireName(String name) {
        return BY_WIRE_NAME.get(name);
    }

    /**
     * Looks the parameter name {@code text[from, to)} up where it stands, without making it a string.
     *
     * @param text a text holding an undecoded name (one without {@code '%'}), not null
     * @return the sub-resource, or null when the name is not one
     */
    static SubResource byWireName(CharSequence text, int from, int to) {
        int n = to - from;
        if (n <= 0 || n > LONGEST) {
            return null;
        }
        for (int k = 0; k < WIRE_NAMES.length; k++) {
            String name = WIRE_NAMES[k];
            if (name.length() == n && name.charAt(0) == text.charAt(from) && Chars.regionEquals(text, from, to, name)) {
                return OF_WIRE_NAME[k];
            }
        }
        return null;
    }

    /** Returns the sub-resource whose {@link #bit()} is the lowest set bit of {@code mask}. */
    static SubResource lowest(long mask) {
        return VALUES[Long.numberOfTrailingZeros(mask)];
    }
}
