package dev.levee.quota;

/**
 * Names the step of the resolution order (docs/design.md §4) that produced a {@link ResolvedQuota},
 * from the most specific to the most general.
 */
public enum QuotaLevel {
    /** Step 1: the matching prefix entry's {@code methods[operation]}. */
    PREFIX_METHOD("prefix_method"),
    /** Step 1: the matching prefix entry's {@code quota}. */
    PREFIX("prefix"),
    /** Step 2: the resource's own {@code quota}, one counter for the whole resource. */
    RESOURCE("resource"),
    /** Step 3: {@code methods_default[operation]}, counted per resource and operation. */
    METHODS_DEFAULT("methods_default"),
    /** Step 4: {@code default}, counted per resource. */
    DEFAULT("default");

    private final String label;

    QuotaLevel(String label) {
        this.label = label;
    }

    /**
     * Returns the stable lower-case name used in logs, metrics and limit keys.
     *
     * @return for example {@code "prefix_method"} or {@code "methods_default"}
     */
    public String label() {
        return label;
    }
}
