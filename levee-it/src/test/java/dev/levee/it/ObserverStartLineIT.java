package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Issue 26 item 9: {@code levee observer} says once that it listens. Before, the observer service logged
 * "observer listening on 127.0.0.1:P ttl=… factor=…" beside the role's "levee observer listening on 127.0.0.1:P
 * (factor …)": two near-identical lines at every start.
 */
class ObserverStartLineIT {

    static final Path DIR = Path.of("target", "it-logs", "observer-start").toAbsolutePath();

    @Test
    void theObserverSaysOnceThatItListensAndOnceWhatItServes() {
        int port = RoleProcess.freePort();
        try (RoleProcess o = RoleProcess.start(DIR, "observer", List.of("observer", "--listen", "127.0.0.1:" + port,
                "--factor", "2", "--log-target", "stderr"))) {
            o.awaitOutput("levee observer listening on 127.0.0.1:" + port, Duration.ofSeconds(60));
            String out = o.output();
            assertThat(out.lines().filter(l -> l.contains("listening")).toList()).as(out).hasSize(1);
            assertThat(out).contains("observer serving membership from heartbeats on port " + port + ": ttl=");
        }
    }
}
