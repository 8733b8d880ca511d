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
        return query == null ? NONE : parse(query, 0, query.length());
    }

    /**
     * Parses the raw query {@code text[from, to)}. A parameter name without {@code '%'} is compared where it
     * stands, without a copy: only an escaped name, and the values of {@code list-type} and {@code select-type},
     * become strings.
     *
     * @param text the text holding the query, not null
     * @param from the index just after the {@code '?'}
     * @param to   the end of the query, exclusive
     * @return the facts, never null
     */
    static QueryFacts parse(CharSequence text, int from, int to) {
        if (from >= to) {
            return NONE;
        }
        long mask = 0L;
        boolean partNumber = false;
        String listType = null;
        String selectType = null;
        int start = from;
        while (start < to) {
            int end = Chars.indexOf(text, '&', start, to);
            if (end < 0) {
                end = to;
            }
            if (end > start) {
                int eq = Chars.indexOf(text, '=', start, end);
                if (eq < 0) {
                    eq = end;
                }
                SubResource sub;
                boolean isPartNumber;
                boolean isListType;
                boolean isSelectType;
                if (Chars.indexOf(text, '%', start, eq) < 0) {
                    // the name as it stands is the name decoded: compare it in place
                    sub = SubResource.byWireName(text, start, eq);
                    isPartNumber = Chars.regionEquals(text, start, eq, "partNumber");
                    isListType = Chars.regionEquals(text, start, eq, "list-type");
                    isSelectType = Chars.regionEquals(text, start, eq, "select-type");
                } else {
                    String name = PercentDecoding.decodeOnce(text, start, eq);
                    sub = SubResource.byWireName(name);
                    isPartNumber = name.equals("partNumber");
                    isListType = name.equals("list-type");
                    isSelectType = name.equals("select-type");
                }
                if (sub != null) {
                    mask |= sub.bit();
                } else if (isPartNumber) {
                    partNumber = true;
                } else if (listType == null && isListType) {
                    listType = value(text, eq, end);
                } else if (selectType == null && isSelectType) {
                    selectType = value(text, eq, end);
                }
            }
            start = end + 1;
        }
        return mask == 0L && !partNumber && listType == null && selectType == null ? NONE
                : new QueryFacts(mask, partNumber, listType, selectType);
    }

    private static String value(CharSequence text, int eq, int end) {
        return eq >= end ? "" : PercentDecoding.decodeOnce(text, eq + 1, end);
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
