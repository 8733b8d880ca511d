package dev.levee.s3;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;

/**
 * The classifier as it was before it read request targets as characters (issue 12, allocation per check): a
 * frozen copy of {@code S3Classifier.classify}, {@code RequestTarget.of}, {@code PercentDecoding} and
 * {@code QueryFacts.parse} of that version, with substrings everywhere, kept as the reference that
 * {@link ClassificationPathProperties} compares the new paths with. Not to be changed: it is what "classifies as
 * before" means. The decision table ({@link OperationTable}, {@link SubResource}, {@link HttpMethod}) is shared;
 * it was not touched.
 */
final class ClassifierBeforeIssue12 {

    private final String[] baseDomains;

    /** The reference for a classifier with these base domains (normalised as {@link S3Classifier} does). */
    ClassifierBeforeIssue12(List<String> baseDomains) {
        java.util.List<String> domains = new java.util.ArrayList<>();
        for (String raw : baseDomains) {
            String d = raw.toLowerCase(Locale.ROOT);
            if (d.startsWith(".")) {
                d = d.substring(1);
            }
            if (d.endsWith(".")) {
                d = d.substring(0, d.length() - 1);
            }
            if (!domains.contains(d)) {
                domains.add(d);
            }
        }
        domains.sort(java.util.Comparator.comparingInt(String::length).reversed());
        this.baseDomains = domains.toArray(new String[0]);
    }

    S3Classification classify(S3Request request) {
        if (request == null) {
            return new S3Classification("", "", S3Operation.Unknown);
        }
        String[] target = target(request.host(), request.path(), request.query());
        String path = target[1];
        int n = path.length();
        String resource;
        String key;
        boolean malformed = false;
        String bucket = virtualHostedBucket(target[0]);
        if (bucket != null) {
            resource = bucket;
            int from = n > 0 && path.charAt(0) == '/' ? 1 : 0;
            key = decodeOrNull(path, from, n);
            if (key == null) {
                malformed = true;
                key = path.substring(from, n);
            }
        } else {
            int start = 0;
            while (start < n && path.charAt(start) == '/') {
                start++;
            }
            int slash = path.indexOf('/', start);
            int resourceEnd = slash < 0 ? n : slash;
            resource = decodeOrNull(path, start, resourceEnd);
            if (resource == null) {
                malformed = true;
                resource = path.substring(start, resourceEnd);
            }
            if (slash < 0) {
                key = "";
            } else {
                key = decodeOrNull(path, slash + 1, n);
                if (key == null) {
                    malformed = true;
                    key = path.substring(slash + 1, n);
                }
            }
        }
        if (malformed) {
            return new S3Classification(resource, key, S3Operation.Unknown);
        }
        HttpMethod method = HttpMethod.parse(request.method());
        QueryFacts query = parseQuery(target[2]);
        S3Operation operation;
        if (resource.isEmpty()) {
            operation = OperationTable.service(method, query);
        } else if (key.isEmpty()) {
            operation = OperationTable.bucket(method, query);
        } else {
            operation = OperationTable.object(method, query, request.hasCopySource());
        }
        return new S3Classification(resource, key, operation);
    }

    private String virtualHostedBucket(String host) {
        if (baseDomains.length == 0 || host == null || host.isEmpty() || host.charAt(0) == '[') {
            return null;
        }
        int end = host.indexOf(':');
        if (end < 0) {
            end = host.length();
        }
        if (end > 0 && host.charAt(end - 1) == '.') {
            end--;
        }
        for (String domain : baseDomains) {
            int start = end - domain.length();
            if (start < 0 || !host.regionMatches(true, start, domain, 0, domain.length())) {
                continue;
            }
            if (start == 0) {
                return null;
            }
            if (host.charAt(start - 1) == '.') {
                return start == 1 ? null : host.substring(0, start - 1).toLowerCase(Locale.ROOT);
            }
        }
        return null;
    }

    /** {@code RequestTarget.of}: host, path, query. */
    private static String[] target(String host, String path, String query) {
        if (path == null) {
            return new String[] {host, "", query};
        }
        String p = path;
        String h = host;
        if (!p.isEmpty() && p.charAt(0) != '/') {
            int authority = p.regionMatches(true, 0, "http://", 0, 7) ? 7
                    : p.regionMatches(true, 0, "https://", 0, 8) ? 8 : -1;
            if (authority > 0) {
                int end = authority;
                while (end < p.length() && p.charAt(end) != '/' && p.charAt(end) != '?') {
                    end++;
                }
                int at = p.lastIndexOf('@', end - 1);
                int hostStart = at >= authority ? at + 1 : authority;
                if (end > hostStart) {
                    h = p.substring(hostStart, end);
                }
                p = p.substring(end);
            }
        }
        int q = p.indexOf('?');
        if (q < 0) {
            return new String[] {h, p, query};
        }
        String inPath = p.substring(q + 1);
        String merged;
        if (query == null || query.isEmpty()) {
            merged = inPath;
        } else {
            merged = inPath.isEmpty() ? query : inPath + '&' + query;
        }
        return new String[] {h, p.substring(0, q), merged};
    }

    private static QueryFacts parseQuery(String query) {
        if (query == null || query.isEmpty()) {
            return QueryFacts.NONE;
        }
        long mask = 0L;
        boolean partNumber = false;
        String listType = null;
        String selectType = null;
        int n = query.length();
        int start = 0;
        while (start < n) {
            int end = query.indexOf('&', start);
            if (end < 0) {
                end = n;
            }
            if (end > start) {
                int eq = query.indexOf('=', start);
                if (eq < 0 || eq > end) {
                    eq = end;
                }
                String name = decodeOnce(query, start, eq);
                SubResource sub = SubResource.byWireName(name);
                if (sub != null) {
                    mask |= sub.bit();
                } else if (name.equals("partNumber")) {
                    partNumber = true;
                } else if (listType == null && name.equals("list-type")) {
                    listType = eq >= end ? "" : decodeOnce(query, eq + 1, end);
                } else if (selectType == null && name.equals("select-type")) {
                    selectType = eq >= end ? "" : decodeOnce(query, eq + 1, end);
                }
            }
            start = end + 1;
        }
        return new QueryFacts(mask, partNumber, listType, selectType);
    }

    private static String decodeOnce(String s, int from, int to) {
        String decoded = decodeOrNull(s, from, to);
        return decoded == null ? s.substring(from, to) : decoded;
    }

    private static String decodeOrNull(String s, int from, int to) {
        int percent = s.indexOf('%', from);
        if (percent < 0 || percent >= to) {
            return s.substring(from, to);
        }
        StringBuilder out = new StringBuilder(to - from);
        out.append(s, from, percent);
        byte[] run = new byte[(to - percent) / 3 + 1];
        int i = percent;
        while (i < to) {
            char c = s.charAt(i);
            if (c != '%') {
                out.append(c);
                i++;
                continue;
            }
            int n = 0;
            boolean ascii = true;
            while (i < to && s.charAt(i) == '%') {
                if (to - i < 3) {
                    return null;
                }
                int hi = hex(s.charAt(i + 1));
                int lo = hex(s.charAt(i + 2));
                if (hi < 0 || lo < 0) {
                    return null;
                }
                byte b = (byte) (hi << 4 | lo);
                ascii &= b >= 0;
                run[n++] = b;
                i += 3;
            }
            if (ascii) {
                for (int k = 0; k < n; k++) {
                    out.append((char) run[k]);
                }
            } else {
                try {
                    out.append(StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(run, 0, n)));
                } catch (CharacterCodingException malformed) {
                    return null;
                }
            }
        }
        return out.toString();
    }

    private static int hex(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    }
}
