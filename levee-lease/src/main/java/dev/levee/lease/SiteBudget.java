package dev.levee.lease;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeType;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.levee.core.ByteUnits;
import dev.levee.governor.Direction;
import dev.levee.governor.GovernorConfig;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * The site-wide bandwidth budgets that gateways share through leases (docs/design.md §10), as kept in
 * etcd at {@code <prefix>bandwidth/budget} and in the single-file form {@code levee demo} and
 * {@code levee bandwidth import} read. YAML or JSON; every field optional; unknown fields refused:
 * <pre>
 * download: 30MiB/s      # site budget of all downloads (response bodies); 0 = none (default)
 * upload: 0              # site budget of all uploads (request bodies); 0 = none
 * principal:             # every principal's site-wide ceiling, unless overridden; 0 = none
 *   download: 10MiB/s
 *   upload: 0
 * principals:            # overrides by service-account id
 *   svc-backup: {download: 50MiB/s}
 * </pre>
 * Rates are bytes/s, as numbers or with units ({@code 4MiB/s}, {@code 1.5GB}). A rate that is not
 * 0 lies in [{@value #MIN_RATE} (one 64 KiB quantum per second), 2<sup>40</sup>] bytes/s; a
 * direction's budget must hold one quantum per second per gateway ({@link #checkGateways}).
 *
 * @param download          the download site budget, bytes/s; 0 = none
 * @param upload            the upload site budget, bytes/s; 0 = none
 * @param principalDownload every principal's download ceiling unless overridden, bytes/s; 0 = none
 * @param principalUpload   every principal's upload ceiling unless overridden, bytes/s; 0 = none
 * @param principals        overrides by principal id
 */
public record SiteBudget(long download, long upload, long principalDownload, long principalUpload,
                         Map<String, Ceilings> principals) {

    /** The smallest rate that is not 0: one 64 KiB quantum per second. */
    public static final long MIN_RATE = GovernorConfig.MAX_QUANTUM_BYTES;
    /** No site budgets at all: every gateway shapes with its own ceilings only. */
    public static final SiteBudget NONE = new SiteBudget(0, 0, 0, 0, Map.of());

    /** Strict: a key given twice and a second YAML document are refused, not resolved silently (last wins, dropped). */
    private static final ObjectMapper YAML = YAMLMapper.builder()
            .enable(com.fasterxml.jackson.core.StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();
    private static final Set<String> TOP = Set.of("download", "upload", "principal", "principals");
    private static final Set<String> DIRECTIONS = Set.of("download", "upload");

    /**
     * One principal's site-wide ceilings.
     *
     * @param download bytes/s, 0 = none; null = the default ({@code principal.download})
     * @param upload   bytes/s, 0 = none; null = the default
     */
    public record Ceilings(Long download, Long upload) {
    }

    public SiteBudget {
        principals = Map.copyOf(Objects.requireNonNull(principals, "principals"));
    }

    /** Returns a direction's site budget, bytes/s; 0 = none. */
    public long budget(Direction d) {
        return d == Direction.DOWNLOAD ? download : upload;
    }

    /** Returns a principal's site-wide ceiling in a direction, bytes/s; 0 = none. */
    public long ceiling(Direction d, String principal) {
        Ceilings c = principals.get(principal);
        Long v = c == null ? null : (d == Direction.DOWNLOAD ? c.download() : c.upload());
        return v != null ? v : (d == Direction.DOWNLOAD ? principalDownload : principalUpload);
    }

    /** Returns the budget of a resource, bytes/s; 0 = none. */
    public long budget(Resource r) {
        return r.perPrincipal() ? ceiling(r.direction(), r.principal()) : budget(r.direction());
    }

    /** Whether any principal may have a site-wide ceiling in {@code d}. */
    public boolean principalCeilings(Direction d) {
        if ((d == Direction.DOWNLOAD ? principalDownload : principalUpload) != 0) {
            return true;
        }
        for (Ceilings c : principals.values()) {
            Long v = d == Direction.DOWNLOAD ? c.download() : c.upload();
            if (v != null && v != 0) {
                return true;
            }
        }
        return false;
    }

    /** Whether nothing is budgeted site-wide. */
    public boolean none() {
        return download == 0 && upload == 0 && !principalCeilings(Direction.DOWNLOAD)
                && !principalCeilings(Direction.UPLOAD);
    }

    /**
     * Returns the problems of this budget for a site of {@code gateways} gateways: each budget
     * and ceiling that is not 0 must give every gateway one 64 KiB quantum per second.
     *
     * @param where    the key or file, for the messages
     * @param gateways live gateways, ≥ 1
     * @return one message per problem, naming {@code where} and the field; empty if none
     */
    public List<String> checkGateways(String where, int gateways) {
        List<String> problems = new ArrayList<>();
        long min = MIN_RATE * Math.max(1, gateways);
        checkShared(problems, where, "download", download, min, gateways);
        checkShared(problems, where, "upload", upload, min, gateways);
        return problems;
    }

    private static void checkShared(List<String> problems, String where, String field, long rate, long min,
                                    int gateways) {
        if (rate != 0 && rate < min) {
            problems.add(where + ": field '" + field + "': " + ByteUnits.formatRate(rate) + " is less than one 64 KiB"
                    + " quantum per second for each of the " + gateways + " gateways (at least "
                    + ByteUnits.formatRate(min) + ")");
        }
    }

    /**
     * Parses and validates a budget document.
     *
     * @param where the key or file name, for the messages
     * @param text  YAML or JSON
     * @return the budget
     * @throws InvalidBudgetException naming {@code where} and every wrong field, one per line; also for an empty
     *         document (no budget is the absent key, {@code levee bandwidth delete}: an empty value written by mistake
     *         must not lift every site budget), a key given twice and a second YAML document
     */
    public static SiteBudget parse(String where, String text) {
        JsonNode root;
        try {
            root = YAML.readTree(text == null ? "" : text);
        } catch (JsonProcessingException e) {
            String msg = String.valueOf(e.getOriginalMessage());
            throw new InvalidBudgetException(List.of(where + ": " + (msg.startsWith("Trailing token")
                    ? "a second document follows the first (a budget is one document)" : "not YAML or JSON: " + msg)));
        }
        if (root == null || root.isMissingNode() || root.isNull()) {
            throw new InvalidBudgetException(List.of(where + ": the document is empty (no budget is no key:"
                    + " levee bandwidth delete)"));
        }
        List<String> problems = new ArrayList<>();
        if (!root.isObject()) {
            throw new InvalidBudgetException(List.of(where + ": expected a mapping of download, upload, principal,"
                    + " principals; got " + kind(root)));
        }
        unknownFields(problems, where, "", root, TOP);
        long download = rate(problems, where, "download", root.get("download"));
        long upload = rate(problems, where, "upload", root.get("upload"));
        long pd = 0;
        long pu = 0;
        JsonNode p = root.get("principal");
        if (p != null && !p.isNull()) {
            if (!p.isObject()) {
                problems.add(where + ": field 'principal': expected a mapping of download, upload; got " + kind(p));
            } else {
                unknownFields(problems, where, "principal.", p, DIRECTIONS);
                pd = rate(problems, where, "principal.download", p.get("download"));
                pu = rate(problems, where, "principal.upload", p.get("upload"));
            }
        }
        Map<String, Ceilings> overrides = new TreeMap<>();
        JsonNode ps = root.get("principals");
        if (ps != null && !ps.isNull()) {
            if (!ps.isObject()) {
                problems.add(where + ": field 'principals': expected a mapping of principal ids; got " + kind(ps));
            } else {
                for (Iterator<Map.Entry<String, JsonNode>> it = ps.properties().iterator(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> e = it.next();
                    String id = e.getKey();
                    String f = "principals." + id;
                    if (id.isBlank() || id.chars().anyMatch(c -> c < 0x21 || c == 0x7f)) {
                        problems.add(where + ": field '" + f + "': a principal id is printable and has no spaces");
                        continue;
                    }
                    JsonNode v = e.getValue();
                    if (v == null || !v.isObject()) {
                        problems.add(where + ": field '" + f + "': expected a mapping of download, upload; got "
                                + kind(v));
                        continue;
                    }
                    unknownFields(problems, where, f + ".", v, DIRECTIONS);
                    Long d = v.has("download") ? rate(problems, where, f + ".download", v.get("download")) : null;
                    Long u = v.has("upload") ? rate(problems, where, f + ".upload", v.get("upload")) : null;
                    overrides.put(id, new Ceilings(d, u));
                }
            }
        }
        if (!problems.isEmpty()) {
            throw new InvalidBudgetException(problems);
        }
        return new SiteBudget(download, upload, pd, pu, overrides);
    }

    private static void unknownFields(List<String> problems, String where, String path, JsonNode node,
                                      Set<String> known) {
        node.fieldNames().forEachRemaining(f -> {
            if (!known.contains(f)) {
                problems.add(where + ": unknown field '" + path + f + "' (known: " + String.join(", ", new java.util.TreeSet<>(known))
                        + ")");
            }
        });
    }

    private static long rate(List<String> problems, String where, String field, JsonNode v) {
        if (v == null || v.isNull()) {
            return 0;
        }
        long r;
        if (v.isIntegralNumber() && v.canConvertToLong()) {
            r = v.asLong();
            if (r < 0) {
                problems.add(where + ": field '" + field + "': " + r + " is negative; a rate is ≥ 0 bytes/s (0 = none)");
                return 0;
            }
        } else if (v.isTextual()) {
            try {
                r = ByteUnits.parseRate(v.asText());
            } catch (IllegalArgumentException e) {
                problems.add(where + ": field '" + field + "': " + e.getMessage());
                return 0;
            }
        } else {
            problems.add(where + ": field '" + field + "': expected a rate such as 30MiB/s or 31457280; got " + kind(v));
            return 0;
        }
        if (r != 0 && (r < MIN_RATE || r > GovernorConfig.MAX_RATE_BYTES_PER_SECOND)) {
            problems.add(where + ": field '" + field + "': " + ByteUnits.formatRate(r) + " is outside [64 KiB/s, 1 TiB/s]"
                    + " (0 = none)");
            return 0;
        }
        return r;
    }

    private static String kind(JsonNode n) {
        if (n == null || n.isNull()) {
            return "nothing";
        }
        JsonNodeType t = n.getNodeType();
        return switch (t) {
            case ARRAY -> "a list";
            case OBJECT -> "a mapping";
            case STRING -> "'" + n.asText() + "'";
            default -> n.toString();
        };
    }

    /** Renders this budget as the YAML document {@link #parse} reads (rates with units). */
    public String toYaml() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("download", fmt(download));
        m.put("upload", fmt(upload));
        if (principalDownload != 0 || principalUpload != 0) {
            Map<String, Object> p = new LinkedHashMap<>();
            p.put("download", fmt(principalDownload));
            p.put("upload", fmt(principalUpload));
            m.put("principal", p);
        }
        if (!principals.isEmpty()) {
            Map<String, Object> ps = new TreeMap<>();
            principals.forEach((id, c) -> {
                Map<String, Object> one = new LinkedHashMap<>();
                if (c.download() != null) {
                    one.put("download", fmt(c.download()));
                }
                if (c.upload() != null) {
                    one.put("upload", fmt(c.upload()));
                }
                ps.put(id, one);
            });
            m.put("principals", ps);
        }
        try {
            return YAML.writeValueAsString(m).replaceFirst("^---\\s*\\n", "");
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String fmt(long r) {
        return r == 0 ? "0" : ByteUnits.formatRate(r).replace(" ", "");
    }

    /** Thrown for a budget document with problems; the message lists each, one per line. */
    public static final class InvalidBudgetException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;
        private final List<String> problems;

        public InvalidBudgetException(List<String> problems) {
            super(String.join("\n", problems));
            this.problems = List.copyOf(problems);
        }

        /** Each problem, naming the key or file and the field. */
        public List<String> problems() {
            return problems;
        }
    }
}
