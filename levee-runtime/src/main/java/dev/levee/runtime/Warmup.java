package dev.levee.runtime;

/**
 * What the roles' warm-ups share (issues 10 and 12): the resource their self-checks name. It is not a valid S3 bucket
 * name (underscores), so no real request shares its state; limiters and levee-client neither log nor count
 * decisions on it, so a warm-up leaves no trace in the decision logs, the metrics or the statistics.
 */
public final class Warmup {

    /** The resource of warm-up self-checks: {@value}. */
    public static final String RESOURCE = "_levee_warmup";

    private Warmup() {
    }
}
