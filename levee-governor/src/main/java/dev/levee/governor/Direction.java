package dev.levee.governor;

/**
 * Names the direction of the bytes a {@link BandwidthGovernor} shapes. The two directions have
 * independent budgets (docs/design.md §8): one governor each.
 */
public enum Direction {
    /** Request bodies, client → gateway → storage (PutObject, UploadPart, PostObject). */
    UPLOAD,
    /** Response bodies, storage → gateway → client (GetObject). */
    DOWNLOAD
}
