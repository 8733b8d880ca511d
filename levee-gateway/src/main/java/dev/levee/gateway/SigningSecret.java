package dev.levee.gateway;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * Holds the secret access key of one access key id, so that the gateway can verify the SigV4 and
 * SigV2 signatures made with it ({@link SigV4Verifier}, {@link SigV2Verifier}). Its text never leaves
 * this object: {@link #toString()} is redacted, validation messages do not quote it, and only the
 * signing-key material is kept (SigV4's {@code "AWS4" + secret} and SigV2's secret, both UTF-8).
 */
public final class SigningSecret {

    /** The longest secret accepted, in characters (AWS secrets have 40). */
    public static final int MAX_LENGTH = 1024;

    private final byte[] aws4Key;
    private final byte[] v2Key;

    private SigningSecret(byte[] aws4Key, byte[] v2Key) {
        this.aws4Key = aws4Key;
        this.v2Key = v2Key;
    }

    /**
     * Returns the secret of {@code secret}.
     *
     * @param secret the secret access key, as the S3 clients are configured with it
     * @return the secret
     * @throws IllegalArgumentException when it is empty, blank, longer than {@value #MAX_LENGTH}
     *                                  characters, starts or ends with white space, or has control
     *                                  characters; the message never quotes the secret
     * @throws NullPointerException     when it is null
     */
    public static SigningSecret of(String secret) {
        Objects.requireNonNull(secret, "secret");
        String problem = problem(secret);
        if (problem != null) {
            throw new IllegalArgumentException("the secret " + problem);
        }
        return new SigningSecret(("AWS4" + secret).getBytes(StandardCharsets.UTF_8), secret.getBytes(StandardCharsets.UTF_8));
    }

    /** Returns what is wrong with {@code secret} (a phrase that does not quote it), or null. */
    static String problem(String secret) {
        if (secret.isEmpty()) {
            return "is empty";
        }
        if (secret.isBlank()) {
            return "is blank";
        }
        if (secret.length() > MAX_LENGTH) {
            return "is longer than " + MAX_LENGTH + " characters";
        }
        if (Character.isWhitespace(secret.charAt(0)) || Character.isWhitespace(secret.charAt(secret.length() - 1))) {
            return "starts or ends with white space";
        }
        if (secret.chars().anyMatch(Character::isISOControl)) {
            return "has control characters";
        }
        return null;
    }

    /** Returns the first key of the SigV4 derivation, {@code "AWS4" + secret} in UTF-8; do not modify it. */
    byte[] aws4Key() {
        return aws4Key;
    }

    /** Returns SigV2's HMAC-SHA1 key, the secret in UTF-8; do not modify it. */
    byte[] v2Key() {
        return v2Key;
    }

    /** Returns a text without the secret. */
    @Override
    public String toString() {
        return "SigningSecret[redacted]";
    }
}
