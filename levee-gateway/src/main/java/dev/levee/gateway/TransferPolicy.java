package dev.levee.gateway;

import dev.levee.governor.AdmissionClass;
import dev.levee.s3.S3Operation;

/**
 * Decides which bodies of an S3 operation are charged to the bandwidth governors and which
 * admission class it takes (docs/design.md §8, issue 6). Pure.
 *
 * <ul>
 *   <li><b>Upload bytes</b>: every request body is charged, except those of {@code CopyObject},
 *       {@code UploadPartCopy} and {@code CompleteMultipartUpload}: copies and multipart assembly
 *       happen inside the storage and do not cross the client's network.</li>
 *   <li><b>Download bytes</b>: every response body is charged, except those of the same three
 *       operations (a copy's result document, the assembled object's ETag).</li>
 *   <li><b>Admission</b>: {@code PutObject}, {@code UploadPart} and {@code PostObject} take a
 *       mutating-upload slot, {@code GetObject} a download slot; other operations take none.</li>
 * </ul>
 */
final class TransferPolicy {

    private TransferPolicy() {
    }

    /** Returns whether the request body of {@code op} is charged to the upload governor. */
    static boolean chargesUpload(S3Operation op) {
        return !assembledInStorage(op);
    }

    /** Returns whether the response body of {@code op} is charged to the download governor. */
    static boolean chargesDownload(S3Operation op) {
        return !assembledInStorage(op);
    }

    /** Returns the admission class of {@code op}, or null when it is not admitted. */
    static AdmissionClass admissionClass(S3Operation op) {
        return switch (op) {
            case PutObject, UploadPart, PostObject -> AdmissionClass.MUTATING_UPLOAD;
            case GetObject -> AdmissionClass.DOWNLOAD;
            default -> null;
        };
    }

    private static boolean assembledInStorage(S3Operation op) {
        return op == S3Operation.CopyObject || op == S3Operation.UploadPartCopy || op == S3Operation.CompleteMultipartUpload;
    }
}
