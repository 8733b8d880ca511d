package dev.levee.stack;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Loopback ports for processes that must be told their port before they bind it: the demo's etcd, S3 backend and
 * NGINX, and the roles the integration tests start.
 *
 * <p>A port the kernel hands out for {@code bind(0)} comes from the ephemeral range ({@code
 * /proc/sys/net/ipv4/ip_local_port_range}, 32768–60999 on Linux), the same range every outgoing connection takes its
 * local port from. Between the probe and the role's own bind, an etcd client, an S3 client or an NGINX upstream
 * connection can take it, and the role fails with "Address already in use" (SiteBandwidthIT lost a run to this in 2026-12). So
 * ports are chosen below the ephemeral range, where nothing takes a port unasked, walking from a random start so two
 * test JVMs rarely meet, never repeating within one JVM, and each probed by binding it once.
 */
public final class LoopbackPorts {

    private static final int SPAN = 12_000;
    private static final int HIGH = ephemeralLow() - 1;
    private static final int LOW = Math.max(1024, HIGH - SPAN);
    private static final AtomicInteger NEXT = new AtomicInteger(ThreadLocalRandom.current().nextInt(HIGH - LOW));

    private LoopbackPorts() {
    }

    /**
     * Returns a loopback port that was free a moment ago and that no earlier call in this JVM returned.
     *
     * @return a port below the ephemeral range
     * @throws IllegalStateException if every port of the span is taken
     */
    public static int free() {
        for (int tried = 0; tried < HIGH - LOW; tried++) {
            int port = LOW + Math.floorMod(NEXT.getAndIncrement(), HIGH - LOW);
            try (ServerSocket probe = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
                return probe.getLocalPort();
            } catch (IOException taken) {
                // in use: try the next one
            }
        }
        throw new IllegalStateException("no free loopback port between " + LOW + " and " + HIGH);
    }

    /**
     * Returns {@code n} distinct ports, each as {@link #free()}.
     *
     * @param n how many ports, ≥ 0
     * @return the ports, in the order they were found
     * @throws IllegalStateException if the span runs out
     */
    public static int[] free(int n) {
        int[] ports = new int[n];
        for (int i = 0; i < n; i++) {
            ports[i] = free();
        }
        return ports;
    }

    private static int ephemeralLow() {
        try {
            // read by lines: Files.readString trusts the size procfs reports and can return a single byte
            String range = Files.readAllLines(Path.of("/proc/sys/net/ipv4/ip_local_port_range"), StandardCharsets.US_ASCII).getFirst();
            int low = Integer.parseInt(range.trim().split("\\s+")[0]);
            return low > 1024 + SPAN / 4 ? low : 32_768;
        } catch (IOException | RuntimeException e) {
            return 32_768; // Linux's default low bound
        }
    }
}
