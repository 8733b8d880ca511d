package dev.levee.governor;

/**
 * Classifies a request for the {@link AdmissionQueue}: each principal has one in-flight limit
 * per class (docs/design.md §8).
 */
public enum AdmissionClass {
    /** A mutating upload: PutObject, UploadPart, PostObject, the multipart calls; default limit 1. */
    MUTATING_UPLOAD,
    /** A download (GetObject); default limit {@code min(4, maxDownloads)}. */
    DOWNLOAD
}
