package dev.levee.cli;

import dev.levee.client.LeveeClient;
import dev.levee.runtime.HostPort;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The observers a levee-client (or a gateway's embedded client) polls: {@code --observer HOST:PORT[,HOST:PORT…]},
 * by default the {@value #ENV} environment variable, else 127.0.0.1:7000 (issue 22, item 9). The flag wins over the
 * variable, as {@code --etcd} over {@code LEVEE_ETCD_ENDPOINTS}. One address is the form of old and keeps working.
 */
final class ObserverOptions {

    /** The environment variable that gives the default of {@code --observer}. */
    static final String ENV = "LEVEE_OBSERVERS";

    @Option(names = "--observer", paramLabel = "HOST:PORT[,HOST:PORT...]",
            defaultValue = "${env:" + ENV + ":-127.0.0.1:7000}",
            description = "observers to poll, comma-separated: each is asked every refresh and the list is taken from"
                    + " one that answers and is ready, the newest etcd revision first (default: $" + ENV
                    + ", else 127.0.0.1:7000; the flag wins over the variable)")
    String observers;

    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    /**
     * Returns the observers given.
     *
     * @throws UsageException naming the flag or the variable and the value when an entry is empty, not
     *                        {@code HOST:PORT}, port 0, given twice, or there are more than 16
     */
    List<HostPort> list() {
        boolean fromFlag = spec == null || spec.commandLine() == null || spec.commandLine().getParseResult() == null
                || spec.commandLine().getParseResult().hasMatchedOption("--observer") || System.getenv(ENV) == null;
        return parse(observers, fromFlag ? "--observer" : ENV);
    }

    /**
     * Parses a comma-separated list of observer addresses.
     *
     * @param text what was given
     * @param what where it was given ({@code --observer} or {@value #ENV}), for the message
     * @return the addresses, in the order given
     * @throws UsageException naming {@code what} and {@code text} when the list is empty, an entry is empty, not
     *                        {@code HOST:PORT}, has port 0, is given twice, or there are more than 16
     */
    static List<HostPort> parse(String text, String what) {
        String named = what + " '" + (text == null ? "" : text) + "'";
        if (text == null || text.isBlank()) {
            throw new UsageException(named + ": give HOST:PORT[,HOST:PORT...]");
        }
        String[] entries = text.split(",", -1);
        if (entries.length > LeveeClient.Options.MAX_OBSERVERS) {
            throw new UsageException(named + ": at most " + LeveeClient.Options.MAX_OBSERVERS + " observers, got "
                    + entries.length);
        }
        List<HostPort> list = new ArrayList<>(entries.length);
        for (int i = 0; i < entries.length; i++) {
            String entry = entries[i].trim();
            if (entry.isEmpty()) {
                throw new UsageException(named + ": entry " + (i + 1) + " is empty");
            }
            HostPort hp;
            try {
                hp = HostPort.parse(entry, named);
            } catch (IllegalArgumentException e) {
                throw new UsageException(e.getMessage());
            }
            if (hp.port() == 0) {
                throw new UsageException(named + ": '" + entry + "' has port 0, which no observer listens on");
            }
            if (list.contains(hp)) {
                throw new UsageException(named + ": " + hp + " is given twice");
            }
            list.add(hp);
        }
        return List.copyOf(list);
    }
}
