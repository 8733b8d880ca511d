package dev.levee.s3;

import static dev.levee.s3.S3Operation.*;


/**
 * Maps (level, method, sub-resource) to an S3 operation (docs/design.md §3; AWS S3 API reference,
 * request syntax of each operation).
 *
 * <p>The three levels are service ({@code GET /}), bucket (no key) and object (non-empty key).
 * Each level first handles the request without a sub-resource, then looks the single
 * sub-resource up in a table whose columns are {@code GET, PUT, DELETE, POST}; a cell that AWS
 * does not define is {@link S3Operation#Unknown}. HEAD exists only without sub-resources
 * ({@code HeadBucket}, {@code HeadObject}). A request with two sub-resources, or with a method
 * other than the five, is Unknown. The switches over {@link SubResource} are exhaustive, so a new
 * sub-resource cannot be added without deciding its cells.
 */
final class OperationTable {

    private OperationTable() {
    }

    /** Classifies a request that names no bucket. */
    static S3Operation service(HttpMethod method, QueryFacts query) {
        return method == HttpMethod.GET && !query.hasSubResource() ? ListBuckets : Unknown;
    }

    /** Classifies a request that names a bucket and no object. */
    static S3Operation bucket(HttpMethod method, QueryFacts query) {
        if (method == null) {
            return Unknown;
        }
        if (!query.hasSubResource()) {
            return switch (method) {
                case GET -> "2".equals(query.listType()) ? ListObjectsV2 : ListObjects;
                case HEAD -> HeadBucket;
                case PUT -> CreateBucket;
                case DELETE -> DeleteBucket;
                case POST -> PostObject; // browser form upload: the key is in the form body
            };
        }
        SubResource sub = query.single();
        if (sub == null || method == HttpMethod.HEAD) {
            return Unknown;
        }
        return switch (sub) {
            //                                 GET                               PUT                               DELETE                         POST
            case ACL -> by(method,                 GetBucketAcl,                     PutBucketAcl,                     Unknown,                       Unknown);
            case POLICY -> by(method,              GetBucketPolicy,                  PutBucketPolicy,                  DeleteBucketPolicy,            Unknown);
            case POLICY_STATUS -> by(method,       GetBucketPolicyStatus,            Unknown,                          Unknown,                       Unknown);
            case CORS -> by(method,                GetBucketCors,                    PutBucketCors,                    DeleteBucketCors,              Unknown);
            case LIFECYCLE -> by(method,           GetBucketLifecycleConfiguration,  PutBucketLifecycleConfiguration,  DeleteBucketLifecycle,         Unknown);
            case VERSIONING -> by(method,          GetBucketVersioning,              PutBucketVersioning,              Unknown,                       Unknown);
            case LOCATION -> by(method,            GetBucketLocation,                Unknown,                          Unknown,                       Unknown);
            case TAGGING -> by(method,             GetBucketTagging,                 PutBucketTagging,                 DeleteBucketTagging,           Unknown);
            case WEBSITE -> by(method,             GetBucketWebsite,                 PutBucketWebsite,                 DeleteBucketWebsite,           Unknown);
            case LOGGING -> by(method,             GetBucketLogging,                 PutBucketLogging,                 Unknown,                       Unknown);
            case NOTIFICATION -> by(method,        GetBucketNotificationConfiguration, PutBucketNotificationConfiguration, Unknown,                 Unknown);
            case REPLICATION -> by(method,         GetBucketReplication,             PutBucketReplication,             DeleteBucketReplication,       Unknown);
            case ENCRYPTION -> by(method,          GetBucketEncryption,              PutBucketEncryption,              DeleteBucketEncryption,        Unknown);
            case OBJECT_LOCK -> by(method,         GetObjectLockConfiguration,       PutObjectLockConfiguration,       Unknown,                       Unknown);
            case REQUEST_PAYMENT -> by(method,     GetBucketRequestPayment,          PutBucketRequestPayment,          Unknown,                       Unknown);
            case ACCELERATE -> by(method,          GetBucketAccelerateConfiguration, PutBucketAccelerateConfiguration, Unknown,                       Unknown);
            case PUBLIC_ACCESS_BLOCK -> by(method, GetPublicAccessBlock,             PutPublicAccessBlock,             DeletePublicAccessBlock,       Unknown);
            case OWNERSHIP_CONTROLS -> by(method,  GetBucketOwnershipControls,       PutBucketOwnershipControls,       DeleteBucketOwnershipControls, Unknown);
            case VERSIONS -> by(method,            ListObjectVersions,               Unknown,                          Unknown,                       Unknown);
            case UPLOADS -> by(method,             ListMultipartUploads,             Unknown,                          Unknown,                       Unknown);
            case DELETE -> by(method,              Unknown,                          Unknown,                          Unknown,                       DeleteObjects);
            case RETENTION, LEGAL_HOLD, ATTRIBUTES, TORRENT, RESTORE, SELECT, UPLOAD_ID, OTHER -> Unknown;
        };
    }

    /**
     * Classifies a request that names an object.
     *
     * <p>Two cells depend on more than the sub-resource: {@code PUT ?uploadId} is
     * {@code UploadPart} only with {@code partNumber} (and {@code UploadPartCopy} with a copy
     * source), and {@code POST ?select} is {@code SelectObjectContent} only with
     * {@code select-type=2}. A PUT with {@code partNumber} but no {@code uploadId} is a plain
     * PutObject, as Ceph RGW and MinIO route it.
     */
    static S3Operation object(HttpMethod method, QueryFacts query, boolean copySource) {
        if (method == null) {
            return Unknown;
        }
        if (!query.hasSubResource()) {
            return switch (method) {
                case GET -> GetObject;
                case HEAD -> HeadObject;
                case PUT -> copySource ? CopyObject : PutObject;
                case DELETE -> DeleteObject;
                case POST -> Unknown;
            };
        }
        SubResource sub = query.single();
        if (sub == null || method == HttpMethod.HEAD) {
            return Unknown;
        }
        return switch (sub) {
            //                          GET                  PUT                          DELETE                POST
            case ACL -> by(method,          GetObjectAcl,        PutObjectAcl,                Unknown,              Unknown);
            case TAGGING -> by(method,      GetObjectTagging,    PutObjectTagging,            DeleteObjectTagging,  Unknown);
            case RETENTION -> by(method,    GetObjectRetention,  PutObjectRetention,          Unknown,              Unknown);
            case LEGAL_HOLD -> by(method,   GetObjectLegalHold,  PutObjectLegalHold,          Unknown,              Unknown);
            case ATTRIBUTES -> by(method,   GetObjectAttributes, Unknown,                     Unknown,              Unknown);
            case TORRENT -> by(method,      GetObjectTorrent,    Unknown,                     Unknown,              Unknown);
            case RESTORE -> by(method,      Unknown,             Unknown,                     Unknown,              RestoreObject);
            case SELECT -> by(method,       Unknown,             Unknown,                     Unknown,              selectObject(query));
            case UPLOADS -> by(method,      Unknown,             Unknown,                     Unknown,              CreateMultipartUpload);
            case UPLOAD_ID -> by(method,    ListParts,           uploadPart(query, copySource), AbortMultipartUpload, CompleteMultipartUpload);
            case POLICY, POLICY_STATUS, CORS, LIFECYCLE, VERSIONING, LOCATION, WEBSITE, LOGGING, NOTIFICATION,
                    REPLICATION, ENCRYPTION, OBJECT_LOCK, REQUEST_PAYMENT, ACCELERATE, PUBLIC_ACCESS_BLOCK,
                    OWNERSHIP_CONTROLS, VERSIONS, DELETE, OTHER -> Unknown;
        };
    }

    private static S3Operation uploadPart(QueryFacts query, boolean copySource) {
        if (!query.partNumber()) {
            return Unknown;
        }
        return copySource ? UploadPartCopy : UploadPart;
    }

    private static S3Operation selectObject(QueryFacts query) {
        return "2".equals(query.selectType()) ? SelectObjectContent : Unknown;
    }

    /** Picks the cell of a row for a method other than HEAD (HEAD has no sub-resource cells). */
    private static S3Operation by(HttpMethod method, S3Operation get, S3Operation put, S3Operation delete,
            S3Operation post) {
        return switch (method) {
            case GET -> get;
            case PUT -> put;
            case DELETE -> delete;
            case POST -> post;
            case HEAD -> Unknown;
        };
    }
}
