package dev.levee.quota;

import dev.levee.s3.S3Operation;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Checks the parts of a quota configuration against the rules of docs/design.md §4, returning every
 * problem found rather than stopping at the first.
 *
 * <p>{@link QuotaConfig} applies all of them when it is built; loaders of the per-key etcd
 * form apply the ones for the key they read. Rates and bursts are not checked here: a
 * {@link Quota} cannot hold invalid values.
 *
 * <p>Rules beyond the spec's wording, chosen for operators of large installations:
 * <ul>
 *   <li>a resource name is lenient (RGW accepts odd bucket names) but not empty, at most
 *       {@value #MAX_RESOURCE_NAME_LENGTH} characters, without {@code /} or control
 *       characters, and valid Unicode;</li>
 *   <li>a prefix has at most {@value #MAX_PREFIX_BYTES} bytes in UTF-8 without its
 *       {@code *} (the longest S3 object key) and is valid Unicode;</li>
 *   <li>a prefix entry needs a {@code quota} or {@code methods}: an entry with neither would
 *       only hide shorter entries;</li>
 *   <li>{@code "a"} and {@code "a*"} are different entries (one counter for the prefix versus
 *       one per object key), not duplicates; the one listed first always wins (equal literal
 *       length), so the other never matches;</li>
 *   <li>two entries of a resource whose limit keys would coincide (possible only with
 *       {@code #} in a prefix, such as {@code "a#PutObject"} next to {@code "a"} with a
 *       {@code PutObject} method) are rejected, so that a counter never serves two rules;</li>
 *   <li>{@link S3Operation#Unknown} cannot be configured: unclassified requests are limited
 *       by the resource-level quotas (docs/design.md §3).</li>
 * </ul>
 */
public final class QuotaRules {

    /** The longest prefix, without its trailing {@code *}, in bytes of UTF-8: the S3 key limit. */
    public static final int MAX_PREFIX_BYTES = 1024;

    /** The longest resource (bucket) name, in characters. */
    public static final int MAX_RESOURCE_NAME_LENGTH = 255;

    private QuotaRules() {
    }

    /**
     * Checks the group factor DF (docs/design.md §4, §5).
     *
     * @param factor the factor
     * @param path   the path of the factor field, {@code "factor"} in the single-file form
     * @return the problems, empty when {@code factor ≥ 1}
     */
    public static List<ConfigProblem> checkFactor(int factor, String path) {
        return factor >= 1
                ? List.of()
                : List.of(ConfigProblem.of(path, "expected an integer ≥ 1 (the limiter group size), got " + factor));
    }

    /**
     * Checks per-operation quotas: {@code methods_default} or the {@code methods} of a prefix
     * entry.
     *
     * @param methods the quotas per operation
     * @param path    the path of the map, such as {@code "methods_default"}
     * @param context what identifies the enclosing entry, or {@code null}
     * @return the problems, empty when valid
     */
    public static List<ConfigProblem> checkMethods(Map<S3Operation, Quota> methods, String path, String context) {
        if (!methods.containsKey(S3Operation.Unknown)) {
            return List.of();
        }
        return List.of(ConfigProblem.of(ConfigPath.field(path, S3Operation.Unknown.name()), context,
                "operation Unknown cannot be configured: unclassified requests are limited by the resource-level quotas"));
    }

    /**
     * Checks a resource (bucket) name.
     *
     * @param name the name
     * @param path the path reported, such as {@code resources["a/b"]}
     * @return the problems, empty when valid
     */
    public static List<ConfigProblem> checkResourceName(String name, String path) {
        List<ConfigProblem> problems = new ArrayList<>();
        String quoted = ConfigPath.quote(name);
        if (name.isEmpty()) {
            problems.add(ConfigProblem.of(path, "resource name must not be empty"));
        }
        if (name.length() > MAX_RESOURCE_NAME_LENGTH) {
            problems.add(ConfigProblem.of(path, "resource name is " + name.length() + " characters long; at most "
                    + MAX_RESOURCE_NAME_LENGTH + " are allowed"));
        }
        if (name.indexOf('/') >= 0) {
            problems.add(ConfigProblem.of(path, "resource name " + quoted + " must not contain '/'"));
        }
        if (name.chars().anyMatch(Character::isISOControl)) {
            problems.add(ConfigProblem.of(path, "resource name " + quoted + " must not contain control characters"));
        }
        if (unpairedSurrogate(name) >= 0) {
            problems.add(ConfigProblem.of(path, "resource name " + quoted + " is not valid Unicode (unpaired surrogate)"));
        }
        return problems;
    }

    /**
     * Checks the configuration of one resource: its name, each prefix entry, duplicate
     * prefixes and colliding limit keys.
     *
     * @param name     the resource (bucket) name
     * @param resource its quotas
     * @param path     the path of the resource, such as {@code resources.example-bucket}, or
     *                 {@code ""} for the per-key etcd form
     * @return the problems in the order of the entries, empty when valid
     */
    public static List<ConfigProblem> checkResource(String name, ResourceQuotas resource, String path) {
        return plainlyValid(name, resource) ? List.of() : checkResourceFully(name, resource, path);
    }

    /** {@link #checkResource} without the allocation-free fast path (the properties compare both). */
    static List<ConfigProblem> checkResourceFully(String name, ResourceQuotas resource, String path) {
        List<ConfigProblem> problems = new ArrayList<>(checkResourceName(name, path));
        String listPath = ConfigPath.field(path, "prefixes");
        Map<String, Integer> firstIndex = new HashMap<>();
        Map<String, String> keyOwners = new HashMap<>();
        List<PrefixRule> prefixes = resource.prefixes();
        for (int i = 0; i < prefixes.size(); i++) {
            PrefixRule rule = prefixes.get(i);
            String entryPath = ConfigPath.index(listPath, i);
            String context = context(rule);
            boolean syntaxOk = checkPrefix(rule.prefix(), entryPath, context, problems);
            if (rule.quota() == null && rule.methods().isEmpty()) {
                problems.add(ConfigProblem.of(entryPath, context, "needs a quota or methods"));
            }
            problems.addAll(checkMethods(rule.methods(), ConfigPath.field(entryPath, "methods"), context));
            Integer first = firstIndex.putIfAbsent(rule.prefix(), i);
            if (first != null) {
                problems.add(ConfigProblem.of(entryPath, context,
                        "duplicate prefix: already configured at " + ConfigPath.index("prefixes", first)));
            } else if (syntaxOk && !rule.wildcard()) {
                checkKeyCollisions(name, rule, i, entryPath, context, keyOwners, problems);
            }
        }
        return problems;
    }

    /**
     * Tells, without allocating for a resource of up to 16 entries, that {@link #checkResource} would
     * find nothing: the same rules, without building paths and messages. {@code false} means "look
     * closer" (the full check then runs), also for any {@code #} in a prefix, where only the full
     * check can tell whether limit keys collide (without a {@code #}, two distinct prefixes can never
     * spell the same limit key).
     */
    private static boolean plainlyValid(String name, ResourceQuotas resource) {
        if (name.isEmpty() || name.length() > MAX_RESOURCE_NAME_LENGTH || name.indexOf('/') >= 0
                || unpairedSurrogate(name) >= 0) {
            return false;
        }
        for (int i = 0; i < name.length(); i++) {
            if (Character.isISOControl(name.charAt(i))) {
                return false;
            }
        }
        List<PrefixRule> prefixes = resource.prefixes();
        int n = prefixes.size();
        for (int i = 0; i < n; i++) {
            PrefixRule rule = prefixes.get(i);
            String prefix = rule.prefix();
            int star = prefix.indexOf('*');
            if ((star >= 0 && star != prefix.length() - 1) || prefix.indexOf('#') >= 0
                    || (rule.quota() == null && rule.methods().isEmpty())
                    || rule.methods().containsKey(S3Operation.Unknown)) {
                return false;
            }
            int literalLength = star >= 0 ? star : prefix.length();
            for (int c = 0; c < literalLength; c++) {
                if (Character.isSurrogate(prefix.charAt(c))) {
                    return false; // valid pairs too: the full check counts their bytes
                }
            }
            if (literalLength * 3 > MAX_PREFIX_BYTES && utf8Length(prefix, literalLength) > MAX_PREFIX_BYTES) {
                return false;
            }
        }
        if (n <= 16) {
            for (int i = 1; i < n; i++) {
                for (int j = 0; j < i; j++) {
                    if (prefixes.get(i).prefix().equals(prefixes.get(j).prefix())) {
                        return false;
                    }
                }
            }
            return true;
        }
        java.util.Set<String> seen = new java.util.HashSet<>((int) (n / 0.75f) + 1);
        for (PrefixRule rule : prefixes) {
            if (!seen.add(rule.prefix())) {
                return false;
            }
        }
        return true;
    }

    /** UTF-8 length of {@code s[0, end)}, which holds no surrogates. */
    private static int utf8Length(String s, int end) {
        int bytes = 0;
        for (int i = 0; i < end; i++) {
            char c = s.charAt(i);
            bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
        }
        return bytes;
    }

    static String context(PrefixRule rule) {
        return "prefix " + ConfigPath.quote(rule.prefix());
    }

    private static boolean checkPrefix(String prefix, String path, String context, List<ConfigProblem> problems) {
        int before = problems.size();
        long stars = prefix.chars().filter(c -> c == '*').count();
        if (stars > 1) {
            problems.add(ConfigProblem.of(path, context, "only a single trailing '*' is allowed"));
        } else if (stars == 1 && !prefix.endsWith("*")) {
            problems.add(ConfigProblem.of(path, context, "'*' is only allowed at the end"));
        }
        String literal = prefix.endsWith("*") ? prefix.substring(0, prefix.length() - 1) : prefix;
        int bad = unpairedSurrogate(literal);
        if (bad >= 0) {
            problems.add(ConfigProblem.of(path, context, "prefix is not valid Unicode (unpaired surrogate at index " + bad + ")"));
        } else {
            int bytes = literal.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > MAX_PREFIX_BYTES) {
                problems.add(ConfigProblem.of(path, context, "prefix is " + bytes + " bytes long in UTF-8; at most "
                        + MAX_PREFIX_BYTES + " are allowed"));
            }
        }
        return problems.size() == before;
    }

    private static void checkKeyCollisions(String resource, PrefixRule rule, int index, String path, String context,
                                           Map<String, String> owners, List<ConfigProblem> problems) {
        String self = ConfigPath.index("prefixes", index) + " (" + context + ")";
        List<String[]> keys = new ArrayList<>();
        String base = LimitKeys.prefixKey(resource, rule.prefix());
        if (rule.quota() != null) {
            keys.add(new String[] {base, self + " quota"});
        }
        for (S3Operation op : rule.methods().keySet()) {
            keys.add(new String[] {base + LimitKeys.operationSuffix(op), self + " methods." + op.name()});
        }
        for (String[] key : keys) {
            String owner = owners.putIfAbsent(key[0], key[1]);
            if (owner != null) {
                problems.add(ConfigProblem.of(path, context, "limit key " + ConfigPath.quote(key[0])
                        + " would be shared with " + owner + "; change one of the prefixes"));
            }
        }
    }

    /** Returns the index of the first unpaired surrogate, or -1 when the string is valid Unicode. */
    static int unpairedSurrogate(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i++;
                } else {
                    return i;
                }
            } else if (Character.isLowSurrogate(c)) {
                return i;
            }
        }
        return -1;
    }
}
