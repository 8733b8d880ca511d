package dev.levee.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.levee.core.S3Operation;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Decision table of SPEC.md §3: addressing, key decoding and operation names. */
class S3ClassifierTest {

    /**
     * One classifier for the whole table: {@code s3.example.com} and the shorter
     * {@code example.com} (to show the longest base domain wins and that a Host equal to a base
     * domain is path-style), plus a domain configured in upper case with a trailing dot.
     */
    private static final S3Classifier CLASSIFIER =
            S3Classifier.withBaseDomains(List.of("s3.example.com", "example.com", "S3.EU.Example.Net."));

    @ParameterizedTest(name = "[{index}] {0} {1} {2} copy={3} -> {4} | {5} | {6}")
    @CsvSource(delimiter = '|', textBlock = """
            # method | host                        | uri                                                    | copySource | resource       | key             | operation
            # --- service level ---
            GET      | s3.example.com              | /                                                      |            | ''             | ''              | ListBuckets
            GET      |                             | /                                                      |            | ''             | ''              | ListBuckets
            GET      | localhost:9000              | /?x-id=ListBuckets                                     |            | ''             | ''              | ListBuckets
            GET      | example.com                 | //                                                     |            | ''             | ''              | ListBuckets
            PUT      | s3.example.com              | /                                                      |            | ''             | ''              | Unknown
            GET      | s3.example.com              | /?acl                                                  |            | ''             | ''              | Unknown
            # --- bucket level, path-style ---
            PUT      | s3.example.com              | /photos                                                |            | photos         | ''              | CreateBucket
            PUT      | s3.example.com              | /photos/                                               |            | photos         | ''              | CreateBucket
            PUT      | s3.example.com              | /photos/                                               | /a/b       | photos         | ''              | CreateBucket
            HEAD     | s3.example.com              | /photos                                                |            | photos         | ''              | HeadBucket
            DELETE   | s3.example.com              | /photos                                                |            | photos         | ''              | DeleteBucket
            GET      | s3.example.com              | /photos                                                |            | photos         | ''              | ListObjects
            GET      | s3.example.com              | /photos?prefix=2024/&delimiter=/&max-keys=100           |            | photos         | ''              | ListObjects
            GET      | s3.example.com              | /photos?list-type=2&prefix=a&encoding-type=url         |            | photos         | ''              | ListObjectsV2
            GET      | s3.example.com              | /photos?prefix=a&list-type=2&list-type=1               |            | photos         | ''              | ListObjectsV2
            GET      | s3.example.com              | /photos?versions&prefix=a                              |            | photos         | ''              | ListObjectVersions
            GET      | s3.example.com              | /photos?uploads&key-marker=k                           |            | photos         | ''              | ListMultipartUploads
            POST     | s3.example.com              | /photos?delete                                         |            | photos         | ''              | DeleteObjects
            POST     | s3.example.com              | /photos/?delete=&x-id=DeleteObjects                    |            | photos         | ''              | DeleteObjects
            POST     | s3.example.com              | /photos                                                |            | photos         | ''              | PostObject
            POST     | s3.example.com              | /photos?uploads                                        |            | photos         | ''              | Unknown
            GET      | s3.example.com              | /photos?delete                                         |            | photos         | ''              | Unknown
            GET      | s3.example.com              | /photos?acl                                            |            | photos         | ''              | GetBucketAcl
            PUT      | s3.example.com              | /photos?acl                                            |            | photos         | ''              | PutBucketAcl
            DELETE   | s3.example.com              | /photos?acl                                            |            | photos         | ''              | Unknown
            GET      | s3.example.com              | /photos?policy                                         |            | photos         | ''              | GetBucketPolicy
            PUT      | s3.example.com              | /photos?policy                                         |            | photos         | ''              | PutBucketPolicy
            DELETE   | s3.example.com              | /photos?policy                                         |            | photos         | ''              | DeleteBucketPolicy
            GET      | s3.example.com              | /photos?policyStatus                                   |            | photos         | ''              | GetBucketPolicyStatus
            PUT      | s3.example.com              | /photos?policyStatus                                   |            | photos         | ''              | Unknown
            GET      | s3.example.com              | /photos?cors                                           |            | photos         | ''              | GetBucketCors
            PUT      | s3.example.com              | /photos?cors                                           |            | photos         | ''              | PutBucketCors
            DELETE   | s3.example.com              | /photos?cors                                           |            | photos         | ''              | DeleteBucketCors
            GET      | s3.example.com              | /photos?lifecycle                                      |            | photos         | ''              | GetBucketLifecycleConfiguration
            PUT      | s3.example.com              | /photos?lifecycle                                      |            | photos         | ''              | PutBucketLifecycleConfiguration
            DELETE   | s3.example.com              | /photos?lifecycle                                      |            | photos         | ''              | DeleteBucketLifecycle
            GET      | s3.example.com              | /photos?versioning                                     |            | photos         | ''              | GetBucketVersioning
            PUT      | s3.example.com              | /photos?versioning                                     |            | photos         | ''              | PutBucketVersioning
            DELETE   | s3.example.com              | /photos?versioning                                     |            | photos         | ''              | Unknown
            GET      | s3.example.com              | /photos?location                                       |            | photos         | ''              | GetBucketLocation
            GET      | s3.example.com              | /photos?tagging                                        |            | photos         | ''              | GetBucketTagging
            PUT      | s3.example.com              | /photos?tagging                                        |            | photos         | ''              | PutBucketTagging
            DELETE   | s3.example.com              | /photos?tagging                                        |            | photos         | ''              | DeleteBucketTagging
            GET      | s3.example.com              | /photos?website                                        |            | photos         | ''              | GetBucketWebsite
            PUT      | s3.example.com              | /photos?website                                        |            | photos         | ''              | PutBucketWebsite
            DELETE   | s3.example.com              | /photos?website                                        |            | photos         | ''              | DeleteBucketWebsite
            GET      | s3.example.com              | /photos?logging                                        |            | photos         | ''              | GetBucketLogging
            PUT      | s3.example.com              | /photos?logging                                        |            | photos         | ''              | PutBucketLogging
            GET      | s3.example.com              | /photos?notification                                   |            | photos         | ''              | GetBucketNotificationConfiguration
            PUT      | s3.example.com              | /photos?notification                                   |            | photos         | ''              | PutBucketNotificationConfiguration
            GET      | s3.example.com              | /photos?replication                                    |            | photos         | ''              | GetBucketReplication
            PUT      | s3.example.com              | /photos?replication                                    |            | photos         | ''              | PutBucketReplication
            DELETE   | s3.example.com              | /photos?replication                                    |            | photos         | ''              | DeleteBucketReplication
            GET      | s3.example.com              | /photos?encryption                                     |            | photos         | ''              | GetBucketEncryption
            PUT      | s3.example.com              | /photos?encryption                                     |            | photos         | ''              | PutBucketEncryption
            DELETE   | s3.example.com              | /photos?encryption                                     |            | photos         | ''              | DeleteBucketEncryption
            GET      | s3.example.com              | /photos?object-lock                                    |            | photos         | ''              | GetObjectLockConfiguration
            PUT      | s3.example.com              | /photos?object-lock                                    |            | photos         | ''              | PutObjectLockConfiguration
            GET      | s3.example.com              | /photos?requestPayment                                 |            | photos         | ''              | GetBucketRequestPayment
            PUT      | s3.example.com              | /photos?requestPayment                                 |            | photos         | ''              | PutBucketRequestPayment
            GET      | s3.example.com              | /photos?accelerate                                     |            | photos         | ''              | GetBucketAccelerateConfiguration
            PUT      | s3.example.com              | /photos?accelerate                                     |            | photos         | ''              | PutBucketAccelerateConfiguration
            GET      | s3.example.com              | /photos?publicAccessBlock                              |            | photos         | ''              | GetPublicAccessBlock
            PUT      | s3.example.com              | /photos?publicAccessBlock                              |            | photos         | ''              | PutPublicAccessBlock
            DELETE   | s3.example.com              | /photos?publicAccessBlock                              |            | photos         | ''              | DeletePublicAccessBlock
            GET      | s3.example.com              | /photos?ownershipControls                              |            | photos         | ''              | GetBucketOwnershipControls
            PUT      | s3.example.com              | /photos?ownershipControls                              |            | photos         | ''              | PutBucketOwnershipControls
            DELETE   | s3.example.com              | /photos?ownershipControls                              |            | photos         | ''              | DeleteBucketOwnershipControls
            GET      | s3.example.com              | /photos?analytics&id=report                            |            | photos         | ''              | Unknown
            GET      | s3.example.com              | /photos?acl&policy                                     |            | photos         | ''              | Unknown
            HEAD     | s3.example.com              | /photos?acl                                            |            | photos         | ''              | Unknown
            GET      | s3.example.com              | /photos?ACL                                            |            | photos         | ''              | ListObjects
            get      | s3.example.com              | /photos                                                |            | photos         | ''              | Unknown
            OPTIONS  | s3.example.com              | /photos                                                |            | photos         | ''              | Unknown
            # --- bucket level, virtual-hosted ---
            GET      | photos.s3.example.com       | /                                                      |            | photos         | ''              | ListObjects
            GET      | photos.s3.example.com:9000  | /?list-type=2                                          |            | photos         | ''              | ListObjectsV2
            GET      | Photos.S3.Example.COM       | /?location                                             |            | photos         | ''              | GetBucketLocation
            PUT      | photos.s3.example.com       |                                                        |            | photos         | ''              | CreateBucket
            GET      | my.dotted.bucket.s3.example.com | /?versions                                         |            | my.dotted.bucket | ''            | ListObjectVersions
            POST     | photos.s3.example.com       | /                                                      |            | photos         | ''              | PostObject
            # --- object level ---
            GET      | s3.example.com              | /photos/2024/cat.jpg                                   |            | photos         | 2024/cat.jpg    | GetObject
            GET      | s3.example.com              | /photos/cat.jpg?versionId=3HL4kqtJlcpXroDTDmJ          |            | photos         | cat.jpg         | GetObject
            GET      | s3.example.com              | /photos/cat.jpg?partNumber=2                           |            | photos         | cat.jpg         | GetObject
            GET      | s3.example.com              | /photos/cat.jpg?response-content-type=text%2Fplain&response-content-disposition=attachment |  | photos | cat.jpg | GetObject
            GET      | s3.example.com              | /photos/cat.jpg?x-id=GetObject                         |            | photos         | cat.jpg         | GetObject
            HEAD     | s3.example.com              | /photos/cat.jpg                                        |            | photos         | cat.jpg         | HeadObject
            HEAD     | s3.example.com              | /photos/cat.jpg?partNumber=1&versionId=v1              |            | photos         | cat.jpg         | HeadObject
            PUT      | s3.example.com              | /photos/cat.jpg                                        |            | photos         | cat.jpg         | PutObject
            PUT      | s3.example.com              | /photos/cat.jpg?x-id=PutObject                         |            | photos         | cat.jpg         | PutObject
            PUT      | s3.example.com              | /photos/cat.jpg                                        | ''         | photos         | cat.jpg         | PutObject
            PUT      | s3.example.com              | /photos/cat.jpg                                        | /src/a.jpg | photos         | cat.jpg         | CopyObject
            PUT      | s3.example.com              | /photos/cat.jpg?x-id=CopyObject                        | src/a%20b  | photos         | cat.jpg         | CopyObject
            PUT      | s3.example.com              | /photos/cat.jpg?partNumber=3                           |            | photos         | cat.jpg         | PutObject
            DELETE   | s3.example.com              | /photos/cat.jpg                                        |            | photos         | cat.jpg         | DeleteObject
            DELETE   | s3.example.com              | /photos/cat.jpg?versionId=v1                           |            | photos         | cat.jpg         | DeleteObject
            POST     | s3.example.com              | /photos/cat.jpg                                        |            | photos         | cat.jpg         | Unknown
            GET      | s3.example.com              | /photos/cat.jpg?acl                                    |            | photos         | cat.jpg         | GetObjectAcl
            PUT      | s3.example.com              | /photos/cat.jpg?acl                                    |            | photos         | cat.jpg         | PutObjectAcl
            GET      | s3.example.com              | /photos/cat.jpg?acl&acl=                               |            | photos         | cat.jpg         | GetObjectAcl
            GET      | s3.example.com              | /photos/cat.jpg?tagging                                |            | photos         | cat.jpg         | GetObjectTagging
            PUT      | s3.example.com              | /photos/cat.jpg?tagging&versionId=v1                   |            | photos         | cat.jpg         | PutObjectTagging
            DELETE   | s3.example.com              | /photos/cat.jpg?tagging                                |            | photos         | cat.jpg         | DeleteObjectTagging
            GET      | s3.example.com              | /photos/cat.jpg?retention                              |            | photos         | cat.jpg         | GetObjectRetention
            PUT      | s3.example.com              | /photos/cat.jpg?retention                              |            | photos         | cat.jpg         | PutObjectRetention
            GET      | s3.example.com              | /photos/cat.jpg?legal-hold                             |            | photos         | cat.jpg         | GetObjectLegalHold
            PUT      | s3.example.com              | /photos/cat.jpg?legal-hold                             |            | photos         | cat.jpg         | PutObjectLegalHold
            GET      | s3.example.com              | /photos/cat.jpg?attributes                             |            | photos         | cat.jpg         | GetObjectAttributes
            GET      | s3.example.com              | /photos/cat.jpg?torrent                                |            | photos         | cat.jpg         | GetObjectTorrent
            POST     | s3.example.com              | /photos/cat.jpg?restore&versionId=v1                   |            | photos         | cat.jpg         | RestoreObject
            POST     | s3.example.com              | /photos/data.csv?select&select-type=2                  |            | photos         | data.csv        | SelectObjectContent
            POST     | s3.example.com              | /photos/data.csv?select-type=2&select=                 |            | photos         | data.csv        | SelectObjectContent
            POST     | s3.example.com              | /photos/data.csv?select                                |            | photos         | data.csv        | Unknown
            PUT      | s3.example.com              | /photos/cat.jpg?policy                                 |            | photos         | cat.jpg         | Unknown
            GET      | s3.example.com              | /photos/cat.jpg?acl&tagging                            |            | photos         | cat.jpg         | Unknown
            PATCH    | s3.example.com              | /photos/cat.jpg                                        |            | photos         | cat.jpg         | Unknown
            get      | s3.example.com              | /photos/cat.jpg                                        |            | photos         | cat.jpg         | Unknown
            # --- multipart ---
            POST     | s3.example.com              | /photos/big.iso?uploads                                |            | photos         | big.iso         | CreateMultipartUpload
            POST     | s3.example.com              | /photos/big.iso?uploads=&x-id=CreateMultipartUpload    |            | photos         | big.iso         | CreateMultipartUpload
            PUT      | s3.example.com              | /photos/big.iso?partNumber=1&uploadId=VXBsb2FkIElE     |            | photos         | big.iso         | UploadPart
            PUT      | s3.example.com              | /photos/big.iso?uploadId=VXBsb2FkIElE&partNumber=2     |            | photos         | big.iso         | UploadPart
            PUT      | s3.example.com              | /photos/big.iso?%75ploadId=u1&part%4Eumber=7           |            | photos         | big.iso         | UploadPart
            PUT      | s3.example.com              | /photos/big.iso?uploadId=u1&partNumber=2               | /src/big   | photos         | big.iso         | UploadPartCopy
            PUT      | s3.example.com              | /photos/big.iso?uploadId=u1                            |            | photos         | big.iso         | Unknown
            POST     | s3.example.com              | /photos/big.iso?uploadId=u1                            |            | photos         | big.iso         | CompleteMultipartUpload
            DELETE   | s3.example.com              | /photos/big.iso?uploadId=u1                            |            | photos         | big.iso         | AbortMultipartUpload
            GET      | s3.example.com              | /photos/big.iso?uploadId=u1&max-parts=100&part-number-marker=5 |    | photos         | big.iso         | ListParts
            GET      | s3.example.com              | /photos/big.iso?uploads                                |            | photos         | big.iso         | Unknown
            # --- presigned URLs (SigV4 and SigV2 parameters are ignored) ---
            GET      | s3.example.com              | /photos/cat.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLE%2F20240101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20240101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=0f1e2d | | photos | cat.jpg | GetObject
            PUT      | photos.s3.example.com       | /cat.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=abc&x-id=PutObject |  | photos | cat.jpg    | PutObject
            PUT      | s3.example.com              | /photos/big.iso?X-Amz-Expires=60&partNumber=4&uploadId=u1&X-Amz-Signature=ab |  | photos | big.iso | UploadPart
            GET      | s3.example.com              | /photos/cat.jpg?AWSAccessKeyId=AKIA&Expires=1700000000&Signature=abc%3D |  | photos | cat.jpg  | GetObject
            # --- object level, virtual-hosted ---
            GET      | photos.s3.example.com       | /2024/cat.jpg                                          |            | photos         | 2024/cat.jpg    | GetObject
            GET      | photos.s3.example.com:443   | /2024/cat.jpg?tagging                                  |            | photos         | 2024/cat.jpg    | GetObjectTagging
            GET      | PHOTOS.S3.EXAMPLE.COM       | /Cat.JPG                                               |            | photos         | Cat.JPG         | GetObject
            GET      | photos.s3.example.com.      | /cat.jpg                                               |            | photos         | cat.jpg         | GetObject
            GET      | photos.example.com          | /cat.jpg                                               |            | photos         | cat.jpg         | GetObject
            GET      | photos.s3.eu.example.net    | /cat.jpg                                               |            | photos         | cat.jpg         | GetObject
            GET      | photos.s3.example.com       | //lead/slash                                           |            | photos         | /lead/slash     | GetObject
            DELETE   | photos.s3.example.com       | /photos/cat.jpg                                        |            | photos         | photos/cat.jpg  | DeleteObject
            GET      | photos.other.org            | /album/cat.jpg                                         |            | album          | cat.jpg         | GetObject
            GET      | s3.example.com:9000         | /album/cat.jpg                                         |            | album          | cat.jpg         | GetObject
            GET      | xs3.example.com             | /cat.jpg                                               |            | xs3            | cat.jpg         | GetObject
            GET      | .s3.example.com             | /album/cat.jpg                                         |            | album          | cat.jpg         | GetObject
            GET      | [::1]:9000                  | /album/cat.jpg                                         |            | album          | cat.jpg         | GetObject
            # --- keys: decoded once, '+' is a plus; invalid encodings kept raw and Unknown (S3: 400 InvalidURI) ---
            GET      | s3.example.com              | /photos/%E2%9C%93.txt                                  |            | photos         | ✓.txt           | GetObject
            GET      | s3.example.com              | /photos/a%20b.txt                                      |            | photos         | 'a b.txt'       | GetObject
            GET      | s3.example.com              | /photos/a+b.txt                                        |            | photos         | a+b.txt         | GetObject
            GET      | s3.example.com              | /photos/a%2Bb                                          |            | photos         | a+b             | GetObject
            GET      | s3.example.com              | /photos/dir%2Fsub%2Ffile                               |            | photos         | dir/sub/file    | GetObject
            GET      | s3.example.com              | /photos/100%25                                         |            | photos         | 100%            | GetObject
            GET      | s3.example.com              | /photos/%25E2%259C%2593                                |            | photos         | %E2%9C%93       | GetObject
            GET      | s3.example.com              | /photos/%c3%a9t%C3%A9                                  |            | photos         | été             | GetObject
            GET      | s3.example.com              | /photos/%F0%9F%98%80                                   |            | photos         | 😀              | GetObject
            GET      | s3.example.com              | /photos/ünïcødé ✓                                      |            | photos         | ünïcødé ✓       | GetObject
            GET      | s3.example.com              | /photos/a%3Fb.txt?acl                                  |            | photos         | a?b.txt         | GetObjectAcl
            GET      | s3.example.com              | /photos/bad%ZZkey                                      |            | photos         | bad%ZZkey       | Unknown
            GET      | s3.example.com              | /photos/trailing%2                                     |            | photos         | trailing%2      | Unknown
            GET      | s3.example.com              | /photos/%FF%FE                                         |            | photos         | %FF%FE          | Unknown
            GET      | s3.example.com              | /photos/%C0%AF                                         |            | photos         | %C0%AF          | Unknown
            GET      | s3.example.com              | /photos/%ED%A0%80                                      |            | photos         | %ED%A0%80       | Unknown
            GET      | s3.example.com              | /photos/%E2%9C                                         |            | photos         | %E2%9C          | Unknown
            # issue 10: a key or bucket S3 refuses as InvalidURI is never GetObject (matched no GetObject quota)
            GET      | s3.example.com              | /mybucket/%ZZbad                                       |            | mybucket       | %ZZbad          | Unknown
            GET      | s3.example.com              | /mybucket/%                                            |            | mybucket       | %               | Unknown
            GET      | s3.example.com              | /mybucket/a%2                                          |            | mybucket       | a%2             | Unknown
            GET      | s3.example.com              | /mybucket/%C3%28                                       |            | mybucket       | %C3%28          | Unknown
            GET      | s3.example.com              | /mybucket/%ZZ/k                                        |            | mybucket       | %ZZ/k           | Unknown
            PUT      | s3.example.com              | /mybucket/%ZZbad                                       |            | mybucket       | %ZZbad          | Unknown
            PUT      | s3.example.com              | /mybucket/%ZZbad                                       | src/k      | mybucket       | %ZZbad          | Unknown
            DELETE   | s3.example.com              | /mybucket/a%2                                          |            | mybucket       | a%2             | Unknown
            HEAD     | s3.example.com              | /mybucket/%C3                                          |            | mybucket       | %C3             | Unknown
            GET      | s3.example.com              | /mybucket/%ZZbad?acl                                   |            | mybucket       | %ZZbad          | Unknown
            GET      | s3.example.com              | /%ZZ/k                                                 |            | %ZZ            | k               | Unknown
            GET      | s3.example.com              | /b%ZZ?list-type=2                                      |            | b%ZZ           | ''              | Unknown
            GET      | photos.s3.example.com       | /%ZZbad                                                |            | photos         | %ZZbad          | Unknown
            GET      | s3.example.com              | /mybucket/ok%41                                        |            | mybucket       | okA             | GetObject
            GET      | s3.example.com              | /my%2Dbucket/k                                         |            | my-bucket      | k               | GetObject
            # --- odd paths: never normalised, never thrown on ---
            GET      | s3.example.com              | photos/cat.jpg                                         |            | photos         | cat.jpg         | GetObject
            GET      | s3.example.com              | //photos/cat.jpg                                       |            | photos         | cat.jpg         | GetObject
            GET      | s3.example.com              | /photos//double//slash                                 |            | photos         | /double//slash  | GetObject
            GET      | s3.example.com              | /photos///                                             |            | photos         | //              | GetObject
            GET      | s3.example.com              | /photos/./a/../b                                       |            | photos         | ./a/../b        | GetObject
            GET      | s3.example.com              | /../photos                                             |            | ..             | photos          | GetObject
            GET      | s3.example.com              | /%2Fphotos                                             |            | /photos        | ''              | ListObjects
            GET      | s3.example.com              | /photos%2Fcat.jpg                                      |            | photos/cat.jpg | ''              | ListObjects
            GET      | s3.example.com              | /photos/a#b                                            |            | photos         | a#b             | GetObject
            GET      | s3.example.com              | *                                                      |            | *              | ''              | ListObjects
            OPTIONS  | s3.example.com              | *                                                      |            | *              | ''              | Unknown
            # --- absolute-form request-target: the authority replaces the Host header ---
            GET      | ignored.example.org         | http://s3.example.com/photos/cat.jpg                   |            | photos         | cat.jpg         | GetObject
            GET      | ignored.example.org         | http://photos.s3.example.com:9000/cat.jpg?acl          |            | photos         | cat.jpg         | GetObjectAcl
            GET      | photos.s3.example.com       | HTTPS://user:pw@s3.example.com/album/cat.jpg           |            | album          | cat.jpg         | GetObject
            GET      | s3.example.com              | http://photos.s3.example.com?list-type=2               |            | photos         | ''              | ListObjectsV2
            GET      |                             | http://s3.example.com                                  |            | ''             | ''              | ListBuckets
            """)
    void classifies(String method, String host, String uri, String copySource,
            String resource, String key, S3Operation operation) {
        S3Classification c = CLASSIFIER.classify(S3Request.fromRequestUri(method, host, uri, copySource));

        assertThat(c).isEqualTo(new S3Classification(resource, key, operation));
    }

    @Test
    void pathStyleOnlyIgnoresVirtualHosts() {
        S3Classifier pathStyle = S3Classifier.pathStyleOnly();

        assertThat(pathStyle.classify(S3Request.fromRequestUri("GET", "photos.s3.example.com", "/cat.jpg", null)))
                .isEqualTo(new S3Classification("cat.jpg", "", S3Operation.ListObjects));
        assertThat(pathStyle.classify(S3Request.fromRequestUri("GET", "photos.s3.example.com", "/album/a", null)))
                .isEqualTo(new S3Classification("album", "a", S3Operation.GetObject));
        assertThat(pathStyle).hasToString("S3Classifier[path-style only]");
    }

    @Test
    void emptyBaseDomainListIsPathStyleOnly() {
        S3Classifier none = S3Classifier.withBaseDomains(List.of());

        assertThat(none.classify(S3Request.fromRequestUri("GET", "photos.s3.example.com", "/album/a", null)))
                .isEqualTo(new S3Classification("album", "a", S3Operation.GetObject));
    }

    @Test
    void baseDomainsAreNormalisedAndValidated() {
        S3Classifier c = S3Classifier.withBaseDomains(List.of(".S3.Example.com.", "s3.example.com", "example.com"));
        assertThat(c).hasToString("S3Classifier[baseDomains=s3.example.com,example.com]");

        assertThatThrownBy(() -> S3Classifier.withBaseDomains(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> S3Classifier.withBaseDomains(Arrays.asList("s3.example.com", null)))
                .isInstanceOf(NullPointerException.class);
        for (String bad : List.of("", ".", "s3.example.com:9000", "http://s3.example.com", "s3 example.com",
                "s3.example.com/", "user@s3.example.com", "s3.example.com\n")) {
            assertThatThrownBy(() -> S3Classifier.withBaseDomains(List.of(bad)))
                    .as("base domain %s", bad)
                    .isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void nullRequestAndNullComponentsClassifyAsUnknown() {
        assertThat(CLASSIFIER.classify(null)).isEqualTo(new S3Classification("", "", S3Operation.Unknown));
        assertThat(CLASSIFIER.classify(new S3Request(null, null, null, null, false)))
                .isEqualTo(new S3Classification("", "", S3Operation.Unknown));
        assertThat(CLASSIFIER.classify(new S3Request(null, null, "/photos/k", null, true)))
                .isEqualTo(new S3Classification("photos", "k", S3Operation.Unknown));
        assertThat(CLASSIFIER.classify(S3Request.fromRequestUri(null, null, null, null)))
                .isEqualTo(new S3Classification("", "", S3Operation.Unknown));
        assertThat(CLASSIFIER.classify(new S3Request("GET", "", "", "", false)))
                .isEqualTo(new S3Classification("", "", S3Operation.ListBuckets));
    }

    @Test
    void controlCharactersAndNulSurviveDecodingUnchanged() {
        S3Classification c = CLASSIFIER.classify(S3Request.fromRequestUri("GET", null, "/photos/a%00b%0A%0d%7F%1B[0m", null));

        assertThat(c).isEqualTo(new S3Classification("photos", "a\u0000b\n\r\u007f\u001b[0m", S3Operation.GetObject));
        assertThat(CLASSIFIER.classify(S3Request.fromRequestUri("PUT", null, "/ph%00otos/\u0000k", null)))
                .isEqualTo(new S3Classification("ph\u0000otos", "\u0000k", S3Operation.PutObject));
    }

    @Test
    void absurdlyLongPathsAreClassified() {
        String plain = "x".repeat(10_000);
        assertThat(CLASSIFIER.classify(S3Request.fromRequestUri("GET", null, "/photos/" + plain, null)))
                .isEqualTo(new S3Classification("photos", plain, S3Operation.GetObject));

        String encoded = "%E2%9C%93".repeat(3_000);
        assertThat(CLASSIFIER.classify(S3Request.fromRequestUri("PUT", null, "/photos/" + encoded, null)))
                .isEqualTo(new S3Classification("photos", "✓".repeat(3_000), S3Operation.PutObject));

        String slashes = "/".repeat(10_000);
        assertThat(CLASSIFIER.classify(S3Request.fromRequestUri("GET", null, slashes, null)))
                .isEqualTo(new S3Classification("", "", S3Operation.ListBuckets));

        String query = "acl&".repeat(5_000);
        assertThat(CLASSIFIER.classify(S3Request.fromRequestUri("GET", null, "/photos/k?" + query, null)))
                .isEqualTo(new S3Classification("photos", "k", S3Operation.GetObjectAcl));
    }

    @Test
    void fromRequestUriSplitsPathAndQuery() {
        assertThat(S3Request.fromRequestUri("GET", "h", "/b/k", null))
                .isEqualTo(new S3Request("GET", "h", "/b/k", null, false));
        assertThat(S3Request.fromRequestUri("GET", "h", "/b/k?", null))
                .isEqualTo(new S3Request("GET", "h", "/b/k", "", false));
        assertThat(S3Request.fromRequestUri("PUT", "h", "/b/k?uploadId=u?x&partNumber=1", "/src/k"))
                .isEqualTo(new S3Request("PUT", "h", "/b/k", "uploadId=u?x&partNumber=1", true));
        assertThat(S3Request.fromRequestUri("PUT", "h", "/b/k", " "))
                .isEqualTo(new S3Request("PUT", "h", "/b/k", null, false));
        assertThat(S3Request.fromRequestUri("GET", "h", "http://user@other:81/b/k?acl", null))
                .isEqualTo(new S3Request("GET", "other:81", "/b/k", "acl", false));
        assertThat(S3Request.fromRequestUri("GET", "h", "http:///b/k", null))
                .isEqualTo(new S3Request("GET", "h", "/b/k", null, false));
    }

    @Test
    void queryLeftInThePathIsMergedWithTheQueryComponent() {
        S3Request unsplit = new S3Request("PUT", "s3.example.com", "/photos/big.iso?uploadId=u1", "partNumber=2", false);

        assertThat(CLASSIFIER.classify(unsplit))
                .isEqualTo(new S3Classification("photos", "big.iso", S3Operation.UploadPart));
    }

    @Test
    void classificationRejectsNullComponents() {
        assertThatThrownBy(() -> new S3Classification(null, "", S3Operation.Unknown))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new S3Classification("", null, S3Operation.Unknown))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new S3Classification("", "", null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void levelsFollowResourceAndKey() {
        S3Classification service = CLASSIFIER.classify(S3Request.fromRequestUri("GET", null, "/", null));
        S3Classification bucket = CLASSIFIER.classify(S3Request.fromRequestUri("GET", null, "/b", null));
        S3Classification object = CLASSIFIER.classify(S3Request.fromRequestUri("GET", null, "/b/k", null));

        assertThat(service.serviceLevel()).isTrue();
        assertThat(service.objectLevel()).isFalse();
        assertThat(bucket.serviceLevel()).isFalse();
        assertThat(bucket.objectLevel()).isFalse();
        assertThat(object.objectLevel()).isTrue();
    }
}
