package dev.levee.limiter;

import dev.levee.s3.S3Operation;
import java.nio.charset.StandardCharsets;

/**
 * The body of {@code POST /v1/check}: one classified S3 request and the group size it was routed
 * with (docs/design.md §1 step 3, §5).
 *
 * @param resource  bucket name, {@code ""} for service-level requests; ≤ 1024 bytes UTF-8
 * @param key       object key (decoded), {@code ""} when none; ≤ 1024 bytes UTF-8
 * @param operation AWS API operation name, or {@code Unknown}
 * @param g         group size the client computed, {@code 1 ≤ g ≤ DF}
 */
public record CheckRequest(String resource, String key, String operation, Integer g) {

    /** Longest resource or key accepted, in UTF-8 bytes: 1024 (the S3 key limit). */
    public static final int MAX_BYTES = 1024;

    /**
     * Checks the fields and returns the operation.
     *
     * @param factor the current group factor DF
     * @return the parsed operation
     * @throws IllegalArgumentException naming the field at fault
     */
    S3Operation validate(int factor) {
        if (resource == null) {
            throw new IllegalArgumentException("field 'resource' is missing");
        }
        if (key == null) {
            throw new IllegalArgumentException("field 'key' is missing");
        }
        if (operation == null) {
            throw new IllegalArgumentException("field 'operation' is missing");
        }
        if (g == null) {
            throw new IllegalArgumentException("field 'g' is missing");
        }
        if (tooLong(resource)) {
            throw new IllegalArgumentException("field 'resource' is longer than " + MAX_BYTES + " bytes");
        }
        if (tooLong(key)) {
            throw new IllegalArgumentException("field 'key' is longer than " + MAX_BYTES + " bytes");
        }
        checkGroup(g, factor);
        return operation(operation);
    }

    /**
     * Checks a group size against the factor.
     *
     * @throws IllegalArgumentException naming the field
     */
    static void checkGroup(int g, int factor) {
        if (g < 1 || g > factor) {
            throw new IllegalArgumentException("field 'g' must be between 1 and the factor " + factor + ", got " + g);
        }
    }

    /**
     * Returns the operation of a name.
     *
     * @throws IllegalArgumentException naming the field when the name is not an operation Levee knows
     */
    static S3Operation operation(String name) {
        return S3Operation.byName(name).orElseThrow(
                () -> new IllegalArgumentException("field 'operation': unknown operation '" + name + "'"));
    }

    private static boolean tooLong(String s) {
        // a UTF-16 unit is at most 3 UTF-8 bytes: short strings need no encoding to be checked
        return s.length() * 3 > MAX_BYTES && s.getBytes(StandardCharsets.UTF_8).length > MAX_BYTES;
    }
}
