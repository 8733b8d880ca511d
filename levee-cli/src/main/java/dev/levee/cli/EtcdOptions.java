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

    @Option(names = "--etcd-max-value-size", paramLabel = "SIZE", converter = Converters.SizeConverter.class, defaultValue = "64KiB",
            description = "largest quota value in etcd, refused by key when read or written (default: ${DEFAULT-VALUE})")
    int maxValueBytes = Etcd.DEFAULT_MAX_VALUE_BYTES;

    @Option(names = "--etcd-max-message-size", paramLabel = "SIZE", converter = Converters.SizeConverter.class, defaultValue = "16MiB",
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
}
