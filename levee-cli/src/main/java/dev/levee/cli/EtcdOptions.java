package dev.levee.cli;

import dev.levee.etcd.Etcd;
import io.etcd.jetcd.Client;
import java.util.List;
import picocli.CommandLine.Option;

/** Where etcd is: {@code --etcd} or the {@code LEVEE_ETCD_ENDPOINTS} environment variable, and the prefix. */
final class EtcdOptions {

    @Option(names = "--etcd", paramLabel = "ENDPOINTS", defaultValue = "${env:LEVEE_ETCD_ENDPOINTS}",
            description = "etcd endpoints, comma-separated (default: $LEVEE_ETCD_ENDPOINTS; none: no etcd)")
    String endpoints;

    @Option(names = "--etcd-prefix", defaultValue = "/levee", description = "key prefix in etcd (default: ${DEFAULT-VALUE})")
    String prefix;

    boolean enabled() {
        return endpoints != null && !endpoints.isBlank();
    }

    List<String> endpointList() {
        return Etcd.parseEndpoints(endpoints);
    }

    Client client() {
        return Etcd.client(endpointList());
    }
}
