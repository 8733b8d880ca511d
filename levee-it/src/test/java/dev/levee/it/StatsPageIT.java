package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.levee.client.ClientService;
import dev.levee.client.LeveeClient;
import dev.levee.config.QuotaConfigLoader;
import dev.levee.config.StaticQuotaSource;
import dev.levee.limiter.DecisionStats;
import dev.levee.limiter.LimiterService;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Json;
import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 14 item 3: the observer's live page in a real browser. The observer runs as its own process, started
 * as a user types it ({@code levee observer --ui …}); three limiters (statistics on, heartbeats to it) and a
 * levee-client in this JVM; paced traffic over three quotas through the client's {@code /v1/s3check}. Headless
 * Chromium (Debian's package) opens {@code /ui}: the table lists the three entries with non-zero rates and
 * refusals where the quota is exceeded, the membership and configuration revision are shown, clicking a
 * header sorts, the plots gain samples and their lines change between two looks seconds apart, and the page
 * raises no Content-Security-Policy violation; once the observer is stopped the page says it is unreachable and
 * keeps its rows. Screenshots are kept in {@code target/it-logs/ui/} ({@code stats-page.png}, live).
 *
 * <p>Skipped (JUnit assumption) when Chromium is not installed; {@code scripts/test} installs it.
 */
class StatsPageIT {

    static final Path DIR = Path.of("target", "it-logs", "ui");

    static final String QUOTAS = """
            factor: 2
            default: {rate: 1000000, burst: 100000}
            resources:
              photos: {quota: {rate: 30, burst: 3}}
              backups: {quota: {rate: 1000, burst: 100}}
              logs:
                prefixes:
                  - {prefix: "app/", quota: {rate: 20, burst: 2}}
            """;

    /** One stream of the load: bucket, key, offered checks per second, how the page names its entry. */
    record Stream(String bucket, String key, double rate, String entry) {
    }

    static final List<Stream> STREAMS = List.of(
            new Stream("photos", "k", 60, "photos"),           // twice its quota
            new Stream("backups", "k", 40, "backups"),         // well below its quota
            new Stream("logs", "app/k", 40, "logs \"app/\"")); // twice its quota

    Vertx vertx;
    RoleProcess observer;
    int observerPort;
    final List<LimiterService> limiters = new ArrayList<>();
    LeveeClient client;
    ClientService endpoint;
    final AtomicBoolean running = new AtomicBoolean(true);
    CountDownLatch senders;

    static <T> T done(Future<T> f) throws Exception {
        return f.await(60, TimeUnit.SECONDS);
    }

    @BeforeEach
    void start() throws Exception {
        Assumptions.assumeTrue(Chromium.find().isPresent(), "Chromium is not installed (apt-get install -y chromium;"
                + " scripts/test installs it, or set LEVEE_CHROMIUM): the live page is tested in a real browser");
        Logging.configure(new LogTarget("file", null, 0, Stack.LOG.toAbsolutePath()), "levee-it", "INFO");
        Files.createDirectories(DIR);
        Path quotas = DIR.resolve("quotas.yaml");
        Files.writeString(quotas, QUOTAS);
        observerPort = RoleProcess.freePort();
        observer = RoleProcess.start(DIR, "observer", List.of("observer", "--ui", "--listen", "127.0.0.1:" + observerPort,
                "--ttl", "5s", "--quotas", quotas.toAbsolutePath().toString()));
        observer.awaitOutput("live page at http://127.0.0.1:" + observerPort + "/ui/", Duration.ofSeconds(60));

        vertx = Vertx.vertx();
        DecisionStats.Options stats = new DecisionStats.Options(true, 20,
                List.of(Duration.ofSeconds(5), Duration.ofSeconds(60)), 1024);
        HostPort obs = new HostPort("127.0.0.1", observerPort);
        for (String id : List.of("ui-1", "ui-2", "ui-3")) {
            limiters.add(done(LimiterService.start(vertx, new LimiterService.Options(id, new HostPort("127.0.0.1", 0),
                            null, obs, Duration.ofMillis(500), 10_000),
                    new StaticQuotaSource(QuotaConfigLoader.parse(QUOTAS, "test quotas")), SystemTicker.INSTANCE,
                    Metrics.newRegistry(), stats)));
        }
        // generous check timeout and deadline: Chromium starting on a shared 2-core machine stalls this JVM; the
        // checks are the page's traffic, not what is tested here
        client = done(LeveeClient.start(vertx, LeveeClient.Options.builder(obs).refresh(Duration.ofMillis(500))
                .checkTimeout(Duration.ofSeconds(2)).backoff(Duration.ofSeconds(1))
                .checkDeadline(Duration.ofSeconds(5)).build(),
                SystemTicker.INSTANCE, Metrics.newRegistry()));
        await("the client sees the three limiters").atMost(Duration.ofSeconds(30))
                .until(() -> client.view().limiters().size() == 3);
        endpoint = done(ClientService.start(vertx, new HostPort("127.0.0.1", 0), client, Metrics.newRegistry()));
    }

    @AfterEach
    void stop() throws Exception {
        running.set(false);
        if (senders != null) {
            senders.await(30, TimeUnit.SECONDS);
        }
        if (endpoint != null) {
            done(endpoint.stop());
        }
        if (client != null) {
            done(client.stop());
        }
        for (LimiterService l : limiters) {
            done(l.stop());
        }
        if (vertx != null) {
            vertx.close().await(20, TimeUnit.SECONDS);
        }
        if (observer != null) {
            observer.close();
        }
    }

    /** Paced senders, two per stream; counts answers that are neither 200 nor 429, by kind. */
    Map<String, Integer> load() {
        Map<String, Integer> other = new java.util.concurrent.ConcurrentHashMap<>();
        senders = new CountDownLatch(STREAMS.size() * 2);
        long start = System.nanoTime();
        for (Stream s : STREAMS) {
            long periodNs = (long) (2e9 / s.rate());
            for (int c = 0; c < 2; c++) {
                long offset = c * periodNs / 2;
                Thread.ofVirtual().start(() -> {
                    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                            .connectTimeout(Duration.ofSeconds(5)).build();
                    try {
                        for (long i = 0; running.get(); i++) {
                            long wait = start + offset + i * periodNs - System.nanoTime();
                            if (wait < -periodNs) { // stalled (a shared machine): skip the missed sends, no burst
                                i = (System.nanoTime() - start - offset) / periodNs + 1;
                                wait = start + offset + i * periodNs - System.nanoTime();
                            }
                            if (wait > 0) {
                                Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                            }
                            HttpRequest r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + endpoint.port()
                                            + "/v1/s3check"))
                                    .header("X-Levee-Method", "GET").header("X-Levee-Host", "127.0.0.1")
                                    .header("X-Levee-Uri", "/" + s.bucket() + "/" + s.key())
                                    .timeout(Duration.ofSeconds(5)).build();
                            try {
                                int status = http.send(r, HttpResponse.BodyHandlers.discarding()).statusCode();
                                if (status != 200 && status != 429) {
                                    other.merge("HTTP " + status, 1, Integer::sum);
                                }
                            } catch (java.io.IOException e) {
                                other.merge(e.getClass().getSimpleName(), 1, Integer::sum);
                            }
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } finally {
                        http.close();
                        senders.countDown();
                    }
                });
            }
        }
        return other;
    }

    /** The rows of the page's table: entry → {field → value} (numbers as the page's data-value). */
    static Map<String, Map<String, Double>> rows(Chromium page) throws Exception {
        JsonNode rows = page.eval("""
                [...document.querySelectorAll('#stats tbody tr')].map(tr => ({entry: tr.dataset.entry,
                  cells: Object.fromEntries([...tr.querySelectorAll('td[data-value]')]
                    .map(td => [td.dataset.field, Number(td.dataset.value)]))}))""");
        Map<String, Map<String, Double>> out = new java.util.LinkedHashMap<>();
        for (JsonNode r : rows) {
            Map<String, Double> cells = new HashMap<>();
            r.path("cells").properties().forEach(e -> cells.put(e.getKey(), e.getValue().asDouble()));
            out.put(r.path("entry").asText(), cells);
        }
        return out;
    }

    /** The plot of each entry: samples held, last offered rate, and the drawn offered line. */
    record Plot(int samples, double lastOffered, String offeredLine) {
    }

    /** What each plot holds at a look: samples from the server's history, and the seconds its samples span. */
    record Held(int serverSamples, int seconds, int polls) {
    }

    static Map<String, Held> held(Chromium page) throws Exception {
        JsonNode plots = page.eval("""
                [...document.querySelectorAll('#plots .plot')].map(p => ({entry: p.dataset.entry,
                  server: Number(p.dataset.serverSamples), seconds: Number(p.dataset.seconds),
                  polls: Number(document.getElementById('plots').dataset.polls)}))""");
        Map<String, Held> out = new HashMap<>();
        for (JsonNode p : plots) {
            out.put(p.path("entry").asText(), new Held(p.path("server").asInt(), p.path("seconds").asInt(),
                    p.path("polls").asInt()));
        }
        return out;
    }

    /**
     * Issue 26 item 3: an operator who opens the page during an incident sees the last minute at once. After
     * 20 s of traffic the page, at its first poll, plots each entry from the limiters' per-second history
     * ({@code GET /v1/stats/history} through the observer), not only from the polls it made.
     */
    @Test
    void atFirstLoadThePlotsShowTheServersHistory() throws Exception {
        Map<String, Integer> other = load();
        HttpClient http = HttpClient.newHttpClient();
        await("the observer's history holds 20 s of the three entries").atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(500)).until(() -> {
                    JsonNode h = Json.MAPPER.readTree(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                            + observerPort + "/v1/stats/history")).build(), HttpResponse.BodyHandlers.ofByteArray()).body());
                    return h.path("answered").asInt() == 3 && h.path("seconds").asInt() >= 20
                            && h.path("rows").size() >= STREAMS.size();
                });
        Path binary = Chromium.find().orElseThrow();
        Path profile = Files.createTempDirectory("levee-chromium-");
        try (Chromium page = Chromium.start(binary, profile, DIR.resolve("chromium-history.out"), 1280, 1200)) {
            try {
                page.open("http://127.0.0.1:" + observerPort + "/ui/");
                await("the first plots").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
                        .until(() -> held(page).keySet().containsAll(STREAMS.stream().map(Stream::entry).toList()));
                Map<String, Held> first = held(page);
                for (Stream s : STREAMS) {
                    Held h = first.get(s.entry());
                    assertThat(h.polls()).as("polls made when first looked at").isLessThanOrEqualTo(3);
                    assertThat(h.serverSamples()).as(s.entry() + ": samples from the server's history").isGreaterThanOrEqualTo(18);
                    assertThat(h.seconds()).as(s.entry() + ": seconds the plot spans at first load").isGreaterThanOrEqualTo(18);
                }
                assertThat(plots(page).get("photos").offeredLine().split("L").length).as("points drawn at first load")
                        .isGreaterThanOrEqualTo(18);
                assertThat(page.eval("document.querySelector('#plots .plot svg').getAttribute('width')").asInt())
                        .as("a plot's width at first draw (1280 px window, three plots a row)").isGreaterThan(300);
                page.screenshot(DIR.resolve("stats-page-first-load.png"));
            } catch (Exception | Error e) {
                page.screenshot(DIR.resolve("stats-page-first-load-failure.png"));
                throw e;
            }
        } finally {
            try (java.util.stream.Stream<Path> files = Files.walk(profile)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
        assertThat(other).as("checks that failed, by kind").isEmpty();
    }

    static Map<String, Plot> plots(Chromium page) throws Exception {
        JsonNode plots = page.eval("""
                [...document.querySelectorAll('#plots .plot')].map(p => ({entry: p.dataset.entry,
                  samples: Number(p.dataset.samples), last: Number(p.dataset.lastOffered),
                  line: (p.querySelector('path[data-series=offered]') || {getAttribute: () => ''}).getAttribute('d')}))""");
        Map<String, Plot> out = new HashMap<>();
        for (JsonNode p : plots) {
            out.put(p.path("entry").asText(), new Plot(p.path("samples").asInt(), p.path("last").asDouble(),
                    p.path("line").asText()));
        }
        return out;
    }

    @Test
    void thePageShowsTheHotResourcesTheMembershipAndPlotsThatMoveInChromium() throws Exception {
        Map<String, Integer> other = load();
        HttpClient http = HttpClient.newHttpClient();
        await("the observer's /v1/stats lists the three entries").atMost(Duration.ofSeconds(30))
                .pollInterval(Duration.ofMillis(500)).until(() -> {
                    JsonNode s = Json.MAPPER.readTree(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                            + observerPort + "/v1/stats")).build(), HttpResponse.BodyHandlers.ofByteArray()).body());
                    JsonNode w = s.path("windows").path(0);
                    return s.path("answered").asInt() == 3 && w.path("rows").size() >= STREAMS.size();
                });

        Path binary = Chromium.find().orElseThrow();
        Path profile = Files.createTempDirectory("levee-chromium-");
        try (Chromium page = Chromium.start(binary, profile, DIR.resolve("chromium.out"), 1280, 1200)) {
            page.beforeEachDocument("window.__csp = []; document.addEventListener('securitypolicyviolation',"
                    + " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));");
            try {
                page.open("http://127.0.0.1:" + observerPort + "/ui"); // redirected to /ui/
                assertThat(page.eval("location.pathname").asText()).isEqualTo("/ui/");

                await("the table lists the three entries with traffic").atMost(Duration.ofSeconds(30))
                        .pollInterval(Duration.ofMillis(250)).untilAsserted(() -> {
                            Map<String, Map<String, Double>> rows = rows(page);
                            for (Stream s : STREAMS) {
                                assertThat(rows).as("rows of the page").containsKey(s.entry());
                                assertThat(rows.get(s.entry()).get("offered")).as(s.entry() + " offered/s").isPositive();
                                assertThat(rows.get(s.entry()).get("admitted")).as(s.entry() + " admitted/s").isPositive();
                            }
                            assertThat(rows.get("photos").get("refused")).as("photos refused/s").isPositive();
                            assertThat(rows.get("logs \"app/\"").get("refused")).as("logs refused/s").isPositive();
                            assertThat(rows.get("backups").get("refused")).as("backups refused/s").isZero();
                            assertThat(rows.get("photos").get("limiters")).as("limiters of its group").isEqualTo(2.0);
                        });

                assertThat(page.eval("document.getElementById('membership').textContent").asText())
                        .contains("3/3 limiters answered").contains("factor 2");
                assertThat(page.eval("document.getElementById('config-revision').textContent").asText())
                        .matches("\\d+");
                assertThat(page.eval("document.querySelectorAll('#limiters tbody tr').length").asInt()).isEqualTo(3);
                assertThat(page.eval("document.getElementById('status').dataset.state").asText()).isEqualTo("live");

                page.eval("document.querySelector('#stats th[data-sort=refused]').click()");
                List<Double> refused = rows(page).values().stream().map(r -> r.get("refused")).toList();
                assertThat(refused).as("rows after a click on refused/s").isSortedAccordingTo((a, b) -> Double.compare(b, a));
                page.eval("document.querySelector('#stats th[data-sort=offered]').click()");

                Map<String, Plot> before = plots(page);
                assertThat(before.keySet()).as("plots").containsAll(STREAMS.stream().map(Stream::entry).toList());
                await("the plots gain three samples").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(500))
                        .until(() -> {
                            Map<String, Plot> now = plots(page);
                            return STREAMS.stream().allMatch(s -> now.containsKey(s.entry())
                                    && now.get(s.entry()).samples() >= before.get(s.entry()).samples() + 3);
                        });
                Map<String, Plot> after = plots(page);
                for (Stream s : STREAMS) {
                    Plot b = before.get(s.entry());
                    Plot a = after.get(s.entry());
                    assertThat(a.offeredLine()).as(s.entry() + " offered line moved").isNotEqualTo(b.offeredLine());
                    assertThat(a.offeredLine().split("L").length).as(s.entry() + " points drawn")
                            .isGreaterThan(b.offeredLine().split("L").length);
                    assertThat(a.lastOffered()).as(s.entry() + " last offered/s").isPositive();
                }
                assertThat(page.eval("window.__csp").toString()).as("Content-Security-Policy violations").isEqualTo("[]");
                page.screenshot(DIR.resolve("stats-page.png"));

                observer.close(); // the observer goes away: the page says so and keeps what it showed
                await("the page says the observer is unreachable").atMost(Duration.ofSeconds(20))
                        .pollInterval(Duration.ofMillis(250))
                        .until(() -> page.eval("document.getElementById('status').dataset.state").asText().equals("error"));
                assertThat(page.eval("document.getElementById('status').textContent").asText())
                        .startsWith("observer unreachable:").contains("retrying every second");
                assertThat(rows(page).keySet()).as("rows kept while the observer is away")
                        .containsAll(STREAMS.stream().map(Stream::entry).toList());
                page.screenshot(DIR.resolve("stats-page-observer-down.png"));
            } catch (Exception | Error e) {
                page.screenshot(DIR.resolve("stats-page-failure.png"));
                throw e;
            }
        } finally {
            try (java.util.stream.Stream<Path> files = Files.walk(profile)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
        assertThat(other).as("checks that failed, by kind").isEmpty();
    }
}
