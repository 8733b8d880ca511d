package dev.levee.cli;

import java.util.List;

/**
 * S3's naming rules for general purpose buckets, as {@code levee quota set} and {@code delete} apply them to
 * the bucket they are given (issue 13; the rules are listed in docs/quotas.md, "Bucket names"). The quota
 * format itself stays lenient (Ceph RGW accepts names S3 does not: uppercase, underscores, up to 255
 * characters), so {@code --allow-legacy-bucket-name} lets such a name through to the format's own checks.
 */
final class BucketNames {

    /** Prefixes S3 reserves. */
    static final List<String> RESERVED_PREFIXES = List.of("xn--", "sthree-", "amzn-s3-demo-");

    /** Suffixes S3 reserves (access point aliases, Object Lambda, Multi-Region Access Points, directory and table buckets). */
    static final List<String> RESERVED_SUFFIXES = List.of("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3");

    private BucketNames() {
    }

    /**
     * Checks a bucket name against S3's rules.
     *
     * @param name the name
     * @return null when the name is valid, else what is wrong with it, in a few words
     */
    static String problem(String name) {
        if (name.length() < 3 || name.length() > 63) {
            return "is " + name.length() + " characters long; S3 bucket names have 3 to 63";
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (!(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-')) {
                return "contains '" + (Character.isISOControl(c) ? String.format("\\x%02x", (int) c) : String.valueOf(c))
                        + "'; S3 bucket names have only lowercase letters, digits, '.' and '-'";
            }
        }
        if (!alnum(name.charAt(0)) || !alnum(name.charAt(name.length() - 1))) {
            return "must begin and end with a lowercase letter or a digit";
        }
        if (name.contains("..")) {
            return "must not contain two adjacent dots";
        }
        if (name.matches("\\d{1,3}(\\.\\d{1,3}){3}")) {
            return "must not be formatted as an IP address";
        }
        for (String p : RESERVED_PREFIXES) {
            if (name.startsWith(p)) {
                return "must not begin with '" + p + "' (reserved by S3)";
            }
        }
        for (String s : RESERVED_SUFFIXES) {
            if (name.endsWith(s)) {
                return "must not end with '" + s + "' (reserved by S3)";
            }
        }
        return null;
    }

    private static boolean alnum(char c) {
        return c >= 'a' && c <= 'z' || c >= '0' && c <= '9';
    }

    /**
     * Refuses a name that breaks S3's rules unless legacy names are allowed.
     *
     * @throws picocli.CommandLine.ParameterException naming the bucket, the rule and the flag
     */
    static void check(picocli.CommandLine cmd, String name, boolean allowLegacy) {
        String p = allowLegacy ? null : problem(name);
        if (p != null) {
            throw new picocli.CommandLine.ParameterException(cmd, "bucket name '" + dev.levee.runtime.LogText.escape(name)
                    + "' " + p + " (docs/quotas.md, \"Bucket names\"); --allow-legacy-bucket-name accepts it"
                    + " as the quota format does");
        }
    }
}
