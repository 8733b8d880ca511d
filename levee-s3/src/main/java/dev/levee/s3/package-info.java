/**
 * Classifies S3 requests into {@code (resource, object key, operation)} (docs/design.md §3).
 *
 * <p>Pure code: no I/O, no clock, no logging. {@link dev.levee.s3.S3Classifier} is the entry
 * point; {@link dev.levee.s3.S3Request} carries the raw facts NGINX or the gateway saw and
 * {@link dev.levee.s3.S3Classification} the answer.
 */
package dev.levee.s3;
