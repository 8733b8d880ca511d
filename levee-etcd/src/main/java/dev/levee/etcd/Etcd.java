package dev.levee.etcd;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Creates jetcd clients and converts keys; shared by Levee's etcd adapters. */
public final class Etcd {

    /** Default key prefix of Levee's data in etcd (docs/design.md §4). */
    public static final String DEFAULT_PREFIX = "/levee";

    /**
     * Default largest gRPC message the client accepts from etcd, in bytes: 16 MiB (gRPC's own default
     * is 4 MiB). Above etcd's recommended largest request (10 MiB), so any single value etcd accepted
     * can be read; snapshots are paginated and a larger watch response makes the reader fall back to a
     * paginated snapshot (docs/decisions.md, "etcd data size").
     */
    public static final int DEFAULT_MAX_MESSAGE_BYTES = 16 << 20;

    /**
     * Default largest quota value Levee accepts, in bytes: 64 KiB. A larger value is refused by
     * {@code levee quota set/import} and, when written into etcd by other means, refused with its key
     * named by the quota source (the last good configuration stays).
     */
    public static final int DEFAULT_MAX_VALUE_BYTES = 64 << 10;

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
        return client(endpoints, DEFAULT_MAX_MESSAGE_BYTES);
    }

    /**
     * Builds a client like {@link #client(List)} with a chosen inbound message limit.
     *
     * @param endpoints       endpoint URIs
     * @param maxMessageBytes largest gRPC message accepted from etcd, in bytes, ≥ 64 KiB
     *                        (default {@link #DEFAULT_MAX_MESSAGE_BYTES})
     * @return a new client (close it)
     * @throws IllegalArgumentException when {@code maxMessageBytes} is below 64 KiB
     */
    public static Client client(List<String> endpoints, int maxMessageBytes) {
        if (maxMessageBytes < 64 << 10) {
            throw new IllegalArgumentException("etcd max message size must be >= 64 KiB, got " + maxMessageBytes + " bytes");
        }
        return Client.builder()
                .maxInboundMessageSize(maxMessageBytes)
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

    /**
     * Returns whether a failure is gRPC's RESOURCE_EXHAUSTED (a message above the inbound limit),
     * anywhere in its cause chain.
     */
    public static boolean messageTooLarge(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (io.grpc.Status.fromThrowable(c).getCode() == io.grpc.Status.Code.RESOURCE_EXHAUSTED
                    || c instanceof io.etcd.jetcd.common.exception.EtcdException e
                    && e.getErrorCode() == io.etcd.jetcd.common.exception.ErrorCode.RESOURCE_EXHAUSTED
                    || String.valueOf(c.getMessage()).contains("exceeds maximum size")) {
                return true;
            }
        }
        return false;
    }

    /**
     * Describes a value above the value limit, for a refusal naming its key.
     *
     * @param fullKey  the etcd key
     * @param size     the value's size in bytes
     * @param maxBytes the limit in bytes
     * @return the problem, for example {@code /levee/resources/b: value of 5242880 bytes exceeds the
     *         limit of 65536 bytes (--etcd-max-value-size)}
     */
    public static dev.levee.quota.ConfigProblem oversized(String fullKey, long size, long maxBytes) {
        return new dev.levee.quota.ConfigProblem(fullKey, "", null, "value of " + size + " bytes exceeds the limit of "
                + maxBytes + " bytes (--etcd-max-value-size)");
    }

    static dev.levee.quota.ConfigProblem tooLarge(String fullKey) {
        return new dev.levee.quota.ConfigProblem(fullKey, "", null,
                "value exceeds the etcd client's message limit (--etcd-max-message-size), so it cannot be read");
    }

    static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    static String string(ByteSequence b) {
        return b.toString(StandardCharsets.UTF_8);
    }
}
