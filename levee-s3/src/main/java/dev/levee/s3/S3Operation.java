package dev.levee.s3;

import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * S3 operations by their AWS API names (docs/design.md §3).
 *
 * <p>Quota configuration names operations exactly as these constants are spelled; any other
 * name is a configuration error. {@link #Unknown} is what a request that cannot be classified
 * becomes: it is still limited by the resource-level quotas.
 */
public enum S3Operation {
    // service level
    ListBuckets,
    // bucket level
    CreateBucket, HeadBucket, DeleteBucket,
    ListObjects, ListObjectsV2, ListObjectVersions, ListMultipartUploads, DeleteObjects,
    GetBucketAcl, PutBucketAcl,
    GetBucketPolicy, PutBucketPolicy, DeleteBucketPolicy, GetBucketPolicyStatus,
    GetBucketCors, PutBucketCors, DeleteBucketCors,
    GetBucketLifecycleConfiguration, PutBucketLifecycleConfiguration, DeleteBucketLifecycle,
    GetBucketVersioning, PutBucketVersioning,
    GetBucketLocation,
    GetBucketTagging, PutBucketTagging, DeleteBucketTagging,
    GetBucketWebsite, PutBucketWebsite, DeleteBucketWebsite,
    GetBucketLogging, PutBucketLogging,
    GetBucketNotificationConfiguration, PutBucketNotificationConfiguration,
    GetBucketReplication, PutBucketReplication, DeleteBucketReplication,
    GetBucketEncryption, PutBucketEncryption, DeleteBucketEncryption,
    GetObjectLockConfiguration, PutObjectLockConfiguration,
    GetBucketRequestPayment, PutBucketRequestPayment,
    GetBucketAccelerateConfiguration, PutBucketAccelerateConfiguration,
    GetPublicAccessBlock, PutPublicAccessBlock, DeletePublicAccessBlock,
    GetBucketOwnershipControls, PutBucketOwnershipControls, DeleteBucketOwnershipControls,
    PostObject,
    // object level
    GetObject, HeadObject, PutObject, CopyObject, DeleteObject,
    CreateMultipartUpload, UploadPart, UploadPartCopy, CompleteMultipartUpload,
    AbortMultipartUpload, ListParts,
    GetObjectAcl, PutObjectAcl,
    GetObjectTagging, PutObjectTagging, DeleteObjectTagging,
    GetObjectRetention, PutObjectRetention,
    GetObjectLegalHold, PutObjectLegalHold,
    GetObjectAttributes, RestoreObject, SelectObjectContent, GetObjectTorrent,
    /** A request that matches no known operation; limited by resource-level quotas only. */
    Unknown;

    private static final Map<String, S3Operation> BY_NAME =
            Stream.of(values()).collect(Collectors.toUnmodifiableMap(Enum::name, Function.identity()));

    /**
     * Looks an operation up by its exact AWS API name (case-sensitive).
     *
     * @param name the name as written in configuration, for example {@code "PutObject"}
     * @return the operation, or empty when the name is not an operation Levee knows
     */
    public static Optional<S3Operation> byName(String name) {
        return Optional.ofNullable(name == null ? null : BY_NAME.get(name));
    }
}
