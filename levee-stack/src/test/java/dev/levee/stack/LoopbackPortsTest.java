package dev.levee.stack;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class LoopbackPortsTest {

    @Test
    void portsAreDistinctBelowTheEphemeralRangeAndBindable() throws Exception {
        int ephemeralLow = Integer.parseInt(Files.readAllLines(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).getFirst()
                .trim().split("\\s+")[0]);
        int[] ports = LoopbackPorts.free(200);
        assertThat(Arrays.stream(ports).distinct().count()).isEqualTo(200);
        assertThat(Arrays.stream(ports).boxed().toList()).allSatisfy(p -> assertThat(p).isBetween(1024, ephemeralLow - 1));
        try (ServerSocket s = new ServerSocket(ports[0], 1, InetAddress.getLoopbackAddress())) {
            assertThat(s.getLocalPort()).isEqualTo(ports[0]);
        }
    }

    @Test
    void aTakenPortIsSkipped() throws Exception {
        int first = LoopbackPorts.free();
        // the walk is sequential: hold the next candidates open and the next answer must be none of them
        try (ServerSocket a = new ServerSocket(first + 1, 1, InetAddress.getLoopbackAddress());
             ServerSocket b = new ServerSocket(first + 2, 1, InetAddress.getLoopbackAddress())) {
            int next = LoopbackPorts.free();
            assertThat(next).isNotIn(first, a.getLocalPort(), b.getLocalPort());
        }
    }
}
