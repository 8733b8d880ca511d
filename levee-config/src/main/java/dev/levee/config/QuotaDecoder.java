package dev.levee.config;

import dev.levee.config.YamlTree.Field;
import dev.levee.config.YamlTree.Kind;
import dev.levee.config.YamlTree.ListNode;
import dev.levee.config.YamlTree.MapNode;
import dev.levee.config.YamlTree.Mark;
import dev.levee.config.YamlTree.Node;
import dev.levee.config.YamlTree.Scalar;
import dev.levee.quota.ConfigPath;
import dev.levee.quota.ConfigProblem;
import dev.levee.quota.PrefixRule;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaConfigException;
import dev.levee.quota.QuotaMode;
import dev.levee.quota.ResourceQuotas;
import dev.levee.s3.S3Operation;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Turns a {@link YamlTree} into quota objects, checking types and field names and collecting
 * every problem with its place in the document (docs/design.md §4).
 *
 * <p>To find as many problems as possible in one pass, a part that is broken is replaced by a
 * harmless placeholder (quota {@code 0/0}, or an entry that is left out of the semantic checks)
 * so that the rules of {@link dev.levee.quota.QuotaRules} still run on everything else. The
 * placeholders never leave this class: any problem means no configuration is returned.
 */
final class QuotaDecoder {

    static final List<String> ROOT_FIELDS = List.of("factor", "mode", "lease", "default", "methods_default", "resources");
    static final List<String> RESOURCE_FIELDS = List.of("quota", "prefixes");
    static final List<String> ENTRY_FIELDS = List.of("prefix", "quota", "methods");
    static final List<String> QUOTA_FIELDS = List.of("rate", "burst", "mode", "lease");

    static final String FACTOR_EXPECTED = "an integer ≥ 1 (the limiter group size)";
    static final String MODE_EXPECTED = "enforce or shadow";
    static final String LEASE_EXPECTED = "true or false (whether the quota's counter may be leased to a client)";
    static final String QUOTA_EXPECTED = "a mapping with rate (requests per second) and burst (requests)";

    private static final Quota PLACEHOLDER = new Quota(0, 0);
    private static final Pattern INTEGER = Pattern.compile("[-+]?(0|[1-9][0-9]*)");
    private static final Pattern DECIMAL = Pattern.compile("[-+]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][-+]?[0-9]+)?");
    private static final Pattern LOOKS_TYPED = Pattern.compile(
            "[-+]?(\\.?[0-9][0-9_.eE+-]*|\\.inf|\\.Inf|\\.INF)|\\.nan|\\.NaN|\\.NAN|true|false|yes|no|on|off|null|~",
            Pattern.CASE_INSENSITIVE);
    private static final List<String> OPERATION_NAMES = Arrays.stream(S3Operation.values()).map(Enum::name).toList();

    private record Located(ConfigProblem problem, Mark mark) {
    }

    private final String source;
    private final List<Located> problems = new ArrayList<>();
    private final Map<String, Mark> marks = new HashMap<>();
    private final List<String> suppressed = new ArrayList<>();

    QuotaDecoder(String source) {
        this.source = source;
    }

    // ---- problems

    void addReadProblems(List<YamlTree.Problem> readProblems) {
        for (YamlTree.Problem p : readProblems) {
            problems.add(new Located(ConfigProblem.of(p.path(), p.message()), p.mark()));
        }
    }

    /** Adds problems found by the rules of the quota model, located by their paths. */
    void addRuleProblems(List<ConfigProblem> ruleProblems) {
        for (ConfigProblem p : ruleProblems) {
            if (suppressed.stream().noneMatch(s -> within(p.path(), s))) {
                problems.add(new Located(p, markOf(p.path())));
            }
        }
    }

    boolean hasProblems() {
        return !problems.isEmpty();
    }

    QuotaConfigException failure() {
        List<Located> sorted = new ArrayList<>(problems);
        sorted.sort(Comparator.comparing(Located::mark, Comparator.nullsFirst(
                Comparator.comparingInt(Mark::line).thenComparingInt(Mark::column))));
        return new QuotaConfigException(sorted.stream().map(l -> l.problem().at(location(l.mark()))).toList());
    }

    private String location(Mark mark) {
        return mark == null ? source : source + ":" + mark.line() + ":" + mark.column();
    }

    private void report(String path, String context, String message, Mark mark) {
        problems.add(new Located(ConfigProblem.of(path, context, message), mark));
    }

    private static boolean within(String path, String ancestor) {
        return path.equals(ancestor)
                || path.startsWith(ancestor) && (path.charAt(ancestor.length()) == '.' || path.charAt(ancestor.length()) == '[');
    }

    /** Finds the mark of the deepest recorded node on {@code path}. */
    private Mark markOf(String path) {
        for (int end = path.length(); end >= 0; end--) {
            if (end == 0 || end == path.length() || path.charAt(end) == '.' || path.charAt(end) == '[') {
                Mark mark = marks.get(path.substring(0, end));
                if (mark != null) {
                    return mark;
                }
            }
        }
        return null;
    }

    /** Records where the document starts, for problems about the document as a whole. */
    void markRoot(Node root) {
        if (root != null) {
            marks.put("", root.mark());
        }
    }

    // ---- the single-file form

    /** Decodes the whole file; returns {@code null} when the root is not even a mapping. */
    QuotaConfig.Builder config(Node root) {
        QuotaConfig.Builder builder = QuotaConfig.builder();
        if (root == null || isEmpty(root)) {
            return builder;
        }
        marks.put("", root.mark());
        MapNode map = asMap(root, "", null, "a mapping with factor, default, methods_default and resources");
        if (map == null) {
            return null;
        }
        Map<String, Field> fields = known(map, "", null, ROOT_FIELDS);
        Field factor = fields.get("factor");
        if (factor != null) {
            Integer value = integer(factor.value(), "factor", null, FACTOR_EXPECTED); // < 1 is reported by QuotaRules
            if (value != null) {
                builder.factor(value);
            }
        }
        Field mode = fields.get("mode");
        if (mode != null) {
            QuotaMode value = mode(mode.value(), "mode", null);
            if (value != null) {
                builder.defaultMode(value);
            }
        }
        Field lease = fields.get("lease");
        if (lease != null) {
            Boolean value = lease(lease.value(), "lease", null);
            if (value != null) {
                builder.defaultLease(value);
            }
        }
        Field defaultQuota = fields.get("default");
        if (defaultQuota != null) {
            Quota quota = quota(defaultQuota.value(), "default", null);
            builder.defaultQuota(quota != null ? quota : PLACEHOLDER);
        }
        Field methodsDefault = fields.get("methods_default");
        if (methodsDefault != null) {
            builder.methodsDefault(methods(methodsDefault.value(), "methods_default", null));
        }
        Field resources = fields.get("resources");
        if (resources != null && !isEmpty(resources.value())) {
            MapNode byName = asMap(resources.value(), "resources", null, "a mapping from bucket names to their quotas");
            if (byName != null) {
                for (Field resource : byName.fields().values()) {
                    String path = ConfigPath.key("resources", resource.key());
                    marks.put(path, resource.mark());
                    builder.resource(resource.key(), resource(resource.value(), path));
                }
            }
        }
        return builder;
    }

    // ---- parts, shared with the per-key etcd forms

    /** Decodes an integer in the range of {@code int}; the caller checks its bounds. */
    Integer integer(Node node, String path, String context, String expected) {
        if (node instanceof Scalar s && s.kind() == Kind.INTEGER && INTEGER.matcher(s.text()).matches()) {
            BigInteger value = new BigInteger(s.text());
            if (value.bitLength() < 32) {
                return value.intValue();
            }
            report(path, context, "expected " + expected + ", got " + s.text() + " (out of range)", s.mark());
            return null;
        }
        if (!invalid(node)) {
            report(path, context, "expected " + expected + ", got " + describe(node), node.mark());
        }
        return null;
    }

    private Integer burst(Node node, String path, String context) {
        String expected = "an integer ≥ 0 (requests)";
        Integer burst = integer(node, path, context, expected);
        if (burst != null && burst < 0) {
            report(path, context, "expected " + expected + ", got " + burst, node.mark());
            return null;
        }
        return burst;
    }

    Quota quota(Node node, String path, String context) {
        MapNode map = asMap(node, path, context, QUOTA_EXPECTED);
        if (map == null) {
            return null;
        }
        Map<String, Field> fields = known(map, path, context, QUOTA_FIELDS);
        Double rate = null;
        Integer burst = null;
        Field rateField = fields.get("rate");
        if (rateField == null) {
            report(ConfigPath.field(path, "rate"), context, "required (requests per second)", map.mark());
        } else {
            rate = rate(rateField.value(), ConfigPath.field(path, "rate"), context);
        }
        Field burstField = fields.get("burst");
        if (burstField == null) {
            report(ConfigPath.field(path, "burst"), context, "required (requests)", map.mark());
        } else {
            burst = burst(burstField.value(), ConfigPath.field(path, "burst"), context);
        }
        QuotaMode mode = null;
        boolean modeOk = true;
        Field modeField = fields.get("mode");
        if (modeField != null) {
            mode = mode(modeField.value(), ConfigPath.field(path, "mode"), context);
            modeOk = mode != null;
        }
        Boolean lease = null;
        boolean leaseOk = true;
        Field leaseField = fields.get("lease");
        if (leaseField != null) {
            lease = lease(leaseField.value(), ConfigPath.field(path, "lease"), context);
            leaseOk = lease != null;
        }
        return rate != null && burst != null && modeOk && leaseOk ? new Quota(rate, burst, mode, lease) : null;
    }

    /**
     * Decodes a lease setting: exactly {@code true} or {@code false} (docs/quotas.md, "Request leases"). YAML 1.1's
     * other booleans ({@code yes}, {@code on}, {@code True}...) are refused as strictly as a quoted number is.
     */
    Boolean lease(Node node, String path, String context) {
        if (node instanceof Scalar s && s.kind() == Kind.BOOLEAN && (s.text().equals("true") || s.text().equals("false"))) {
            return Boolean.valueOf(s.text());
        }
        if (!invalid(node)) {
            String hint = "";
            if (node instanceof Scalar s && s.kind() == Kind.STRING && (s.text().equals("true") || s.text().equals("false"))) {
                hint = "; write it without quotes";
            } else if (node instanceof Scalar s && (s.kind() == Kind.BOOLEAN || s.kind() == Kind.STRING)) {
                hint = suggestion(s.text(), List.of("true", "false"));
            }
            report(path, context, "expected " + LEASE_EXPECTED + ", got " + describe(node) + hint, node.mark());
        }
        return null;
    }

    /** Decodes a mode: exactly {@code enforce} or {@code shadow} (docs/quotas.md, "Shadow quotas"). */
    QuotaMode mode(Node node, String path, String context) {
        if (node instanceof Scalar s && s.kind() == Kind.STRING) {
            java.util.Optional<QuotaMode> m = QuotaMode.byLabel(s.text());
            if (m.isPresent()) {
                return m.get();
            }
            report(path, context, "expected " + MODE_EXPECTED + ", got " + describe(node)
                    + suggestion(s.text(), List.of("enforce", "shadow")), node.mark());
            return null;
        }
        if (!invalid(node)) {
            report(path, context, "expected " + MODE_EXPECTED + ", got " + describe(node), node.mark());
        }
        return null;
    }

    private Double rate(Node node, String path, String context) {
        String expected = "expected a finite number ≥ 0 (requests per second), got ";
        if (node instanceof Scalar s && (s.kind() == Kind.INTEGER && INTEGER.matcher(s.text()).matches()
                || s.kind() == Kind.FLOAT && DECIMAL.matcher(s.text()).matches())) {
            BigDecimal value;
            try {
                value = new BigDecimal(s.text());
            } catch (NumberFormatException e) { // exponent beyond int range
                report(path, context, expected + s.text() + " (out of range)", s.mark());
                return null;
            }
            double rate = value.doubleValue();
            if (value.signum() < 0) {
                report(path, context, expected + s.text(), s.mark());
            } else if (Double.isInfinite(rate)) {
                report(path, context, expected + s.text() + " (too large)", s.mark());
            } else if (rate == 0 && value.signum() > 0) {
                report(path, context, expected + s.text() + " (too small; write 0 to block every request)", s.mark());
            } else {
                return rate;
            }
            return null;
        }
        if (!invalid(node)) {
            report(path, context, expected + describe(node), node.mark());
        }
        return null;
    }

    Map<S3Operation, Quota> methods(Node node, String path, String context) {
        if (isEmpty(node)) {
            return Map.of();
        }
        MapNode map = asMap(node, path, context, "a mapping from operation names to quotas");
        if (map == null) {
            return Map.of();
        }
        Map<S3Operation, Quota> methods = new LinkedHashMap<>();
        for (Field field : map.fields().values()) {
            String fieldPath = ConfigPath.key(path, field.key());
            marks.put(fieldPath, field.mark());
            Optional<S3Operation> op = S3Operation.byName(field.key());
            if (op.isEmpty()) {
                report(fieldPath, context, "unknown operation '" + ConfigPath.escape(field.key(), '\'') + "'"
                        + suggestion(field.key(), OPERATION_NAMES) + "; operations use AWS API names such as GetObject", field.mark());
            }
            Quota quota = quota(field.value(), fieldPath, context);
            op.ifPresent(o -> methods.put(o, quota != null ? quota : PLACEHOLDER));
        }
        return Collections.unmodifiableMap(methods);
    }

    ResourceQuotas resource(Node node, String path) {
        if (isEmpty(node)) {
            return new ResourceQuotas(null, List.of());
        }
        MapNode map = asMap(node, path, null, "a mapping with quota and prefixes");
        if (map == null) {
            return new ResourceQuotas(null, List.of());
        }
        Map<String, Field> fields = known(map, path, null, RESOURCE_FIELDS);
        Quota quota = null;
        Field quotaField = fields.get("quota");
        if (quotaField != null) {
            Quota decoded = quota(quotaField.value(), ConfigPath.field(path, "quota"), null);
            quota = decoded != null ? decoded : PLACEHOLDER;
        }
        List<PrefixRule> entries = new ArrayList<>();
        Field prefixes = fields.get("prefixes");
        if (prefixes != null && !isEmpty(prefixes.value())) {
            String listPath = ConfigPath.field(path, "prefixes");
            if (prefixes.value() instanceof ListNode list) {
                for (int i = 0; i < list.items().size(); i++) {
                    entries.add(entry(list.items().get(i), ConfigPath.index(listPath, i)));
                }
            } else if (!invalid(prefixes.value())) {
                report(listPath, null, "expected a list of entries ('- prefix: ...'), got " + describe(prefixes.value()),
                        prefixes.value().mark());
            }
        }
        return new ResourceQuotas(quota, entries);
    }

    private PrefixRule entry(Node node, String path) {
        int problemsBefore = problems.size();
        marks.put(path, node.mark());
        MapNode map = asMap(node, path, null, "a mapping with prefix, quota and methods");
        if (map == null) {
            return placeholderEntry(path);
        }
        String prefix = null;
        Field prefixField = map.fields().get("prefix");
        if (prefixField == null) {
            report(ConfigPath.field(path, "prefix"), null, "required: the key prefix the entry applies to (\"\" for every key)", map.mark());
        } else {
            prefix = string(prefixField.value(), ConfigPath.field(path, "prefix"));
        }
        String context = prefix == null ? null : "prefix " + ConfigPath.quote(prefix);
        Map<String, Field> fields = known(map, path, context, ENTRY_FIELDS);
        Quota quota = null;
        Field quotaField = fields.get("quota");
        if (quotaField != null) {
            Quota decoded = quota(quotaField.value(), ConfigPath.field(path, "quota"), context);
            quota = decoded != null ? decoded : PLACEHOLDER;
        }
        Map<S3Operation, Quota> methods = Map.of();
        Field methodsField = fields.get("methods");
        if (methodsField != null) {
            methods = methods(methodsField.value(), ConfigPath.field(path, "methods"), context);
        }
        if (quota == null && methods.isEmpty() && problems.size() > problemsBefore) {
            quota = PLACEHOLDER; // a misspelled or broken quota or methods: "needs a quota or methods" would mislead
        }
        if (prefix == null) {
            return placeholderEntry(path);
        }
        return new PrefixRule(prefix, quota, methods);
    }

    private PrefixRule placeholderEntry(String path) {
        suppressed.add(path);
        return PrefixRule.of("\u0000placeholder:" + path, PLACEHOLDER);
    }

    private String string(Node node, String path) {
        if (node instanceof Scalar s && s.kind() == Kind.STRING) {
            return s.text();
        }
        if (!invalid(node)) {
            String hint = "";
            if (node instanceof Scalar s && s.kind() == Kind.NULL) {
                hint = "; write \"\" to match every key";
            } else if (node instanceof Scalar s) {
                hint = "; quote it: \"" + ConfigPath.escape(s.text(), '"') + "\"";
            }
            report(path, null, "expected a string, got " + describe(node) + hint, node.mark());
        }
        return null;
    }

    // ---- helpers

    private MapNode asMap(Node node, String path, String context, String expected) {
        if (node instanceof MapNode map) {
            return map;
        }
        if (!invalid(node)) {
            report(path, context, "expected " + expected + ", got " + describe(node), node.mark());
        }
        return null;
    }

    /** Reports fields not in {@code allowed} and records the marks of all fields. */
    private Map<String, Field> known(MapNode map, String path, String context, List<String> allowed) {
        for (Field field : map.fields().values()) {
            String fieldPath = ConfigPath.key(path, field.key());
            marks.put(fieldPath, field.mark());
            if (!allowed.contains(field.key())) {
                report(fieldPath, context, "unknown field '" + ConfigPath.escape(field.key(), '\'') + "'; expected one of "
                        + String.join(", ", allowed) + suggestion(field.key(), allowed), field.mark());
            }
        }
        return map.fields();
    }

    private static boolean isEmpty(Node node) {
        return node instanceof Scalar s && s.kind() == Kind.NULL;
    }

    private static boolean invalid(Node node) {
        return node instanceof Scalar s && s.kind() == Kind.INVALID;
    }

    static String describe(Node node) {
        return switch (node) {
            case MapNode m -> "a mapping";
            case ListNode l -> "a list";
            case Scalar s -> switch (s.kind()) {
                case NULL -> "an empty value";
                case STRING -> s.text().isEmpty() ? "an empty string"
                        : (LOOKS_TYPED.matcher(s.text()).matches() ? "the string " : "") + singleQuoted(s.text());
                case BOOLEAN -> singleQuoted(s.text()) + " (read as a boolean)";
                case INTEGER, FLOAT -> ConfigPath.escape(s.text());
                case INVALID -> "an invalid value";
            };
        };
    }

    private static String singleQuoted(String text) {
        return "'" + ConfigPath.escape(text, '\'') + "'";
    }

    /** Proposes the closest candidate: equal ignoring case, or at most two edits away. */
    static String suggestion(String given, Collection<String> candidates) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String candidate : candidates) {
            int distance = candidate.equalsIgnoreCase(given) ? 0 : distance(given, candidate);
            if (distance < bestDistance) {
                best = candidate;
                bestDistance = distance;
            }
        }
        return best != null && bestDistance <= 2 && bestDistance < given.length() ? " (did you mean " + best + "?)" : "";
    }

    /** Levenshtein distance with adjacent transpositions counted as one edit. */
    private static int distance(String a, String b) {
        if (Math.abs(a.length() - b.length()) > 2 || a.length() > 64) {
            return Integer.MAX_VALUE;
        }
        int[][] d = new int[a.length() + 1][b.length() + 1];
        for (int i = 0; i <= a.length(); i++) {
            d[i][0] = i;
        }
        for (int j = 0; j <= b.length(); j++) {
            d[0][j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
                if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
                    d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
                }
            }
        }
        return d[a.length()][b.length()];
    }
}
