package dev.levee.cli;

import dev.levee.etcd.Etcd;
import io.etcd.jetcd.Client;
import java.util.List;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;

/**
 * Where etcd is: {@code --etcd} or the {@code LEVEE_ETCD_ENDPOINTS} environment variable, and the prefix. The
 * options are inherited ({@link ScopeType#INHERIT}): on a command with subcommands ({@code levee quota}) they may
 * be given before or after the subcommand.
 */
final class EtcdOptions {

    @Option(names = "--etcd", scope = ScopeType.INHERIT, paramLabel = "ENDPOINTS", defaultValue = "${env:LEVEE_ETCD_ENDPOINTS}",
            description = "etcd endpoints, comma-separated (default: $LEVEE_ETCD_ENDPOINTS; none: no etcd)")
    String endpoints;

    @Option(names = "--etcd-prefix", scope = ScopeType.INHERIT, defaultValue = "/levee", description = "key prefix in etcd (default: ${DEFAULT-VALUE})")
    String prefix;

    @Option(names = "--etcd-max-value-size", scope = ScopeType.INHERIT, paramLabel = "SIZE", converter = Converters.SizeConverter.class, defaultValue = "64KiB",
            description = "largest quota value (or site bandwidth budget) in etcd, refused by key when read or written (default: ${DEFAULT-VALUE})")
    int maxValueBytes = Etcd.DEFAULT_MAX_VALUE_BYTES;

    @Option(names = "--etcd-max-message-size", scope = ScopeType.INHERIT, paramLabel = "SIZE", converter = Converters.SizeConverter.class, defaultValue = "16MiB",
            description = "largest gRPC message accepted from etcd; snapshots are read in pages and a larger watch"
                    + " response falls back to a paginated re-read (default: ${DEFAULT-VALUE}, at least 64KiB)")
    int maxMessageBytes = Etcd.DEFAULT_MAX_MESSAGE_BYTES;

    boolean enabled() {
        return endpoints != null && !endpoints.isBlank();
    }

    List<String> endpointList() {
        return Etcd.parseEndpoints(endpoints);
    }

    Client client() {
        return Etcd.client(endpointList(), maxMessageBytes);
    }

    /** How long {@link #probe} waits for a TCP connection to one endpoint: 1 s. */
    static final int PROBE_TIMEOUT_MS = 1000;

    /**
     * Opens (and closes) a TCP connection to each endpoint in turn, so that an etcd that is not there is
     * reported at once, naming the endpoint, rather than as jetcd's timeout many seconds later (issue 13).
     * Returns as soon as one endpoint accepts.
     *
     * @throws IllegalStateException naming every endpoint and why it cannot be reached: connection refused,
     *                               no answer within {@value #PROBE_TIMEOUT_MS} ms (a timeout), unknown host
     */
    void probe() {
        List<String> problems = new java.util.ArrayList<>();
        for (String e : endpointList()) {
            java.net.URI u;
            try {
                u = java.net.URI.create(e.contains("://") ? e : "http://" + e);
            } catch (IllegalArgumentException bad) {
                return; // jetcd reports a malformed endpoint in its own words
            }
            if (u.getHost() == null) {
                return;
            }
            int port = u.getPort() > 0 ? u.getPort() : 2379;
            try (java.net.Socket s = new java.net.Socket()) {
                s.connect(new java.net.InetSocketAddress(u.getHost(), port), PROBE_TIMEOUT_MS);
                return;
            } catch (java.net.ConnectException refused) {
                problems.add(e + ": connection refused (nothing listens on " + u.getHost() + ":" + port + ")");
            } catch (java.net.SocketTimeoutException slow) {
                problems.add(e + ": no answer within " + PROBE_TIMEOUT_MS + " ms (connect timed out)");
            } catch (java.net.UnknownHostException unknown) {
                problems.add(e + ": unknown host " + u.getHost());
            } catch (java.io.IOException other) {
                problems.add(e + ": " + (other.getMessage() == null ? other.getClass().getSimpleName() : other.getMessage()));
            }
        }
        if (!problems.isEmpty()) {
            throw new IllegalStateException("cannot reach etcd at " + String.join("; ", problems));
        }
    }
}
