package dev.levee.s3;

import java.util.Objects;

/**
 * Holds the answer of {@link S3Classifier#classify}: the resource, object key and operation that
 * quota resolution keys on (docs/design.md §3, §4).
 *
 * <p>Shapes: a service-level request ({@code GET /}) has resource {@code ""} and key {@code ""};
 * a bucket-level request has a non-empty resource and key {@code ""}; an object-level request has
 * both non-empty. The key is exactly the text the client sent after the bucket, percent-decoded
 * once; it may contain {@code '/'}, runs of {@code "//"}, dot segments, spaces and control
 * characters, so whoever logs it must escape it (docs/design.md §2).
 *
 * @param resource  the bucket name, or {@code ""} for a service-level request; never null
 * @param key       the object key percent-decoded once as UTF-8, or {@code ""} when the request
 *                  names no object; never null
 * @param operation the AWS API name of the operation, {@link S3Operation#Unknown} when the request
 *                  matches none; never null
 */
public record S3Classification(String resource, String key, S3Operation operation) {

    /**
     * Checks that no component is null.
     *
     * @throws NullPointerException when {@code resource}, {@code key} or {@code operation} is null
     */
    public S3Classification {
        Objects.requireNonNull(resource, "resource");
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(operation, "operation");
    }

    /**
     * Tells whether the request addresses no bucket, as {@code GET /} does.
     *
     * @return true when the resource is {@code ""}
     */
    public boolean serviceLevel() {
        return resource.isEmpty();
    }

    /**
     * Tells whether the request names an object.
     *
     * @return true when the key is non-empty
     */
    public boolean objectLevel() {
        return !key.isEmpty();
    }
}
