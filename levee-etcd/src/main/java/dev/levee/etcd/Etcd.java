package dev.levee.etcd;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Creates jetcd clients and converts keys; shared by Levee's etcd adapters. */
public final class Etcd {

    /** Default key prefix of Levee's data in etcd (SPEC.md §4). */
    public static final String DEFAULT_PREFIX = "/levee";

    private Etcd() {
    }

    /**
     * Parses a comma-separated endpoint list such as {@code http://127.0.0.1:2379,http://10.0.0.2:2379}.
     *
     * @param endpoints the list; bare {@code host:port} gets {@code http://}
     * @return the endpoint URIs
     * @throws IllegalArgumentException when the list is empty or an entry is malformed
     */
    public static List<String> parseEndpoints(String endpoints) {
        List<String> out = new ArrayList<>();
        if (endpoints != null) {
            for (String e : endpoints.split(",")) {
                String t = e.trim();
                if (t.isEmpty()) {
                    continue;
                }
                if (!t.contains("://")) {
                    t = "http://" + t;
                }
                try {
                    java.net.URI u = java.net.URI.create(t);
                    if (u.getHost() == null || u.getPort() < 0) {
                        throw new IllegalArgumentException();
                    }
                } catch (IllegalArgumentException ex) {
                    throw new IllegalArgumentException("etcd endpoint '" + e.trim() + "' is not http://HOST:PORT");
                }
                out.add(t);
            }
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("no etcd endpoint given (--etcd or LEVEE_ETCD_ENDPOINTS)");
        }
        return out;
    }

    /**
     * Builds a client with short connect and retry settings, so that an unreachable etcd is noticed in
     * seconds rather than minutes.
     *
     * @param endpoints endpoint URIs
     * @return a new client (close it)
     */
    public static Client client(List<String> endpoints) {
        return Client.builder()
                .endpoints(endpoints.toArray(String[]::new))
                .connectTimeout(Duration.ofSeconds(2))
                .keepaliveTime(Duration.ofSeconds(5))
                .keepaliveTimeout(Duration.ofSeconds(3))
                .retryDelay(200)
                .retryMaxDelay(2000)
                .retryMaxDuration(Duration.ofSeconds(5))
                .build();
    }

    /** Normalises a prefix to start with {@code /} and end with {@code /}. */
    public static String normalisePrefix(String prefix) {
        String p = prefix == null || prefix.isBlank() ? DEFAULT_PREFIX : prefix.trim();
        if (!p.startsWith("/")) {
            p = "/" + p;
        }
        return p.endsWith("/") ? p : p + "/";
    }

    static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    static String string(ByteSequence b) {
        return b.toString(StandardCharsets.UTF_8);
    }
}
