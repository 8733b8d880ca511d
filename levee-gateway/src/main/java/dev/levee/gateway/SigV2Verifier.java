package dev.levee.gateway;

import dev.levee.gateway.SigV4Verifier.Param;
import dev.levee.gateway.SigV4Verifier.Request;
import dev.levee.gateway.SigV4Verifier.Verdict;
import io.vertx.core.MultiMap;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.DateTimeException;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Verifies the AWS Signature Version 2 of a request whose access key has a configured secret
 * ("Signing and authenticating REST requests (AWS signature version 2)" in the Amazon S3 developer
 * guide), as {@link SigV4Verifier} does for Version 4: a request claiming a key is charged to that
 * key's principal only if it was signed with the key's secret (issue 6). SigV2 is what boto3 1.26
 * presigns with by default and what {@code s3cmd signurl} always makes (issue 24). Pure: no I/O, no
 * clock (the caller passes {@code now}), no state; never throws on request input.
 *
 * <h2>The model</h2>
 * {@code Signature = Base64(HMAC-SHA1(secret, UTF-8(StringToSign)))}, where {@code StringToSign} is
 * {@code Method \n Content-MD5 \n Content-Type \n Date-or-Expires \n CanonicalizedAmzHeaders
 * CanonicalizedResource}; the gateway recomputes it and compares the two in constant time. Two forms:
 * <ul>
 *   <li><b>header</b>: {@code Authorization: AWS AKID:Signature}. The time is {@code x-amz-date} when
 *       present (then the Date line is empty and {@code x-amz-date} is one of the amz headers), else
 *       {@code Date} (RFC 1123); more than {@code maxSkew} away from {@code now} is refused
 *       ({@code 403 RequestTimeTooSkewed}).</li>
 *   <li><b>query string</b> (presigned URL): {@code AWSAccessKeyId}, {@code Expires} (seconds since
 *       the epoch) and {@code Signature}; {@code Expires} takes the Date line. Refused once {@code now}
 *       is past {@code Expires} ({@code 403 AccessDenied}, "Request has expired"); the request time is
 *       not checked against the skew (the guide: the time-stamp requirement does not apply to query
 *       string authentication), and SigV2 sets no longest validity.</li>
 * </ul>
 * <b>CanonicalizedAmzHeaders</b>: every header whose name starts with {@code x-amz-}, the name in
 * lower case, sorted by name, the values of one name trimmed and joined by {@code ','}, each as
 * {@code name:value\n}. <b>CanonicalizedResource</b>: {@code "/" + bucket} when the Host names the
 * bucket (virtual-hosted; the caller passes it), then the path exactly as the request line carries it
 * (not decoded; {@code "/"} when empty), then the sub-resources of {@link #SUB_RESOURCES} present in
 * the query, sorted by name, as {@code ?name=value&name2} with each value percent-decoded (the guide:
 * signed as they are, not encoded) and a parameter without a value (or with an empty one) by its name
 * alone. Every other query parameter is left out. Header values and the path are taken as the bytes
 * the wire carried (Netty decodes header bytes one to one into characters).
 *
 * <p>Two readings that the guide and the stores differ on are both accepted, since either one needs
 * the secret: a path-style request of a bucket itself ({@code /bucket}) signed as {@code /bucket/}
 * (boto3 signs the bucket's root so, and AWS S3 and recent S3Proxy accept it; S3Proxy 3.3.0 takes only
 * {@code /bucket}), and, when a request carries both
 * {@code Date} and {@code x-amz-date}, the guide's worked example ({@code x-amz-date}'s value on the
 * Date line, not among the amz headers; S3Proxy's reading) beside its text (an empty Date line).
 */
final class SigV2Verifier {

    /**
     * The query parameters that the CanonicalizedResource carries: the sub-resources the guide lists
     * ("Constructing the CanonicalizedResource element"), the response-header overrides of GetObject
     * and {@code delete} of DeleteObjects; S3Proxy signs the same.
     */
    static final Set<String> SUB_RESOURCES = Set.of("acl", "delete", "lifecycle", "location", "logging", "notification",
            "partNumber", "policy", "requestPayment", "response-cache-control", "response-content-disposition",
            "response-content-encoding", "response-content-language", "response-content-type", "response-expires",
            "torrent", "uploadId", "uploads", "versionId", "versioning", "versions", "website");

    static final String QUERY_PARAMETERS = "Query-string authentication requires the Signature, Expires and"
            + " AWSAccessKeyId parameters";
    static final String NO_DATE = "AWS authentication requires a valid Date or x-amz-date header";

    private SigV2Verifier() {
    }

    /**
     * Tells whether a request claims a SigV2 signature: an {@code Authorization} header of the
     * {@code AWS} scheme, or, without an {@code Authorization} header, a query with
     * {@code AWSAccessKeyId} and without SigV4's {@code X-Amz-Credential} (the order in which
     * {@link Credentials#accessKeyId} reads the key).
     *
     * @param headers  the request headers
     * @param rawQuery the query as received, without {@code '?'}; may be null
     * @return whether {@link #verify} is the verifier of this request
     */
    static boolean claims(MultiMap headers, String rawQuery) {
        String authorization = headers.get("Authorization");
        if (authorization != null && !authorization.isBlank()) {
            return authorization.strip().startsWith("AWS ");
        }
        List<Param> query = Param.parse(rawQuery);
        return Param.find(query, "X-Amz-Credential") == null && Param.find(query, "AWSAccessKeyId") != null;
    }

    /**
     * Verifies the SigV2 signature of {@code request}, made (it claims) with the secret of {@code keyId}.
     *
     * @param request       the request
     * @param keyId         the access key id the request claims ({@link Credentials#accessKeyId}); the
     *                      signature must name the same one
     * @param secret        that key's secret
     * @param hostBucket    the bucket the Host header names when the request is virtual-hosted, else null
     * @param nowMillis     the wall-clock time, milliseconds since the epoch
     * @param maxSkewMillis how far a header-signed request's time may lie from {@code now}, milliseconds
     * @return {@link Verdict#VERIFIED} or the refusal to answer
     */
    static Verdict verify(Request request, String keyId, SigningSecret secret, String hostBucket, long nowMillis,
                          long maxSkewMillis) {
        List<String> authorizations = request.headers().getAll("Authorization");
        if (!authorizations.isEmpty() && !authorizations.get(0).isBlank()) {
            if (authorizations.size() > 1) {
                return invalidHeader("more than one Authorization header");
            }
            return verifyHeader(request, authorizations.get(0).strip(), keyId, secret, hostBucket, nowMillis,
                    maxSkewMillis);
        }
        return verifyQuery(request, keyId, secret, hostBucket, nowMillis);
    }

    private static Verdict invalidHeader(String reason) {
        return Verdict.refuse(400, "InvalidArgument", "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature",
                reason);
    }

    private static Verdict verifyHeader(Request request, String authorization, String keyId, SigningSecret secret,
                                        String hostBucket, long nowMillis, long maxSkewMillis) {
        if (!authorization.startsWith("AWS ")) {
            return invalidHeader("not the AWS scheme");
        }
        String credential = authorization.substring(4).strip();
        int colon = credential.lastIndexOf(':');
        if (colon <= 0 || colon == credential.length() - 1 || !credential.substring(0, colon).equals(keyId)) {
            return invalidHeader("expected AWS " + keyId + ":signature");
        }
        String provided = credential.substring(colon + 1);
        MultiMap headers = request.headers();
        String amzDate = headers.get("x-amz-date");
        String date = headers.get("Date");
        long time = epochMillis(amzDate != null ? amzDate : date);
        if (time == Long.MIN_VALUE) {
            return Verdict.refuse(403, "AccessDenied", NO_DATE, "no valid x-amz-date or Date");
        }
        if (Math.abs(nowMillis - time) > maxSkewMillis) {
            return Verdict.refuse(403, "RequestTimeTooSkewed",
                    "The difference between the request time and the current time is too large.",
                    "request time is " + (nowMillis - time) / 1000 + " s from now");
        }
        List<byte[]> candidates = new ArrayList<>(4);
        for (String resource : resources(request.rawPath(), hostBucket)) {
            if (amzDate == null) {
                candidates.add(stringToSign(request, date.strip(), false, resource));
            } else {
                candidates.add(stringToSign(request, "", false, resource));
                if (date != null) {
                    candidates.add(stringToSign(request, amzDate.strip(), true, resource));
                }
            }
        }
        return compare(candidates, provided, secret);
    }

    private static Verdict verifyQuery(Request request, String keyId, SigningSecret secret, String hostBucket,
                                       long nowMillis) {
        List<Param> query = Param.parse(request.rawQuery());
        Param id = Param.find(query, "AWSAccessKeyId");
        Param expiresParam = Param.find(query, "Expires");
        Param signature = Param.find(query, "Signature");
        if (id == null || expiresParam == null || signature == null) {
            return Verdict.refuse(403, "AccessDenied", QUERY_PARAMETERS, "a SigV2 query without " + (id == null
                    ? "AWSAccessKeyId" : expiresParam == null ? "Expires" : "Signature"));
        }
        if (!id.decodedValue().equals(keyId)) {
            return Verdict.refuse(403, "AccessDenied", QUERY_PARAMETERS, "AWSAccessKeyId is not the key claimed");
        }
        String expiresText = expiresParam.decodedValue();
        if (expiresText.isEmpty() || expiresText.length() > 18 || !expiresText.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return Verdict.refuse(403, "AccessDenied", "Invalid date (should be seconds since epoch): " + expiresText,
                    "Expires is not a number of seconds");
        }
        long expires = Long.parseLong(expiresText);
        if (Math.floorDiv(nowMillis, 1000) > expires) {
            return Verdict.refuse(403, "AccessDenied", "Request has expired",
                    "presigned until " + expires + ", " + (Math.floorDiv(nowMillis, 1000) - expires) + " s ago");
        }
        List<byte[]> candidates = new ArrayList<>(2);
        for (String resource : resources(request.rawPath(), hostBucket)) {
            candidates.add(stringToSign(request, expiresText, false, resource));
        }
        return compare(candidates, signature.decodedValue(), secret);
    }

    /**
     * The paths the CanonicalizedResource may start with: {@code /bucket} + the raw path when
     * virtual-hosted, else the raw path; and for a path-style {@code /bucket} also {@code /bucket/}.
     */
    private static List<String> resources(String rawPath, String hostBucket) {
        String path = rawPath == null || rawPath.isEmpty() ? "/" : rawPath;
        if (hostBucket != null) {
            return List.of("/" + hostBucket + path);
        }
        if (path.length() > 1 && path.indexOf('/', 1) < 0) {
            return List.of(path, path + "/");
        }
        return List.of(path);
    }

    private static Verdict compare(List<byte[]> candidates, String provided, SigningSecret secret) {
        byte[] providedBytes = provided.getBytes(StandardCharsets.ISO_8859_1);
        Mac mac = hmacSha1(secret);
        boolean match = false;
        for (byte[] stringToSign : candidates) {
            byte[] expected = Base64.getEncoder().encode(mac.doFinal(stringToSign));
            match |= MessageDigest.isEqual(expected, providedBytes);
        }
        if (match) {
            return Verdict.VERIFIED;
        }
        return Verdict.refuse(403, "SignatureDoesNotMatch", SigV4Verifier.MISMATCH,
                "SigV2 signature mismatch; string to sign SHA-256 " + sha256Hex(candidates.get(0)));
    }

    /**
     * Returns the StringToSign's bytes: the Date line {@code dateLine}; the amz headers without
     * {@code x-amz-date} when {@code dropAmzDate}; the CanonicalizedResource from {@code resource}.
     */
    static byte[] stringToSign(Request request, String dateLine, boolean dropAmzDate, String resource) {
        MultiMap headers = request.headers();
        ByteArrayOutputStream out = new ByteArrayOutputStream(256);
        wire(out, request.method());
        out.write('\n');
        wire(out, strip(headers.get("Content-MD5")));
        out.write('\n');
        wire(out, strip(headers.get("Content-Type")));
        out.write('\n');
        wire(out, dateLine);
        out.write('\n');
        Map<String, StringBuilder> amz = new TreeMap<>();
        headers.forEach((name, value) -> {
            String lower = name.toLowerCase(Locale.ROOT);
            if (lower.startsWith("x-amz-") && !(dropAmzDate && lower.equals("x-amz-date"))) {
                StringBuilder joined = amz.get(lower);
                if (joined == null) {
                    amz.put(lower, new StringBuilder(value.strip()));
                } else {
                    joined.append(',').append(value.strip());
                }
            }
        });
        amz.forEach((name, value) -> {
            wire(out, name);
            out.write(':');
            wire(out, unfold(value));
            out.write('\n');
        });
        wire(out, resource);
        List<Param> subResources = new ArrayList<>();
        for (Param p : Param.parse(request.rawQuery())) {
            if (SUB_RESOURCES.contains(p.decodedName())) {
                subResources.add(p);
            }
        }
        subResources.sort(Comparator.comparing(Param::decodedName));
        char separator = '?';
        for (Param p : subResources) {
            out.write(separator);
            out.writeBytes(p.name());
            if (p.value().length > 0) {
                out.write('=');
                out.writeBytes(p.value()); // decoded: the guide signs these values as they are, not encoded
            }
            separator = '&';
        }
        return out.toByteArray();
    }

    /** Writes characters decoded one to one from the wire's bytes as those bytes. */
    private static void wire(ByteArrayOutputStream out, String s) {
        out.writeBytes(s.getBytes(StandardCharsets.ISO_8859_1));
    }

    private static String strip(String value) {
        return value == null ? "" : value.strip();
    }

    /** Replaces each folding line break and the white space around it by one space (the guide's "unfold"). */
    private static String unfold(CharSequence value) {
        return value.toString().replaceAll("[ \\t]*\\r?\\n[ \\t]*", " ");
    }

    /** Returns the epoch milliseconds of an RFC 1123 date ({@code Tue, 27 Mar 2007 19:36:42 +0000}), or Long.MIN_VALUE. */
    static long epochMillis(String date) {
        if (date == null || date.isBlank()) {
            return Long.MIN_VALUE;
        }
        try {
            return ZonedDateTime.parse(date.strip(), DateTimeFormatter.RFC_1123_DATE_TIME).toInstant().toEpochMilli();
        } catch (DateTimeException e) {
            return Long.MIN_VALUE;
        }
    }

    private static Mac hmacSha1(SigningSecret secret) {
        try {
            Mac mac = Mac.getInstance("HmacSHA1");
            mac.init(new SecretKeySpec(secret.v2Key(), "HmacSHA1"));
            return mac;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA1 is missing from this JDK or refused the key", e);
        }
    }

    private static String sha256Hex(byte[] data) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }
}
