package dev.levee.lease;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.levee.governor.Direction;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * What one gateway incarnation publishes in etcd under its own lease, at {@code
 * <prefix>bandwidth/gateways/<gatewayId>/<incarnation>} (docs/design.md §10): its claims on every
 * resource it holds a share of or wants one. JSON:
 * <pre>{"gateway":"gw-1","incarnation":"5f0c…","claims":{"download":{"share":13107200,"demand":26214400},
 * "download/svc-a":{"share":1048576,"demand":0}}}</pre>
 * etcd deletes the key when the lease expires, so the sum over live keys is the sum of shares
 * that may be in use.
 *
 * @param gatewayId   the gateway's configured id
 * @param incarnation a random id of this process (a restarted gateway inherits nothing)
 * @param claims      by resource
 */
public record GatewayEntry(String gatewayId, String incarnation, Map<Resource, Claim> claims) {

    private static final ObjectMapper JSON = new ObjectMapper();

    public GatewayEntry {
        Objects.requireNonNull(gatewayId, "gatewayId");
        Objects.requireNonNull(incarnation, "incarnation");
        claims = Map.copyOf(claims);
    }

    /** Returns the claim on {@code r}, or a zero claim. */
    public Claim claim(Resource r) {
        Claim c = claims.get(r);
        return c != null ? c : ZERO;
    }

    static final Claim ZERO = new Claim(0, 0);

    /** The key suffix under {@code <prefix>bandwidth/gateways/}. */
    public String keySuffix() {
        return gatewayId + "/" + incarnation;
    }

    /** Renders the JSON value. */
    public String toJson() {
        ObjectNode root = JSON.createObjectNode();
        root.put("gateway", gatewayId);
        root.put("incarnation", incarnation);
        ObjectNode cs = root.putObject("claims");
        new TreeMap<>(claims).forEach((r, c) -> {
            ObjectNode o = cs.putObject(r.toString());
            o.put("share", c.share());
            o.put("demand", c.demand());
        });
        return root.toString();
    }

    /**
     * Parses a value written by {@link #toJson}.
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    public static GatewayEntry parse(String json) {
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (Exception e) {
            throw new IllegalArgumentException("not JSON");
        }
        if (root == null || !root.isObject() || !root.path("gateway").isTextual() || !root.path("incarnation").isTextual()
                || !root.path("claims").isObject()) {
            throw new IllegalArgumentException("expected {gateway, incarnation, claims}");
        }
        Map<Resource, Claim> claims = new TreeMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.get("claims").properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            Resource r = resource(e.getKey());
            JsonNode v = e.getValue();
            if (!v.path("share").canConvertToLong() || !v.path("demand").canConvertToLong()
                    || !v.path("share").isIntegralNumber() || !v.path("demand").isIntegralNumber()) {
                throw new IllegalArgumentException("claim '" + e.getKey() + "': expected {share, demand} integers");
            }
            claims.put(r, new Claim(v.get("share").asLong(), v.get("demand").asLong()));
        }
        return new GatewayEntry(root.get("gateway").asText(), root.get("incarnation").asText(), claims);
    }

    static Resource resource(String s) {
        int slash = s.indexOf('/');
        String d = (slash < 0 ? s : s.substring(0, slash)).toUpperCase(Locale.ROOT);
        Direction dir;
        try {
            dir = Direction.valueOf(d);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("claim '" + s + "': unknown direction");
        }
        return slash < 0 ? Resource.of(dir) : Resource.of(dir, s.substring(slash + 1));
    }
}
