package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.levee.cli.Main;
import dev.levee.stack.LocalStack;
import dev.levee.runtime.Json;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * The Grafana dashboard ({@code packaging/grafana/levee.json}, issue 14 item 7) queries only metrics the services
 * export: every metric name in its PromQL expressions must appear in the {@code /metrics} of at least one running
 * service after some traffic — the observer, limiters, client and an enforcing gateway in this JVM
 * ({@link LocalStack}), and a governed {@code levee gateway} process sharing a site budget through etcd (the
 * {@code levee_gateway_bandwidth_*}, {@code levee_gateway_admission_*} and {@code levee_gateway_site_*} metrics).
 * A histogram or summary is queried by its exported series ({@code _bucket}, {@code _sum}, {@code _count},
 * {@code _max}), so a metric renamed in the code, or misspelled in the dashboard, fails the test.
 */
class GrafanaDashboardIT {

    static final Path DASHBOARD = Path.of("..", "packaging", "grafana", "levee.json").toAbsolutePath().normalize();
    static final Path DIR = Path.of("target", "it-logs", "grafana").toAbsolutePath();
    static final String KEY = "AKIADASHBOARD";
    static final String SECRET = "secret-of-the-dashboard-test";
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /** PromQL words that look like metric names: aggregations, keywords and the modifiers of vector matching. */
    static final Set<String> KEYWORDS = Set.of("by", "without", "on", "ignoring", "group_left", "group_right", "bool",
            "offset", "and", "or", "unless", "inf", "nan");

    @Test
    void everyMetricTheDashboardQueriesIsExportedByAService() throws Exception {
        Map<String, List<String>> queried = queriedMetrics(Json.MAPPER.readTree(Files.readString(DASHBOARD)));
        assertThat(queried).as("metric names found in the dashboard's expressions").hasSizeGreaterThan(30)
                .containsKeys("levee_limiter_decisions_total", "levee_client_results_total", "levee_observer_limiters",
                        "levee_config_rejected_updates_total", "levee_gateway_bandwidth_granted_bytes_total",
                        "levee_gateway_admission_in_flight", "levee_gateway_site_share_bytes_per_second");

        Set<String> exported = new TreeSet<>();
        Files.createDirectories(DIR);
        try (Stack stack = new Stack("""
                factor: 2
                default: {rate: 1000, burst: 100}
                resources:
                  dash-limited: {quota: {rate: 1, burst: 1}}
                """, new LocalStack.Settings(2, Duration.ofSeconds(2), Duration.ofMillis(300), Duration.ofMillis(300),
                true, dev.levee.gateway.GatewayOptions.OnFailure.ALLOW));
             Site site = Site.start(DIR, 1, 1, Map.of("dash", KEY), Map.of(KEY, SECRET),
                     (i, links) -> List.of("--etcd", links.endpoints(), "--gateway-id", "g" + i, "--lease-ttl", "5s",
                             "--renew-interval", "500ms", "--shutdown-deadline", "2s"))) {
            // request-rate limiting: accepted and rejected decisions through the enforcing gateway
            stack.direct.createBucket(b -> b.bucket("dash-free"));
            stack.direct.createBucket(b -> b.bucket("dash-limited"));
            int rejected = 0;
            for (int i = 0; i < 20; i++) {
                stack.gateway.putObject(b -> b.bucket("dash-free").key("k"), RequestBody.fromString("x"));
                try {
                    stack.gateway.getObject(b -> b.bucket("dash-limited").key("missing")).close();
                } catch (S3Exception e) {
                    rejected += e.statusCode() == 503 ? 1 : 0;
                }
            }
            assertThat(rejected).as("SlowDown answers for the 1/s bucket").isPositive();
            // bandwidth, admission and site shares: a site budget in etcd and a download through the governed gateway
            assertThat(Main.run("bandwidth", "set", "--download", "30MiB/s", "--etcd", site.etcd().endpoints())).isZero();
            site.backend().putRandom("dash", "blob", 1 << 20, 7);
            try (S3Client s3 = DemandClient.s3Client(site.gateway(0).endpoint(), KEY, SECRET, 2)) {
                org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(
                        () -> s3.getObjectAsBytes(b -> b.bucket("dash").key("blob")).asByteArray().length == 1 << 20);
            }
            var local = stack.stack;
            List<String> endpoints = new ArrayList<>(List.of(
                    "http://127.0.0.1:" + local.observer().port() + "/metrics",
                    "http://127.0.0.1:" + local.gateway().adminPort() + "/metrics"));
            local.limiters().forEach(l -> endpoints.add("http://" + l.address() + "/metrics"));
            for (String e : endpoints) {
                exported.addAll(names(get(e)));
            }
            exported.addAll(names(site.gateway(0).metrics()));
        }

        Map<String, List<String>> missing = new TreeMap<>();
        queried.forEach((name, panels) -> {
            if (!exported.contains(name)) {
                missing.put(name, panels);
            }
        });
        assertThat(missing).as("metrics the dashboard queries (→ its panels) that no service exports").isEmpty();
    }

    @Test
    void theExtractorFindsMetricNamesAndNothingElse() {
        assertThat(metricNames("sum by (result, le) (rate(levee_a_total{result!~\"accepted|levee_not_a_metric\"}"
                + "[$__rate_interval])) / ignoring(x) sum(levee_b_sum offset 5m) * on (instance) group_left max(levee_c)"
                + " > bool 0.5 and histogram_quantile(0.99, rate(levee_d_bucket[5m]))"))
                .containsExactlyInAnyOrder("levee_a_total", "levee_b_sum", "levee_c", "levee_d_bucket");
    }

    /** Metric name → titles of the panels querying it. */
    static Map<String, List<String>> queriedMetrics(JsonNode dashboard) {
        Map<String, List<String>> out = new TreeMap<>();
        List<JsonNode> panels = new ArrayList<>();
        dashboard.path("panels").forEach(p -> {
            panels.add(p);
            p.path("panels").forEach(panels::add); // collapsed rows hold their panels
        });
        for (JsonNode p : panels) {
            for (JsonNode t : p.path("targets")) {
                for (String name : metricNames(t.path("expr").asText())) {
                    out.computeIfAbsent(name, k -> new ArrayList<>()).add(p.path("title").asText());
                }
            }
        }
        return out;
    }

    private static final Pattern STRING = Pattern.compile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'");
    private static final Pattern MATCHERS = Pattern.compile("\\{[^}]*}|\\[[^]]*]");
    private static final Pattern GROUPING = Pattern.compile(
            "\\b(by|without|on|ignoring|group_left|group_right)\\s*\\([^)]*\\)");
    private static final Pattern WORD = Pattern.compile("(?<![\\w$.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\\s*\\()?");

    /** The metric names of one PromQL expression: identifiers that are not functions, keywords or label names. */
    static Set<String> metricNames(String expr) {
        String e = STRING.matcher(expr).replaceAll("\"\"");
        e = MATCHERS.matcher(e).replaceAll(" ");
        e = GROUPING.matcher(e).replaceAll(" ");
        e = e.replaceAll("\\$\\{?\\w+}?", " ");
        Set<String> names = new TreeSet<>();
        Matcher m = WORD.matcher(e);
        while (m.find()) {
            String w = m.group(1);
            if (m.group(2) == null && !KEYWORDS.contains(w.toLowerCase(java.util.Locale.ROOT)) && !w.matches("\\d.*")) {
                names.add(w);
            }
        }
        return names;
    }

    /** The metric names of a Prometheus text exposition ({@code name{labels} value} and {@code name value} lines). */
    static Set<String> names(String exposition) {
        Set<String> names = new TreeSet<>();
        for (String line : exposition.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int end = 0;
            while (end < line.length() && line.charAt(end) != '{' && line.charAt(end) != ' ') {
                end++;
            }
            names.add(line.substring(0, end));
        }
        return names;
    }

    static String get(String url) throws Exception {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(url).isEqualTo(200);
        return r.body();
    }
}
