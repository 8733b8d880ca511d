package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.MultiMap;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link SigV2Verifier} against signatures it did not make: the worked examples of the Amazon S3
 * guide ("Signing and authenticating REST requests (AWS signature version 2)": their signatures were
 * computed for the bucket {@code johnsmith}, which later editions renamed in the text only), and
 * URLs and headers made by Debian's boto3 1.26 / botocore 1.29 (its default presigner, and
 * {@code HmacV1Auth}), the clients of the client matrix.
 */
class SigV2VerifierTest {

    static final String AWS_KEY = "AKIAIOSFODNN7EXAMPLE";
    static final SigningSecret AWS_SECRET = SigningSecret.of("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
    static final String KEY = "AKIAVERIFIEDKEY";
    static final SigningSecret SECRET = SigningSecret.of("the-real-secret/0123456789+abcdefghijklmn");
    /** When the boto3 vectors were made: their URLs expire 600 s later, at 1796000600. */
    static final long BOTO_NOW = 1_796_000_000_000L;
    static final long SKEW = Duration.ofMinutes(15).toMillis();

    /** Headers from {@code "Name: value ;; Name: value"}. */
    static MultiMap headers(String list) {
        MultiMap h = MultiMap.caseInsensitiveMultiMap();
        if (list != null) {
            for (String line : list.split(" ;; ")) {
                int colon = line.indexOf(':');
                h.add(line.substring(0, colon).strip(), line.substring(colon + 1).strip());
            }
        }
        return h;
    }

    static long rfc1123(String date) {
        return ZonedDateTime.parse(date, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant().toEpochMilli();
    }

    static SigV4Verifier.Verdict verify(SigV4Verifier.Request r, String key, SigningSecret secret, String hostBucket,
                                        long now) {
        assertThat(SigV2Verifier.claims(r.headers(), r.rawQuery())).isTrue();
        assertThat(Credentials.accessKeyId(r.headers().get("Authorization"), r.rawQuery())).isEqualTo(key);
        return SigV2Verifier.verify(r, key, secret, hostBucket, now, SKEW);
    }

    static void assertRefused(SigV4Verifier.Verdict v, int status, String code) {
        assertThat(v.verified()).as(v.reason()).isFalse();
        assertThat(v.status()).as(v.reason()).isEqualTo(status);
        assertThat(v.code()).as(v.reason()).isEqualTo(code);
        assertThat(v.message() + v.reason()).doesNotContain("the-real-secret", "wJalrXUtnFEMI");
    }

    /**
     * The guide's header examples (Object GET, Object PUT, List, Fetch ?acl, Delete with x-amz-date
     * beside Date, Upload to a CNAME bucket with repeated metadata, List all my buckets, Unicode keys);
     * each is refused once a signed part changes.
     */
    @ParameterizedTest(name = "[{index}] {0} {1}")
    @CsvSource(delimiter = '|', nullValues = "NULL", textBlock = """
            GET    | /photos/puppy.jpg | NULL | johnsmith | Date: Tue, 27 Mar 2007 19:36:42 +0000 | bWq2s1WEIj+Ydj0vQ697zp+IXMU=
            PUT    | /photos/puppy.jpg | NULL | johnsmith | Content-Type: image/jpeg ;; Content-Length: 94328 ;; Date: Tue, 27 Mar 2007 21:15:45 +0000 | MyyxeRY7whkBe+bq8fHCL/2kKUg=
            GET    | / | prefix=photos&max-keys=50&marker=puppy | johnsmith | User-Agent: Mozilla/5.0 ;; Date: Tue, 27 Mar 2007 19:42:41 +0000 | htDYFYduRNen8P9ZfE/s9SuKy0U=
            GET    | / | acl | johnsmith | Date: Tue, 27 Mar 2007 19:44:46 +0000 | c2WLPFtWHVgbEmeEG93a4cG37dM=
            DELETE | /johnsmith/photos/puppy.jpg | NULL | NULL | User-Agent: dotnet ;; Date: Tue, 27 Mar 2007 21:20:27 +0000 ;; x-amz-date: Tue, 27 Mar 2007 21:20:26 +0000 | lx3byBScXR6KzyMaifNkardMwNk=
            PUT    | /db-backup.dat.gz | NULL | static.johnsmith.net | User-Agent: curl/7.15.5 ;; Date: Tue, 27 Mar 2007 21:06:08 +0000 ;; x-amz-acl: public-read ;; content-type: application/x-download ;; Content-MD5: 4gJE4saaMU4BqNR0kLY+lw== ;; X-Amz-Meta-ReviewedBy: joe@johnsmith.net ;; X-Amz-Meta-ReviewedBy: jane@johnsmith.net ;; X-Amz-Meta-FileChecksum: 0x02661779 ;; X-Amz-Meta-ChecksumAlgorithm: crc32 ;; Content-Disposition: attachment; filename=database.dat ;; Content-Encoding: gzip ;; Content-Length: 5913339 | ilyl83RwaSoYIEdixDQcA4OnAnc=
            GET    | / | NULL | NULL | Date: Wed, 28 Mar 2007 01:29:59 +0000 | qGdzdERIC03wnaRNKh6OqZehG9s=
            GET    | /dictionary/fran%C3%A7ais/pr%c3%a9f%c3%a8re | NULL | NULL | Date: Wed, 28 Mar 2007 01:49:49 +0000 | DNEZGsoieTZ92F3bUfSPQcbGmlM=
            """)
    void theGuidesHeaderExamplesVerify(String method, String path, String query, String hostBucket, String headerList,
                                       String signature) {
        MultiMap h = headers(headerList).add("Authorization", "AWS " + AWS_KEY + ":" + signature);
        String date = h.contains("x-amz-date") ? h.get("x-amz-date") : h.get("Date");
        long now = rfc1123(date);
        SigV4Verifier.Request r = new SigV4Verifier.Request(method, path, query, h);
        assertThat(verify(r, AWS_KEY, AWS_SECRET, hostBucket, now)).isEqualTo(SigV4Verifier.Verdict.VERIFIED);
        // within the skew either way, and not beyond
        assertThat(verify(r, AWS_KEY, AWS_SECRET, hostBucket, now + SKEW).verified()).isTrue();
        assertRefused(verify(r, AWS_KEY, AWS_SECRET, hostBucket, now - SKEW - 1000), 403, "RequestTimeTooSkewed");
        // another secret, method, path, bucket, sub-resource or Date
        assertRefused(verify(r, AWS_KEY, SECRET, hostBucket, now), 403, "SignatureDoesNotMatch");
        assertRefused(verify(new SigV4Verifier.Request("HEAD", path, query, h), AWS_KEY, AWS_SECRET, hostBucket, now), 403,
                "SignatureDoesNotMatch");
        assertRefused(verify(new SigV4Verifier.Request(method, path + "x", query, h), AWS_KEY, AWS_SECRET, hostBucket, now),
                403, "SignatureDoesNotMatch");
        assertRefused(verify(r, AWS_KEY, AWS_SECRET, "other", now), 403, "SignatureDoesNotMatch");
        String other = query == null ? "versionId=1" : query + "&versionId=1";
        assertRefused(verify(new SigV4Verifier.Request(method, path, other, h), AWS_KEY, AWS_SECRET, hostBucket, now), 403,
                "SignatureDoesNotMatch");
        MultiMap added = MultiMap.caseInsensitiveMultiMap().addAll(h).add("x-amz-meta-added", "1");
        assertRefused(verify(new SigV4Verifier.Request(method, path, query, added), AWS_KEY, AWS_SECRET, hostBucket, now),
                403, "SignatureDoesNotMatch");
        // a header the signature does not cover may change
        MultiMap unsigned = MultiMap.caseInsensitiveMultiMap().addAll(h).set("User-Agent", "another").add("Range", "bytes=0-9");
        assertThat(verify(new SigV4Verifier.Request(method, path, query, unsigned), AWS_KEY, AWS_SECRET, hostBucket, now)
                .verified()).isTrue();
        // a query parameter that is not a sub-resource is not signed
        String notSigned = query == null ? "max-keys=1" : query + "&max-keys=1";
        assertThat(verify(new SigV4Verifier.Request(method, path, notSigned, h), AWS_KEY, AWS_SECRET, hostBucket, now)
                .verified()).isTrue();
    }

    /**
     * With {@code x-amz-date} the guide's text leaves the Date line empty and signs x-amz-date among
     * the amz headers; its Delete example (Date and x-amz-date both sent) puts x-amz-date's value on
     * the Date line instead. Both are accepted when both headers come; with x-amz-date alone, the text's.
     */
    @Test
    void xAmzDateIsSignedAsTheGuidesTextSaysAndAsItsExampleDoes() {
        long now = rfc1123("Tue, 27 Mar 2007 21:20:26 +0000");
        String path = "/johnsmith/photos/puppy.jpg";
        String text = "AWS " + AWS_KEY + ":R4dJ53KECjStyBO5iTBJZ4XVOaI=";
        String example = "AWS " + AWS_KEY + ":lx3byBScXR6KzyMaifNkardMwNk=";
        MultiMap both = headers("Date: Tue, 27 Mar 2007 21:20:27 +0000 ;; x-amz-date: Tue, 27 Mar 2007 21:20:26 +0000");
        MultiMap amzOnly = headers("x-amz-date: Tue, 27 Mar 2007 21:20:26 +0000");
        for (String auth : new String[] {text, example}) {
            MultiMap h = MultiMap.caseInsensitiveMultiMap().addAll(both).add("Authorization", auth);
            assertThat(verify(new SigV4Verifier.Request("DELETE", path, null, h), AWS_KEY, AWS_SECRET, null, now).verified())
                    .as(auth).isTrue();
        }
        MultiMap h = MultiMap.caseInsensitiveMultiMap().addAll(amzOnly).add("Authorization", text);
        assertThat(verify(new SigV4Verifier.Request("DELETE", path, null, h), AWS_KEY, AWS_SECRET, null, now).verified()).isTrue();
        h.set("Authorization", example);
        assertRefused(verify(new SigV4Verifier.Request("DELETE", path, null, h), AWS_KEY, AWS_SECRET, null, now), 403,
                "SignatureDoesNotMatch");
    }

    /** The guide's query-string example: verified until its Expires second has passed, then "Request has expired". */
    @Test
    void theGuidesPresignedExampleVerifiesUntilItExpires() {
        SigV4Verifier.Request r = new SigV4Verifier.Request("GET", "/photos/puppy.jpg", "AWSAccessKeyId=" + AWS_KEY
                + "&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires=1175139620", headers("Host: johnsmith.s3.amazonaws.com"));
        assertThat(verify(r, AWS_KEY, AWS_SECRET, "johnsmith", 1_175_139_620_999L)).isEqualTo(SigV4Verifier.Verdict.VERIFIED);
        // no skew applies to a presigned URL's time: made long before, it is good until it expires
        assertThat(verify(r, AWS_KEY, AWS_SECRET, "johnsmith", 0L).verified()).isTrue();
        SigV4Verifier.Verdict expired = verify(r, AWS_KEY, AWS_SECRET, "johnsmith", 1_175_139_621_000L);
        assertRefused(expired, 403, "AccessDenied");
        assertThat(expired.message()).isEqualTo("Request has expired");
        assertRefused(verify(r, AWS_KEY, AWS_SECRET, null, 1_175_139_620_000L), 403, "SignatureDoesNotMatch");
        assertRefused(verify(r, AWS_KEY, SECRET, "johnsmith", 1_175_139_620_000L), 403, "SignatureDoesNotMatch");
    }

    /**
     * URLs presigned by Debian's boto3 1.26 with its defaults ({@code generate_presigned_url}, path
     * style unless virtual): GET of an awkward key, PUT, GET with a response override (signed decoded),
     * a virtual-hosted GET, and a bucket listing (signed as {@code /bucket/} while the URL has {@code /bucket});
     * and one of {@code s3cmd signurl} 2.3.0 (Debian).
     */
    @ParameterizedTest(name = "[{index}] {0} {1}")
    @CsvSource(delimiter = '|', nullValues = "NULL", textBlock = """
            GET | /bucket/dir/a%20b%2Bc.bin | AWSAccessKeyId=AKIAVERIFIEDKEY&Signature=sK2yaG1ahOkoN%2FUM%2B4i5YDCJ%2BHE%3D&Expires=1796000600 | NULL
            PUT | /bucket/up.bin | AWSAccessKeyId=AKIAVERIFIEDKEY&Signature=sjI8ETOQqvlCeGTaXUcft0TpZUY%3D&Expires=1796000600 | NULL
            GET | /bucket/dir/caf%C3%A9%20au%20lait.txt | response-content-disposition=attachment%3B%20filename%3D%22%C3%A9.txt%22&AWSAccessKeyId=AKIAVERIFIEDKEY&Signature=JVwKlIKFHGQgUND0dFcnZ6SToGo%3D&Expires=1796000600 | NULL
            GET | /k.bin | AWSAccessKeyId=AKIAVERIFIEDKEY&Signature=8BV9lG7Z3haB%2F8%2FQt3YX%2Bf93wmw%3D&Expires=1796000600 | bucket
            GET | /bucket | encoding-type=url&AWSAccessKeyId=AKIAVERIFIEDKEY&Signature=eZUtg29gvX%2BnXMDRyzRG%2Bvh%2Fz2o%3D&Expires=1796000600 | NULL
            GET | /bucket/matrix/x%20y%2Bz/a | AWSAccessKeyId=AKIAVERIFIEDKEY&Expires=1796000600&Signature=ViTjLot1OZYiCOcfB%2FFsQu1qMjo%3D | NULL
            """)
    void boto3AndS3cmdPresignedUrlsVerify(String method, String path, String query, String hostBucket) {
        SigV4Verifier.Request r = new SigV4Verifier.Request(method, path, query, MultiMap.caseInsensitiveMultiMap());
        assertThat(verify(r, KEY, SECRET, hostBucket, BOTO_NOW)).isEqualTo(SigV4Verifier.Verdict.VERIFIED);
        assertThat(verify(r, KEY, SECRET, hostBucket, 1_796_000_600_999L).verified()).isTrue();
        assertRefused(verify(r, KEY, SECRET, hostBucket, 1_796_000_601_000L), 403, "AccessDenied");
        assertRefused(verify(r, KEY, AWS_SECRET, hostBucket, BOTO_NOW), 403, "SignatureDoesNotMatch");
        assertRefused(verify(new SigV4Verifier.Request(method.equals("GET") ? "PUT" : "GET", path, query,
                MultiMap.caseInsensitiveMultiMap()), KEY, SECRET, hostBucket, BOTO_NOW), 403, "SignatureDoesNotMatch");
        assertRefused(verify(new SigV4Verifier.Request(method, path, query.replace("Expires=1796000600", "Expires=1796000601"),
                MultiMap.caseInsensitiveMultiMap()), KEY, SECRET, hostBucket, BOTO_NOW), 403, "SignatureDoesNotMatch");
        // a Content-Type the URL was not signed with (urllib adds one to a PUT)
        assertRefused(verify(new SigV4Verifier.Request(method, path, query, headers("Content-Type: text/plain")), KEY, SECRET,
                hostBucket, BOTO_NOW), 403, "SignatureDoesNotMatch");
    }

    /**
     * botocore's {@code HmacV1Auth} on an UploadPart with Content-MD5, Content-Type, metadata with
     * white space around its value, an escaped key and sub-resources whose values are signed decoded.
     */
    @Test
    void botocoresHeaderSignatureVerifies() {
        MultiMap h = headers("Content-Type: application/octet-stream ;; Content-MD5: 1B2M2Y8AsgTpgAmY7PhCfg== ;; x-amz-acl: private"
                + " ;; User-Agent: x ;; Date: Mon, 30 Nov 2026 00:53:20 GMT ;; Authorization: AWS " + KEY
                + ":D6AgWq9t57WrQX9SLnTX2Y0JUw4=");
        h.add("X-Amz-Meta-Owner", "  Jane  ");
        SigV4Verifier.Request r = new SigV4Verifier.Request("PUT", "/bucket/k%2Bey", "partNumber=2&uploadId=abc%2Fdef", h);
        assertThat(verify(r, KEY, SECRET, null, BOTO_NOW)).isEqualTo(SigV4Verifier.Verdict.VERIFIED);
        assertRefused(verify(new SigV4Verifier.Request("PUT", "/bucket/k%2Bey", "partNumber=3&uploadId=abc%2Fdef", h), KEY,
                SECRET, null, BOTO_NOW), 403, "SignatureDoesNotMatch");
        assertRefused(verify(new SigV4Verifier.Request("PUT", "/bucket/k+ey", "partNumber=2&uploadId=abc%2Fdef", h), KEY,
                SECRET, null, BOTO_NOW), 403, "SignatureDoesNotMatch");
        MultiMap md5 = MultiMap.caseInsensitiveMultiMap().addAll(h).set("Content-MD5", "XrY7u+Ae7tCTyyK7j1rNww==");
        assertRefused(verify(new SigV4Verifier.Request("PUT", "/bucket/k%2Bey", "partNumber=2&uploadId=abc%2Fdef", md5), KEY,
                SECRET, null, BOTO_NOW), 403, "SignatureDoesNotMatch");
    }

    @Test
    void malformedOrIncompleteRequestsAreRefusedAsS3Does() {
        // a presigned URL lacking a part
        for (String query : new String[] {"AWSAccessKeyId=" + KEY + "&Expires=1796000600",
            "AWSAccessKeyId=" + KEY + "&Signature=x"}) {
            SigV4Verifier.Verdict v = verify(new SigV4Verifier.Request("GET", "/b/k", query, MultiMap.caseInsensitiveMultiMap()),
                    KEY, SECRET, null, BOTO_NOW);
            assertRefused(v, 403, "AccessDenied");
            assertThat(v.message()).isEqualTo(SigV2Verifier.QUERY_PARAMETERS);
        }
        for (String expires : new String[] {"soon", "-7", "", "1e9"}) {
            SigV4Verifier.Verdict v = verify(new SigV4Verifier.Request("GET", "/b/k", "AWSAccessKeyId=" + KEY
                    + "&Expires=" + expires + "&Signature=x", MultiMap.caseInsensitiveMultiMap()), KEY, SECRET, null, BOTO_NOW);
            assertRefused(v, 403, "AccessDenied");
            assertThat(v.message()).startsWith("Invalid date (should be seconds since epoch)");
        }
        // the header form without a usable time
        for (String dates : new String[] {null, "Date: yesterday", "x-amz-date: yesterday ;; Date: Mon, 30 Nov 2026 00:53:20 GMT",
            "Date: Fri, 30 Nov 2026 00:53:20 GMT"}) {
            MultiMap h = headers(dates).add("Authorization", "AWS " + KEY + ":D6AgWq9t57WrQX9SLnTX2Y0JUw4=");
            SigV4Verifier.Verdict v = verify(new SigV4Verifier.Request("GET", "/b/k", null, h), KEY, SECRET, null, BOTO_NOW);
            assertRefused(v, 403, "AccessDenied");
            assertThat(v.message()).as(dates).isEqualTo(SigV2Verifier.NO_DATE);
        }
        MultiMap two = headers("Date: Mon, 30 Nov 2026 00:53:20 GMT ;; Authorization: AWS " + KEY + ":x ;; Authorization: AWS "
                + KEY + ":y");
        assertRefused(SigV2Verifier.verify(new SigV4Verifier.Request("GET", "/b/k", null, two), KEY, SECRET, null, BOTO_NOW, SKEW),
                400, "InvalidArgument");
    }

    @Test
    void onlySigV2RequestsAreClaimed() {
        assertThat(SigV2Verifier.claims(headers("Authorization: AWS K:c2ln"), null)).isTrue();
        assertThat(SigV2Verifier.claims(headers("Authorization: AWS4-HMAC-SHA256 Credential=K/20260101/r/s3/aws4_request"),
                "AWSAccessKeyId=K")).isFalse();
        assertThat(SigV2Verifier.claims(headers(null), "AWSAccessKeyId=K&Expires=1&Signature=x")).isTrue();
        assertThat(SigV2Verifier.claims(headers(null), "X-Amz-Credential=K%2F20260101&AWSAccessKeyId=K")).isFalse();
        assertThat(SigV2Verifier.claims(headers(null), "prefix=a")).isFalse();
        assertThat(SigV2Verifier.claims(headers(null), null)).isFalse();
    }
}
