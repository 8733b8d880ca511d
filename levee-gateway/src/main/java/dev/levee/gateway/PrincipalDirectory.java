package dev.levee.gateway;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * Maps S3 access key ids to principals: the service accounts whose buckets the bandwidth governor
 * and the admission queue keep (docs/design.md §8). Several keys may belong to one account, so
 * that rotating a key keeps the account's budget; at most {@value #MAX_KEYS} keys are loaded.
 *
 * <p>Immutable and validated at construction. Load one from the principals file with {@link
 * #parseYaml}; the format is described there.
 */
public final class PrincipalDirectory {

    /** The most access keys a gateway loads (docs/design.md §8: at most 1000 principals, the loaded keys). */
    public static final int MAX_KEYS = 1000;
    /** The longest principal (account) id, in characters. */
    public static final int MAX_ID_LENGTH = 128;

    private static final PrincipalDirectory EMPTY = new PrincipalDirectory(List.of());

    /**
     * One service account.
     *
     * @param id           the principal id (service-account id); never shown on {@code /health/ready}
     * @param keys         its access key ids, at least one
     * @param uploadRate   its own upload ceiling in bytes/s, overriding the gateway's per-principal
     *                     default; empty = the default; {@code 0} = no per-principal ceiling
     * @param downloadRate likewise for downloads
     * @param secrets      the secrets of some of its keys (key id → secret): a request claiming
     *                     one of these keys is charged to the account only if its SigV4 or SigV2
     *                     signature verifies ({@link SigV4Verifier}, {@link SigV2Verifier}); a key without a secret is trusted as
     *                     claimed
     */
    public record Account(String id, List<String> keys, OptionalLong uploadRate, OptionalLong downloadRate,
                          Map<String, SigningSecret> secrets) {
        /**
         * Validates and copies.
         *
         * @throws IllegalArgumentException if the id is blank, too long or has control characters,
         *                                  or there is no key, a blank key, a negative rate, or a
         *                                  secret for a key that is not among {@code keys}
         * @throws NullPointerException     if a component, key or secret is null
         */
        public Account {
            Objects.requireNonNull(id, "id");
            checkId(id, "account id");
            keys = List.copyOf(keys);
            if (keys.isEmpty()) {
                throw new IllegalArgumentException("account '" + id + "' has no access key");
            }
            for (String k : keys) {
                Objects.requireNonNull(k, "access key id");
                if (!Credentials.isKeyId(k)) {
                    throw new IllegalArgumentException("account '" + id + "': access key id '" + k
                            + "' must be 1 to " + Credentials.MAX_KEY_LENGTH
                            + " printable ASCII characters without spaces, '/', ',', ':', '&', '%' or '+'");
                }
            }
            Objects.requireNonNull(uploadRate, "uploadRate");
            Objects.requireNonNull(downloadRate, "downloadRate");
            if (uploadRate.orElse(0) < 0 || downloadRate.orElse(0) < 0) {
                throw new IllegalArgumentException("account '" + id + "': rates must be ≥ 0");
            }
            secrets = Map.copyOf(secrets);
            for (String k : secrets.keySet()) {
                if (!keys.contains(k)) {
                    throw new IllegalArgumentException("account '" + id + "': a secret is given for access key id '" + k
                            + "', which is not one of its keys");
                }
            }
        }

        /** Returns an account whose keys have no secret (their claims are trusted). */
        public Account(String id, List<String> keys, OptionalLong uploadRate, OptionalLong downloadRate) {
            this(id, keys, uploadRate, downloadRate, Map.of());
        }

        /** Returns an account with the given keys, no secrets and the gateway's default rates. */
        public static Account of(String id, String... keys) {
            return new Account(id, List.of(keys), OptionalLong.empty(), OptionalLong.empty());
        }

        /** Returns this account with {@code secret} for its key {@code keyId} (replacing any). */
        public Account withSecret(String keyId, SigningSecret secret) {
            Map<String, SigningSecret> s = new HashMap<>(secrets);
            s.put(keyId, Objects.requireNonNull(secret, "secret"));
            return new Account(id, keys, uploadRate, downloadRate, s);
        }
    }

    private final Map<String, Account> accounts;
    private final Map<String, String> principalByKey;
    private final Map<String, SigningSecret> secretByKey;

    /**
     * Validates the accounts.
     *
     * @throws IllegalArgumentException if two accounts share an id, a key belongs to two
     *                                  accounts, or there are more than {@value #MAX_KEYS} keys
     */
    public PrincipalDirectory(List<Account> accounts) {
        Map<String, Account> byId = new LinkedHashMap<>();
        Map<String, String> byKey = new HashMap<>();
        Map<String, SigningSecret> secrets = new HashMap<>();
        for (Account a : accounts) {
            if (byId.putIfAbsent(a.id(), a) != null) {
                throw new IllegalArgumentException("account '" + a.id() + "' is defined twice");
            }
            for (String k : a.keys()) {
                String other = byKey.putIfAbsent(k, a.id());
                if (other != null) {
                    throw new IllegalArgumentException("access key id '" + k + "' belongs to both '" + other
                            + "' and '" + a.id() + "'");
                }
            }
            secrets.putAll(a.secrets());
        }
        if (byKey.size() > MAX_KEYS) {
            throw new IllegalArgumentException(byKey.size() + " access keys, more than the " + MAX_KEYS + " a gateway loads");
        }
        this.accounts = java.util.Collections.unmodifiableMap(byId);
        this.principalByKey = Map.copyOf(byKey);
        this.secretByKey = Map.copyOf(secrets);
    }

    /** Returns a directory without accounts: every request is anonymous. */
    public static PrincipalDirectory empty() {
        return EMPTY;
    }

    /**
     * Parses the principals file (YAML), strictly: unknown fields, duplicate keys, wrong types and
     * every rule of {@link Account} and this class are errors, all reported in one message.
     *
     * <pre>
     * accounts:
     *   svc-photos:                      # principal id (service account)
     *     keys: [AKIAPHOTOS1, AKIAPHOTOS2]   # its access key ids; rotation keeps the budget
     *     upload_rate: 20MiB/s           # optional, bytes/s with units; 0 = no per-principal ceiling
     *     download_rate: 50MiB/s         # optional
     *   svc-backup:
     *     keys:
     *       - AKIABACKUP                 # a key id alone: its claim is trusted
     *       - id: AKIABACKUP2            # a key with its secret: its signatures are verified
     *         secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
     * </pre>
     *
     * @param yaml   the file's text
     * @param source the file name, for messages
     * @return the directory
     * @throws IllegalArgumentException listing every problem found, each prefixed with
     *                                  {@code source} and the path in the document
     */
    public static PrincipalDirectory parseYaml(String yaml, String source) {
        return PrincipalsFile.parse(yaml, source);
    }

    /** Returns the principal (account id) that owns {@code accessKeyId}, or null when unknown. */
    public String principalOf(String accessKeyId) {
        return accessKeyId == null ? null : principalByKey.get(accessKeyId);
    }

    /** Returns the secret of {@code accessKeyId}, or null when it has none (its claims are trusted) or is unknown. */
    SigningSecret secretOf(String accessKeyId) {
        return accessKeyId == null ? null : secretByKey.get(accessKeyId);
    }

    /** Returns the number of access keys with a secret, whose signatures the gateway verifies. */
    public int verifiedKeyCount() {
        return secretByKey.size();
    }

    /** Returns the accounts in definition order. */
    public List<Account> accounts() {
        return new ArrayList<>(accounts.values());
    }

    /** Returns whether an account has this id. */
    public boolean hasAccount(String id) {
        return accounts.containsKey(id);
    }

    /** Returns the number of access keys loaded. */
    public int keyCount() {
        return principalByKey.size();
    }

    static void checkId(String id, String what) {
        if (id.isBlank() || id.length() > MAX_ID_LENGTH || id.chars().anyMatch(Character::isISOControl)) {
            throw new IllegalArgumentException(what + " '" + id + "' must be 1 to " + MAX_ID_LENGTH
                    + " characters, not blank, without control characters");
        }
    }
}
