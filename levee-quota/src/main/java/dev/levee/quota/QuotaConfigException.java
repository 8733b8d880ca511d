package dev.levee.quota;

import java.util.List;
import java.util.Objects;

/**
 * Reports that a quota configuration is invalid, listing every problem found, not only the
 * first (docs/design.md §4: the whole update is rejected and the last good configuration stays).
 *
 * <p>The message joins the problems with {@code "; "} so that it fits one log line;
 * {@link #errors()} gives one line per problem, as {@code levee config validate} prints them.
 */
public final class QuotaConfigException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** The problems, in the order to report them. */
    private final List<ConfigProblem> problems;

    /**
     * Creates the exception.
     *
     * @param problems the problems, in the order to report them; at least one
     * @throws IllegalArgumentException if {@code problems} is empty
     * @throws NullPointerException     if {@code problems} is or contains {@code null}
     */
    public QuotaConfigException(List<ConfigProblem> problems) {
        this(problems, null);
    }

    /**
     * Creates the exception with the cause of a problem (an I/O error, for example); the
     * cause is kept for debugging and never appears in the message.
     *
     * @param problems the problems; at least one
     * @param cause    the underlying exception, or {@code null}
     * @throws IllegalArgumentException if {@code problems} is empty
     * @throws NullPointerException     if {@code problems} is or contains {@code null}
     */
    public QuotaConfigException(List<ConfigProblem> problems, Throwable cause) {
        super(join(problems), cause);
        this.problems = List.copyOf(problems);
    }

    /**
     * Returns the problems found.
     *
     * @return at least one problem, unmodifiable
     */
    public List<ConfigProblem> problems() {
        return problems;
    }

    /**
     * Returns the problems formatted one per line, as {@link ConfigProblem#toString()} does.
     *
     * @return at least one message, unmodifiable
     */
    public List<String> errors() {
        return problems.stream().map(ConfigProblem::toString).toList();
    }

    private static String join(List<ConfigProblem> problems) {
        Objects.requireNonNull(problems, "problems");
        if (problems.isEmpty()) {
            throw new IllegalArgumentException("a QuotaConfigException needs at least one problem");
        }
        StringBuilder sb = new StringBuilder();
        for (ConfigProblem p : problems) {
            if (!sb.isEmpty()) {
                sb.append("; ");
            }
            sb.append(Objects.requireNonNull(p, "problem"));
        }
        return sb.toString();
    }
}
