package dev.levee.gateway;

/**
 * Says what the gateway does with a request whose access key id is not in the {@link
 * PrincipalDirectory}, or that claims none (anonymous, or a browser POST upload).
 */
public enum AnonymousPolicy {
    /** Governs it as the one configured anonymous principal (default). */
    ALLOW,
    /** Refuses it with {@code 403 AccessDenied} before it reaches the backend. */
    REFUSE
}
