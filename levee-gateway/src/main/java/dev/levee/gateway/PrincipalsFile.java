package dev.levee.gateway;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.levee.core.ByteUnits;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;

/** Reads the principals file strictly; see {@link PrincipalDirectory#parseYaml}. */
final class PrincipalsFile {

    private static final ObjectMapper YAML = YAMLMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            // a second YAML document is refused: its accounts were dropped, their keys silently anonymous
            .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();
    private static final Set<String> ACCOUNT_FIELDS = Set.of("keys", "upload_rate", "download_rate");
    private static final Set<String> KEY_FIELDS = Set.of("id", "secret");

    private PrincipalsFile() {
    }

    static PrincipalDirectory parse(String yaml, String source) {
        JsonNode root;
        try {
            root = YAML.readTree(yaml);
        } catch (JacksonException e) {
            String where = e.getLocation() == null ? "" : ":" + e.getLocation().getLineNr() + ":" + e.getLocation().getColumnNr();
            String msg = e.getOriginalMessage() == null ? "malformed YAML" : e.getOriginalMessage().lines().findFirst().orElse("");
            if (msg.startsWith("Trailing token")) {
                msg = "a second document follows the first (the accounts are one document)";
            }
            throw new IllegalArgumentException(source + where + ": malformed YAML: " + msg);
        }
        List<String> problems = new ArrayList<>();
        List<PrincipalDirectory.Account> accounts = new ArrayList<>();
        if (root == null || root.isMissingNode() || root.isNull()) {
            problems.add("the file is empty: expected 'accounts:' (it may be 'accounts: {}')");
        } else if (!root.isObject()) {
            problems.add("expected a mapping with 'accounts'");
        } else {
            for (Map.Entry<String, JsonNode> f : root.properties()) {
                if (!f.getKey().equals("accounts")) {
                    problems.add("unknown field '" + f.getKey() + "' (expected 'accounts')");
                }
            }
            JsonNode list = root.get("accounts");
            if (list == null) {
                problems.add("'accounts' is missing (it may be 'accounts: {}')");
            } else if (!list.isNull() && !list.isObject()) {
                problems.add("accounts: expected a mapping of account id to {keys, upload_rate, download_rate}");
            } else if (list.isObject()) {
                for (Map.Entry<String, JsonNode> a : list.properties()) {
                    account(a.getKey(), a.getValue(), problems).ifPresent(accounts::add);
                }
            }
        }
        PrincipalDirectory directory = null;
        if (problems.isEmpty()) {
            try {
                directory = new PrincipalDirectory(accounts);
            } catch (IllegalArgumentException e) {
                problems.add(e.getMessage());
            }
        }
        if (!problems.isEmpty()) {
            // every problem on a line of its own, as 'levee config validate' reports a quota file's
            throw new IllegalArgumentException(source + ": " + String.join("\n" + source + ": ", problems));
        }
        return directory;
    }

    private static java.util.Optional<PrincipalDirectory.Account> account(String id, JsonNode node, List<String> problems) {
        String path = "accounts." + id;
        int before = problems.size();
        if (node == null || !node.isObject()) {
            problems.add(path + ": expected a mapping with 'keys'");
            return java.util.Optional.empty();
        }
        for (Map.Entry<String, JsonNode> f : node.properties()) {
            if (!ACCOUNT_FIELDS.contains(f.getKey())) {
                problems.add(path + ": unknown field '" + f.getKey() + "' (expected keys, upload_rate, download_rate)");
            }
        }
        List<String> keys = new ArrayList<>();
        Map<String, SigningSecret> secrets = new HashMap<>();
        JsonNode k = node.get("keys");
        if (k == null || !k.isArray() || k.isEmpty()) {
            problems.add(path + ".keys: expected a non-empty list of access key ids");
        } else {
            for (int i = 0; i < k.size(); i++) {
                key(k.get(i), path + ".keys[" + i + "]", keys, secrets, problems);
            }
        }
        OptionalLong up = rate(node.get("upload_rate"), path + ".upload_rate", problems);
        OptionalLong down = rate(node.get("download_rate"), path + ".download_rate", problems);
        if (problems.size() > before) {
            return java.util.Optional.empty();
        }
        try {
            return java.util.Optional.of(new PrincipalDirectory.Account(id, keys, up, down, secrets));
        } catch (IllegalArgumentException e) {
            problems.add(path + ": " + e.getMessage());
            return java.util.Optional.empty();
        }
    }

    /**
     * Reads one entry of {@code keys}: an access key id alone (its claim is trusted), or
     * {@code {id, secret}} (its signatures are verified). Messages name the field, never the secret.
     */
    private static void key(JsonNode node, String path, List<String> keys, Map<String, SigningSecret> secrets,
                            List<String> problems) {
        if (node.isTextual()) {
            keys.add(node.asText());
            return;
        }
        if (!node.isObject()) {
            problems.add(path + ": expected an access key id, or a mapping with 'id' and 'secret'");
            return;
        }
        int before = problems.size();
        for (Map.Entry<String, JsonNode> f : node.properties()) {
            if (!KEY_FIELDS.contains(f.getKey())) {
                problems.add(path + ": unknown field '" + f.getKey() + "' (expected id, secret)");
            }
        }
        JsonNode id = node.get("id");
        if (id == null || id.isNull()) {
            problems.add(path + ": 'id' is missing (the access key id)");
        } else if (!id.isTextual()) {
            problems.add(path + ".id: expected a string");
        }
        JsonNode secret = node.get("secret");
        String problem = null;
        if (secret == null) {
            problems.add(path + ": 'secret' is missing (write the access key id alone for a key whose claim is trusted)");
        } else if (secret.isNull()) {
            problems.add(path + ".secret: expected a non-empty string, got nothing");
        } else if (!secret.isTextual()) {
            problems.add(path + ".secret: expected a string (quote it)");
        } else if ((problem = SigningSecret.problem(secret.asText())) != null) {
            problems.add(path + ".secret: " + problem);
        }
        if (problems.size() > before) {
            return;
        }
        keys.add(id.asText());
        if (secrets.putIfAbsent(id.asText(), SigningSecret.of(secret.asText())) != null) {
            problems.add(path + ": access key id '" + id.asText() + "' is listed twice");
        }
    }

    private static OptionalLong rate(JsonNode node, String path, List<String> problems) {
        if (node == null) {
            return OptionalLong.empty();
        }
        if (node.isIntegralNumber() && node.canConvertToLong() && node.asLong() >= 0) {
            return OptionalLong.of(node.asLong());
        }
        if (node.isTextual()) {
            try {
                return OptionalLong.of(ByteUnits.parseRate(node.asText()));
            } catch (IllegalArgumentException e) {
                problems.add(path + ": " + e.getMessage());
                return OptionalLong.empty();
            }
        }
        problems.add(path + ": expected bytes per second ≥ 0, for example 1048576 or 4MiB/s");
        return OptionalLong.empty();
    }
}
