package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.levee.cli.Main;
import dev.levee.client.ClientDecision;
import dev.levee.client.LeveeClient;
import dev.levee.config.QuotaConfigLoader;
import dev.levee.config.StaticQuotaSource;
import dev.levee.s3.S3Operation;
import dev.levee.limiter.LimiterService;
import dev.levee.core.Member;
import dev.levee.core.MembershipView;
import dev.levee.observer.ObserverService;
import dev.levee.quota.QuotaConfig;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Json;
import dev.levee.runtime.LogTarget;
import dev.levee.runtime.LogText;
import dev.levee.runtime.Logging;
import dev.levee.runtime.Metrics;
import dev.levee.runtime.SystemTicker;
import dev.levee.s3.S3Request;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code levee quota explain} agrees with what real limiters decide (issue 14, item 6), for every row of the
 * project's classification and resolution tables: {@code classification*.csv} in levee-s3's and
 * {@code resolution*.csv} in levee-quota's test resources (the files S3ClassifierTest and QuotaResolutionTest
 * read; a table added beside them is taken too).
 *
 * <p>Per configuration of the tables (resolution-config-&lt;cfg&gt;.yaml), one cluster in this JVM: six limiters
 * loaded with that file, an observer serving them with the file's factor, and a real {@link LeveeClient}. Per
 * row, explain runs through the command line ({@link Main#run}, {@code --json}, membership from the observer)
 * and the same request goes through the client {@code g} times in a row — the client's round-robin then asks
 * every member of its group once — and each time the check's answer and the limiter's decision log line
 * ({@code levee.limiter.decision}, read back from the log file) must match explain: classification, level,
 * limit key, rate, burst, {@code g}; and the limiters that decided must be exactly explain's group. A row of
 * the resolution table that no S3 request produces (PutObject on a bucket) is checked as the limiter receives
 * it: explain {@code --resource/--key/--operation}, and a check posted to each member of the client's group.
 * Resolution rows are also checked against the table's own expectations, which ties the YAML files to the
 * Java fixtures of QuotaResolutionTest.
 */
class QuotaExplainIT {

    static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    static final Path S3_TABLES = ROOT.resolve("levee-s3/src/test/resources/dev/levee/s3");
    static final Path QUOTA_TABLES = ROOT.resolve("levee-quota/src/test/resources/dev/levee/quota");
    /** The base domains of S3ClassifierTest's classifier. */
    static final String BASE_DOMAINS = "s3.example.com,example.com,S3.EU.Example.Net.";
    static final int LIMITERS = 6;
    static final Path LOG = Path.of("target", "it-logs", "quota-explain.log").toAbsolutePath();

    static Vertx vertx;
    static final Map<String, Cluster> clusters = new HashMap<>();
    static long logOffset;

    /** The limiters of one configuration, their observer and a client. */
    record Cluster(Path quotas, QuotaConfig config, List<LimiterService> limiters, ObserverService observer,
                   LeveeClient client) {
        String observerAddress() {
            return "127.0.0.1:" + observer.port();
        }
    }

    @BeforeAll
    static void start() throws IOException {
        Files.createDirectories(LOG.getParent());
        Files.deleteIfExists(LOG);
        Logging.configure(new LogTarget("file", null, 0, LOG), "levee-it", "INFO");
        vertx = Vertx.vertx();
    }

    @AfterAll
    static void stop() throws Exception {
        for (Cluster c : clusters.values()) {
            done(c.client().stop());
            done(c.observer().stop());
            for (LimiterService l : c.limiters()) {
                done(l.stop());
            }
        }
        vertx.close().await(20, TimeUnit.SECONDS);
    }

    static <T> T done(Future<T> f) throws Exception {
        return f.await(15, TimeUnit.SECONDS);
    }

    static Cluster cluster(String cfg) throws Exception {
        Cluster c = clusters.get(cfg);
        if (c != null) {
            return c;
        }
        Path quotas = QUOTA_TABLES.resolve("resolution-config-" + cfg + ".yaml");
        QuotaConfig config = QuotaConfigLoader.load(quotas);
        List<LimiterService> limiters = new ArrayList<>();
        List<Member> members = new ArrayList<>();
        for (int i = 1; i <= LIMITERS; i++) {
            LimiterService l = done(LimiterService.start(vertx, new LimiterService.Options(cfg + "-limiter-" + i,
                    new HostPort("127.0.0.1", 0), null, null, Duration.ofSeconds(1), 100_000),
                    new StaticQuotaSource(config), SystemTicker.INSTANCE, Metrics.newRegistry()));
            limiters.add(l);
            members.add(new Member(l.id(), l.address().toString()));
        }
        MembershipView view = new MembershipView(1, config.factor(), members);
        ObserverService observer = done(ObserverService.start(vertx, new HostPort("127.0.0.1", 0), () -> view,
                () -> true, Metrics.newRegistry()));
        LeveeClient client = done(LeveeClient.start(vertx,
                LeveeClient.Options.builder(new HostPort("127.0.0.1", observer.port())).refresh(Duration.ofSeconds(1))
                        .checkTimeout(Duration.ofSeconds(2)).backoff(Duration.ofSeconds(2))
                        .baseDomains(List.of(BASE_DOMAINS.split(","))).build(),
                SystemTicker.INSTANCE, Metrics.newRegistry()));
        Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> client.view().limiters().size() == LIMITERS);
        c = new Cluster(quotas, config, limiters, observer, client);
        clusters.put(cfg, c);
        return c;
    }

    // ---- the tables ----

    /**
     * Reads every row of the {@code prefix*.csv} tables in a directory as JUnit's {@code @CsvFileSource} does
     * with {@code quoteCharacter = '\''}: cells trimmed, {@code 'text'} → text, an empty cell or {@code nullValue}
     * → null.
     */
    static List<String[]> rows(Path dir, String prefix, String nullValue) throws IOException {
        List<String[]> rows = new ArrayList<>();
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.filter(p -> p.getFileName().toString().startsWith(prefix) && p.toString().endsWith(".csv"))
                    .sorted().toList();
        }
        assertThat(files).as("tables %s*.csv in %s", prefix, dir).isNotEmpty();
        for (Path f : files) {
            for (String line : Files.readAllLines(f, StandardCharsets.UTF_8)) {
                if (line.isBlank() || line.stripLeading().startsWith("#")) {
                    continue;
                }
                String[] cells = line.split("\\|", -1);
                for (int i = 0; i < cells.length; i++) {
                    String t = cells[i].strip();
                    cells[i] = t.isEmpty() || t.equals(nullValue) ? null
                            : t.length() >= 2 && t.startsWith("'") && t.endsWith("'")
                            ? t.substring(1, t.length() - 1).replace("''", "'") : t;
                }
                rows.add(cells);
            }
        }
        return rows;
    }

    @Test
    void explainAgreesWithTheLimitersOnEveryClassificationRow() throws Exception {
        Cluster a = cluster("A");
        List<String[]> rows = rows(S3_TABLES, "classification", null);
        assertThat(rows).hasSizeGreaterThan(150);
        int refusedAsMistakes = 0;
        for (String[] r : rows) {
            String method = r[0];
            String host = r[1];
            String uri = r[2] == null ? "" : r[2];
            String copy = r[3];
            String what = String.join(" | ", Stream.of(r).map(String::valueOf).toList());
            List<String> args = new ArrayList<>(List.of("quota", "explain", "--json", "--quotas=" + a.quotas(),
                    "--observer=" + a.observerAddress(), "--base-domain=" + BASE_DOMAINS, "--method=" + method,
                    "--uri=" + uri));
            if (host != null) {
                args.add("--host=" + host);
            }
            if (copy != null) {
                args.add("--copy-source=" + copy);
            }
            // strict first: it either explains the same, or refuses with one error line and one hint line
            Run strict = run(args);
            args.add("--raw");
            Run raw = run(args);
            assertThat(raw.status()).as("%s: %s", what, raw.err()).isZero();
            JsonNode x = Json.MAPPER.readTree(raw.out());
            if (strict.status() == 0) {
                assertThat(Json.MAPPER.readTree(strict.out())).as(what).isEqualTo(x);
            } else {
                refusedAsMistakes++;
                assertRefusedWithHint(strict, what);
                // NGINX passes no request-target that is not in origin or absolute form, or holds a raw space
                boolean originOrAbsolute = (uri.startsWith("/") || uri.regionMatches(true, 0, "http", 0, 4))
                        && uri.chars().noneMatch(ch -> Character.isWhitespace(ch) || Character.isISOControl(ch));
                assertThat(x.at("/classification/operation").asText().equals("Unknown")
                        || x.at("/classification/resource").asText().isEmpty() || !originOrAbsolute)
                        .as("only requests counted as Unknown, naming no bucket or with a request-target NGINX never"
                                + " passes are refused: %s", what).isTrue();
            }
            assertThat(x.at("/classification/resource").asText()).as(what).isEqualTo(r[4]);
            assertThat(x.at("/classification/key").asText()).as(what).isEqualTo(r[5]);
            assertThat(x.at("/classification/operation").asText()).as(what).isEqualTo(r[6]);
            compareWithClient(a, x, S3Request.fromRequestUri(method, host, uri, copy), what);
        }
        assertThat(refusedAsMistakes).as("rows strict explain refuses (odd methods, bad escapes, no bucket)")
                .isBetween(5, rows.size() / 3);
    }

    @Test
    void explainAgreesWithTheLimitersOnEveryResolutionRow() throws Exception {
        List<String[]> rows = rows(QUOTA_TABLES, "resolution", "-");
        assertThat(rows).hasSizeGreaterThan(50);
        int asRequests = 0;
        for (String[] r : rows) {
            Cluster c = cluster(r[0]);
            String what = String.join(" | ", Stream.of(r).map(String::valueOf).toList());
            String resource = r[1];
            String key = r[2];
            S3Operation op = S3Operation.valueOf(r[3]);
            Run byHand = run("quota", "explain", "--json", "--quotas=" + c.quotas(), "--observer=" + c.observerAddress(),
                    "--resource=" + resource, "--key=" + key, "--operation=" + op);
            assertThat(byHand.status()).as("%s: %s", what, byHand.err()).isZero();
            JsonNode x = Json.MAPPER.readTree(byHand.out());
            // the table's own expectations (QuotaFixtures in Java = resolution-config-*.yaml)
            String[] rateBurst = r[5].split("/");
            assertThat(x.at("/match/level").asText()).as(what).isEqualTo(r[4].toLowerCase(java.util.Locale.ROOT));
            assertThat(x.at("/quota/rate").asDouble()).as(what).isEqualTo(Double.parseDouble(rateBurst[0]));
            assertThat(x.at("/quota/burst").asInt()).as(what).isEqualTo(Integer.parseInt(rateBurst[1]));
            assertThat(x.at("/limitKey").asText()).as(what).isEqualTo(r[6]);
            assertThat(x.at("/match/prefix").isNull() ? null : x.at("/match/prefix").asText()).as(what).isEqualTo(r[7]);
            assertThat(x.at("/match/operation").isNull() ? null : x.at("/match/operation").asText()).as(what)
                    .isEqualTo(r[8]);
            // membership by hand gives the same group as the observer's
            List<String> ids = c.limiters().stream().map(LimiterService::id).toList();
            Run hand = run("quota", "explain", "--json", "--quotas=" + c.quotas(), "--limiters=" + String.join(",", ids),
                    "--resource=" + resource, "--key=" + key, "--operation=" + op);
            assertThat(groupIds(Json.MAPPER.readTree(hand.out()))).as(what).isEqualTo(groupIds(x));
            // as the limiter receives it: a check to each member of the client's own group
            compareWithLimiters(c, x, resource, key, op, what);
            // and, where an S3 request has this classification, that request through explain and the client
            String[] req = requestFor(resource, key, op);
            if (req != null) {
                asRequests++;
                Run asRequest = run("quota", "explain", "--json", "--quotas=" + c.quotas(),
                        "--observer=" + c.observerAddress(), "--method=" + req[0], "--uri=" + req[1]);
                assertThat(asRequest.status()).as("%s as %s %s: %s", what, req[0], req[1], asRequest.err()).isZero();
                JsonNode y = Json.MAPPER.readTree(asRequest.out());
                for (String field : List.of("/classification", "/match", "/limitKey", "/quota", "/g", "/perLimiter", "/group")) {
                    assertThat(y.at(field)).as("%s as %s %s: %s", what, req[0], req[1], field).isEqualTo(x.at(field));
                }
                compareWithClient(c, y, S3Request.fromRequestUri(req[0], null, req[1], null), what);
            }
        }
        assertThat(asRequests).as("resolution rows also checked as S3 requests").isGreaterThan(rows.size() / 2);
    }

    /** An S3 request that classifies as (resource, key, op) path-style, or null when none does. */
    static String[] requestFor(String resource, String key, S3Operation op) {
        if (resource.isEmpty()) {
            return key.isEmpty() && op == S3Operation.ListBuckets ? new String[] {"GET", "/"} : null;
        }
        String bucket = "/" + encode(resource);
        if (key.isEmpty()) {
            return switch (op) {
                case ListObjects -> new String[] {"GET", bucket};
                case ListObjectsV2 -> new String[] {"GET", bucket + "?list-type=2"};
                case ListObjectVersions -> new String[] {"GET", bucket + "?versions"};
                case HeadBucket -> new String[] {"HEAD", bucket};
                case DeleteObjects -> new String[] {"POST", bucket + "?delete"};
                case CreateBucket -> new String[] {"PUT", bucket};
                default -> null;
            };
        }
        String object = bucket + "/" + encode(key);
        return switch (op) {
            case GetObject -> new String[] {"GET", object};
            case PutObject -> new String[] {"PUT", object};
            case HeadObject -> new String[] {"HEAD", object};
            case DeleteObject -> new String[] {"DELETE", object};
            default -> null;
        };
    }

    static String encode(String s) {
        return java.net.URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20").replace("%2F", "/");
    }

    static List<String> groupIds(JsonNode x) {
        List<String> ids = new ArrayList<>();
        x.at("/group/limiters").forEach(m -> ids.add(m.path("id").asText()));
        return ids;
    }

    /**
     * Sends {@code request} through the real client {@code g} times and compares each answer and each decision
     * log line with explain's JSON {@code x}.
     */
    static void compareWithClient(Cluster c, JsonNode x, S3Request request, String what) throws Exception {
        int g = x.at("/g").asInt();
        List<String> group = groupIds(x);
        assertThat(group).as(what).hasSize(g);
        Map<String, String> addressOf = new HashMap<>();
        x.at("/group/limiters").forEach(m -> addressOf.put(m.path("address").asText(), m.path("id").asText()));
        Set<String> answeredBy = new TreeSet<>();
        for (int i = 0; i < g; i++) {
            ClientDecision d = c.client().check(request).await(10, TimeUnit.SECONDS);
            assertThat(d.result()).as(what).isIn(ClientDecision.Result.ACCEPTED, ClientDecision.Result.REJECTED);
            assertThat(d.classification().resource()).as(what).isEqualTo(x.at("/classification/resource").asText());
            assertThat(d.classification().key()).as(what).isEqualTo(x.at("/classification/key").asText());
            assertThat(d.classification().operation().name()).as(what).isEqualTo(x.at("/classification/operation").asText());
            assertThat(d.level()).as(what).isEqualTo(x.at("/match/level").asText());
            assertThat(d.limitKey()).as(what).isEqualTo(x.at("/limitKey").asText());
            assertThat(addressOf).as("%s: answered by %s", what, d.limiter()).containsKey(d.limiter());
            answeredBy.add(addressOf.get(d.limiter()));
        }
        assertThat(answeredBy).as("%s: the client's round-robin over its group", what).containsExactlyInAnyOrderElementsOf(group);
        compareWithDecisionLog(x, g, what);
    }

    /** Posts the classified check to each member of the client's group, as the client would send it. */
    static void compareWithLimiters(Cluster c, JsonNode x, String resource, String key, S3Operation op, String what)
            throws Exception {
        List<LeveeClient.Member> group = c.client().group(resource);
        assertThat(group.stream().map(LeveeClient.Member::id).toList()).as("%s: the client's HRW group", what)
                .isEqualTo(groupIds(x));
        int g = group.size();
        assertThat(x.at("/g").asInt()).as(what).isEqualTo(g);
        String body = Json.MAPPER.writeValueAsString(Map.of("resource", resource, "key", key, "operation", op.name(),
                "g", g));
        for (LeveeClient.Member m : group) {
            HttpResponse<String> resp = HTTP.send(HttpRequest.newBuilder(URI.create("http://" + m.address() + "/v1/check"))
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(resp.statusCode()).as("%s: %s", what, resp.body()).isIn(200, 429);
            JsonNode answer = Json.MAPPER.readTree(resp.body());
            assertThat(answer.path("level").asText()).as(what).isEqualTo(x.at("/match/level").asText());
            assertThat(answer.path("limitKey").asText()).as(what).isEqualTo(x.at("/limitKey").asText());
            assertThat(answer.path("rate").asDouble()).as(what).isEqualTo(x.at("/quota/rate").asDouble());
            assertThat(answer.path("burst").asInt()).as(what).isEqualTo(x.at("/quota/burst").asInt());
            assertThat(answer.path("limiter").asText()).as(what).isEqualTo(m.id());
        }
        compareWithDecisionLog(x, g, what);
    }

    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /** Waits for the next {@code n} decision lines of the log and compares each with explain's JSON. */
    static void compareWithDecisionLog(JsonNode x, int n, String what) throws Exception {
        List<Map<String, String>> lines = new ArrayList<>();
        Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).until(() -> {
            lines.addAll(newDecisionLines());
            return lines.size() >= n;
        });
        assertThat(lines).as("%s: decision lines", what).hasSize(n);
        Set<String> ids = new TreeSet<>();
        for (Map<String, String> f : lines) {
            assertThat(f.get("resource")).as(what).isEqualTo(LogText.escape(x.at("/classification/resource").asText()));
            assertThat(f.get("key")).as(what).isEqualTo(LogText.escape(x.at("/classification/key").asText()));
            assertThat(f.get("op")).as(what).isEqualTo(x.at("/classification/operation").asText());
            assertThat(f.get("level")).as(what).isEqualTo(x.at("/match/level").asText());
            assertThat(f.get("limit_key")).as(what).isEqualTo(LogText.escape(x.at("/limitKey").asText()));
            assertThat(Double.parseDouble(f.get("rate"))).as(what).isEqualTo(x.at("/quota/rate").asDouble());
            assertThat(Integer.parseInt(f.get("burst"))).as(what).isEqualTo(x.at("/quota/burst").asInt());
            assertThat(Integer.parseInt(f.get("g"))).as(what).isEqualTo(x.at("/g").asInt());
            ids.add(f.get("limiter"));
        }
        assertThat(ids).as("%s: limiters that logged the decisions", what).containsExactlyInAnyOrderElementsOf(groupIds(x));
    }

    /** The decision lines appended to the log since the last call, each as its fields (values as logged). */
    static List<Map<String, String>> newDecisionLines() throws IOException {
        if (!Files.exists(LOG)) {
            return List.of();
        }
        byte[] all = Files.readAllBytes(LOG);
        int end = all.length;
        while (end > logOffset && all[end - 1] != '\n') {
            end--; // a line still being written is read next time
        }
        String text = new String(all, (int) logOffset, (int) (end - logOffset), StandardCharsets.UTF_8);
        List<Map<String, String>> out = new ArrayList<>();
        for (String line : text.split("\n")) {
            int at = line.indexOf(" decision result=");
            if (at >= 0) {
                out.add(fields(line.substring(at + " decision ".length())));
            }
        }
        logOffset = end;
        return out;
    }

    /** Splits {@code name=value name="quoted value" …} as LogText writes values. */
    static Map<String, String> fields(String s) {
        Map<String, String> f = new LinkedHashMap<>();
        int i = 0;
        while (i < s.length()) {
            int eq = s.indexOf('=', i);
            if (eq < 0) {
                break;
            }
            String name = s.substring(i, eq);
            int j = eq + 1;
            if (j < s.length() && s.charAt(j) == '"') {
                j++;
                while (j < s.length() && s.charAt(j) != '"') {
                    j += s.charAt(j) == '\\' ? 2 : 1;
                }
                j++;
            } else {
                while (j < s.length() && s.charAt(j) != ' ') {
                    j++;
                }
            }
            f.put(name, s.substring(eq + 1, Math.min(j, s.length())));
            i = j + 1;
        }
        return f;
    }

    // ---- the command line ----

    record Run(int status, String out, String err) {
    }

    static Run run(List<String> args) {
        return run(args.toArray(String[]::new));
    }

    static synchronized Run run(String... args) {
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            int status = Main.run(args);
            return new Run(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }

    static void assertRefusedWithHint(Run r, String what) {
        assertThat(r.status()).as("%s: %s", what, r.err()).isEqualTo(2);
        assertThat(r.out()).as(what).isEmpty();
        List<String> lines = r.err().lines().toList();
        assertThat(lines).as(what).hasSize(2);
        assertThat(lines.get(0)).as(what).startsWith("levee quota explain: ");
        assertThat(lines.get(1)).as(what).startsWith("hint: ");
        assertThat(r.err()).as(what).doesNotContain("Exception").doesNotContain("\tat ");
    }
}
