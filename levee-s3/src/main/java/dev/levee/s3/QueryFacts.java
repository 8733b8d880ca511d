package dev.levee.s3;

/**
 * Records what of a raw query string matters to classification.
 *
 * <p>Parameters are separated by {@code '&'}; each is {@code name}, {@code name=} or
 * {@code name=value}, in any order, possibly repeated; names are percent-decoded once before they
 * are compared (so {@code %61cl} is {@code acl}). Repetition of a sub-resource counts once; for
 * {@code list-type} and {@code select-type} the first occurrence wins. Values are decoded only
 * for those two parameters, so the long values of a presigned URL cost one scan and no copy.
 *
 * @param subResources the set of {@link SubResource}s present, as a bit mask of
 *                     {@link SubResource#bit()}
 * @param partNumber   whether {@code partNumber} is present
 * @param listType     the value of the first {@code list-type}, or null
 * @param selectType   the value of the first {@code select-type}, or null
 */
record QueryFacts(long subResources, boolean partNumber, String listType, String selectType) {

    /** The facts of an empty query. */
    static final QueryFacts NONE = new QueryFacts(0L, false, null, null);

    /**
     * Parses a raw query string.
     *
     * @param query the query without {@code '?'}, may be null
     * @return the facts, never null
     */
    static QueryFacts parse(String query) {
        if (query == null || query.isEmpty()) {
            return NONE;
        }
        long mask = 0L;
        boolean partNumber = false;
        String listType = null;
        String selectType = null;
        int n = query.length();
        int start = 0;
        while (start < n) {
            int end = query.indexOf('&', start);
            if (end < 0) {
                end = n;
            }
            if (end > start) {
                int eq = query.indexOf('=', start);
                if (eq < 0 || eq > end) {
                    eq = end;
                }
                String name = PercentDecoding.decodeOnce(query, start, eq);
                SubResource sub = SubResource.byWireName(name);
                if (sub != null) {
                    mask |= sub.bit();
                } else if (name.equals("partNumber")) {
                    partNumber = true;
                } else if (listType == null && name.equals("list-type")) {
                    listType = value(query, eq, end);
                } else if (selectType == null && name.equals("select-type")) {
                    selectType = value(query, eq, end);
                }
            }
            start = end + 1;
        }
        return new QueryFacts(mask, partNumber, listType, selectType);
    }

    private static String value(String query, int eq, int end) {
        return eq >= end ? "" : PercentDecoding.decodeOnce(query, eq + 1, end);
    }

    /** Returns whether any sub-resource is present. */
    boolean hasSubResource() {
        return subResources != 0L;
    }

    /**
     * Returns the only sub-resource present, or null when there is none or more than one: two
     * sub-resources name no S3 operation, so such a request is Unknown.
     */
    SubResource single() {
        return Long.bitCount(subResources) == 1 ? SubResource.lowest(subResources) : null;
    }
}
