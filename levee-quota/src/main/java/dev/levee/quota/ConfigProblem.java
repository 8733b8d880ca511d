package dev.levee.quota;

import java.io.Serializable;
import java.util.Objects;

/**
 * Describes one problem of a quota configuration: where it is and what is wrong.
 *
 * <p>Its {@link #toString()} is the line an operator reads, for example
 * <pre>quotas.yaml:14:11: resources.example-bucket.prefixes[2] (prefix "up*loads"): '*' is only allowed at the end</pre>
 *
 * @param location where the problem is in its source, such as {@code quotas.yaml:14:11}, or
 *                 {@code null} when unknown (for a configuration built in code)
 * @param path     the path of the field at fault (see {@link ConfigPath}); {@code ""} for the
 *                 whole document
 * @param context  what identifies the entry beyond its index, such as {@code prefix "up*loads"},
 *                 or {@code null}
 * @param message  what is wrong, in plain words
 */
public record ConfigProblem(String location, String path, String context, String message) implements Serializable {

    private static final long serialVersionUID = 1L;

    /**
     * Checks the mandatory components.
     *
     * @throws NullPointerException if {@code path} or {@code message} is {@code null}
     */
    public ConfigProblem {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(message, "message");
    }

    /**
     * Creates a problem without location or context.
     *
     * @param path    the path of the field at fault
     * @param message what is wrong
     * @return the problem
     */
    public static ConfigProblem of(String path, String message) {
        return new ConfigProblem(null, path, null, message);
    }

    /**
     * Creates a problem without location.
     *
     * @param path    the path of the field at fault
     * @param context what identifies the entry, or {@code null}
     * @param message what is wrong
     * @return the problem
     */
    public static ConfigProblem of(String path, String context, String message) {
        return new ConfigProblem(null, path, context, message);
    }

    /**
     * Returns a copy located in a source.
     *
     * @param newLocation for example {@code quotas.yaml:14:11}
     * @return the located problem
     */
    public ConfigProblem at(String newLocation) {
        return new ConfigProblem(newLocation, path, context, message);
    }

    /**
     * Formats the problem as {@code [location: ][path][ (context)]: message}.
     *
     * @return one line, without stack trace or class names
     */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder();
        if (location != null) {
            sb.append(location).append(": ");
        }
        sb.append(path);
        if (context != null) {
            sb.append(path.isEmpty() ? "(" : " (").append(context).append(')');
        }
        if (!path.isEmpty() || context != null) {
            sb.append(": ");
        }
        return sb.append(message).toString();
    }
}
