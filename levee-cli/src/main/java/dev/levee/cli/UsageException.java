package dev.levee.cli;

/**
 * An option value a command checks in its own code (a range, a combination of options) is wrong: reported like the
 * values picocli refuses itself — one line naming the option, a hint to {@code --help} — with exit status 2, the
 * status of a usage error ({@link Main#run}); failures of the environment (a file that cannot be read, a server that
 * does not answer) stay status 1.
 */
final class UsageException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    /**
     * @param message what is wrong, naming the option ({@code "--rounds must be >= 1"})
     */
    UsageException(String message) {
        super(message);
    }
}
