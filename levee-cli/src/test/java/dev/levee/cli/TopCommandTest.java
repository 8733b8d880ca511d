package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import dev.levee.runtime.Json;
import java.net.URI;
import org.junit.jupiter.api.Test;

/** {@code levee top}'s table (issue 14 item 2) and the statistics' flags as users type them. */
class TopCommandTest {

    static final String ANSWER = """
            {"membershipRevision": 12, "factor": 4, "answered": 3, "configRevisions": [41],
             "limiters": [{"id": "l1", "address": "10.0.0.1:7100", "answered": true, "revision": 41},
                          {"id": "l2", "address": "10.0.0.2:7100", "answered": true, "revision": 41},
                          {"id": "l3", "address": "10.0.0.3:7100", "answered": true, "revision": 41},
                          {"id": "l4", "address": "10.0.0.4:7100", "answered": false, "error": "timeout"}],
             "windows": [{"seconds": 10, "coveredSeconds": 10, "offered": 5000, "refused": 1500, "wouldReject": 0,
                          "endSecondMin": 7, "endSecondMax": 7, "rows": [
               {"resource": "example-bucket", "level": "prefix", "prefix": "uploads/*", "operation": null,
                "offered": 2000, "admitted": 1000, "refused": 1000, "wouldReject": 0, "maxError": 0,
                "offeredPerS": 200, "admittedPerS": 100, "refusedPerS": 100, "wouldRejectPerS": 0, "limiters": 4},
               {"resource": "example-bucket", "level": "prefix_method", "prefix": "", "operation": "PutObject",
                "offered": 3000, "admitted": 2500, "refused": 500, "wouldReject": 0, "maxError": 0,
                "offeredPerS": 300, "admittedPerS": 250, "refusedPerS": 50, "wouldRejectPerS": 0, "limiters": 2},
               {"resource": "a-bucket-with-a-very-long-name-indeed-0123456789", "level": "default",
                "offered": 10, "admitted": 10, "refused": 0, "wouldReject": 0, "maxError": 0,
                "offeredPerS": 1, "admittedPerS": 1, "refusedPerS": 0, "wouldRejectPerS": 0, "limiters": 1}]}]}
            """;

    static String render(TopCommand.Sort sort) throws Exception {
        JsonNode stats = Json.MAPPER.readTree(ANSWER);
        return TopCommand.render(stats, URI.create("http://127.0.0.1:7000/v1/stats"), sort, 10, 20);
    }

    @Test
    void theTableNamesEachEntryWithItsRatesAndFitsEightyColumns() throws Exception {
        String t = render(TopCommand.Sort.offered);
        System.out.print(t);
        assertThat(t.lines().toList()).allSatisfy(l -> assertThat(l.length()).as(l).isLessThanOrEqualTo(80));
        assertThat(t.lines().findFirst().orElseThrow())
                .isEqualTo("127.0.0.1:7000  limiters 3/4 answered (rev 12)  config rev 41  window 10s");
        assertThat(t).contains("not answering: l4 (timeout)");
        assertThat(t).contains("example-bucket \"\" PutObject       300.0    250.0     50.0  16.7%      0.0   2");
        assertThat(t).contains("example-bucket \"uploads/*\"        200.0    100.0    100.0  50.0%      0.0   4");
        assertThat(t).contains("a-bucket-with-a-very-long-nam~");
        assertThat(t).contains("all entries: offered 500.0/s, refused 150.0/s (30.0%), shadow 0.0/s, over 10s");
        assertThat(t.indexOf("PutObject")).isLessThan(t.indexOf("uploads/*"));
    }

    @Test
    void sortsByTheChosenColumn() throws Exception {
        String byShare = render(TopCommand.Sort.share);
        assertThat(byShare.indexOf("uploads/*")).isLessThan(byShare.indexOf("PutObject"));
        String byRefused = render(TopCommand.Sort.refused);
        assertThat(byRefused.indexOf("uploads/*")).isLessThan(byRefused.indexOf("PutObject"));
        String byName = render(TopCommand.Sort.resource);
        assertThat(byName.indexOf("a-bucket")).isLessThan(byName.indexOf("PutObject"));
    }

    @Test
    void aWindowTheLimitersDoNotKeepIsNamed() throws Exception {
        String t = TopCommand.render(Json.MAPPER.readTree(ANSWER), URI.create("http://h:1/v1/stats"),
                TopCommand.Sort.offered, 60, 20);
        assertThat(t).contains("no 60s window; the limiters keep [10] s (--window)");
    }

    @Test
    void theObserverIsHostPortOrAnHttpUrl() {
        assertThat(TopCommand.statsUri("127.0.0.1:7000")).hasToString("http://127.0.0.1:7000/v1/stats");
        assertThat(TopCommand.statsUri("http://10.0.0.5:7000/")).hasToString("http://10.0.0.5:7000/v1/stats");
        assertThatThrownBy(() -> TopCommand.statsUri("https://h:1")).hasMessageContaining("only http://");
    }

    @Test
    void badFlagsAreRefusedWithOneClearLine() {
        MainTest.Run sort = MainTest.run("top", "--once", "--sort", "speed");
        assertThat(sort.status()).isEqualTo(2);
        assertThat(sort.err()).contains("--sort").contains("speed").doesNotContain("Exception");
        MainTest.Run observer = MainTest.run("top", "--once", "--observer", "nowhere");
        assertThat(observer.status()).isEqualTo(1);
        assertThat(observer.err()).contains("--observer").doesNotContain("Exception");
        MainTest.Run sketch = MainTest.run("limiter", "--id", "l1", "--stats-sketch-size", "1000");
        assertThat(sketch.status()).isEqualTo(1);
        assertThat(sketch.err()).contains("levee limiter: stats sketch size must be a power of two 16-65536, got 1000");
        MainTest.Run window = MainTest.run("limiter", "--id", "l1", "--stats-windows", "10s,1500ms");
        assertThat(window.status()).isEqualTo(1);
        assertThat(window.err()).contains("stats window must be whole seconds");
    }
}
