package dev.levee.quota;

import java.util.Optional;

/**
 * Whether a quota is enforced or only tried (docs/design.md §11, issue 14; docs/decisions.md, "Shadow quotas").
 *
 * <p>A {@link #SHADOW shadow} quota is decided as usual, on its own GCRA state, logged and counted as
 * {@code would_reject} when it would refuse, and the request is admitted; it never consumes the allowance of
 * an enforced quota. The request is enforced by the quota that would apply if the shadow quota were not
 * configured ({@link QuotaConfig#resolveEnforced}).
 */
public enum QuotaMode {
    /** The quota decides: a refusal is a {@code 503 SlowDown}. */
    ENFORCE("enforce"),
    /** The quota is evaluated, logged and counted only: the request is admitted. */
    SHADOW("shadow");

    private final String label;

    QuotaMode(String label) {
        this.label = label;
    }

    /**
     * Returns the name used in configuration files, logs and metrics.
     *
     * @return {@code "enforce"} or {@code "shadow"}
     */
    public String label() {
        return label;
    }

    /**
     * Parses a configured mode, exactly (case-sensitive, as every other name in the configuration).
     *
     * @param text the configured text
     * @return the mode, or empty when {@code text} is neither {@code enforce} nor {@code shadow}
     */
    public static Optional<QuotaMode> byLabel(String text) {
        for (QuotaMode m : values()) {
            if (m.label.equals(text)) {
                return Optional.of(m);
            }
        }
        return Optional.empty();
    }
}
