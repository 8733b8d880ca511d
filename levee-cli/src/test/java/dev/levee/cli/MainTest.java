package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The command line refuses bad input with one clear line and a non-zero status, never a stack trace. */
class MainTest {

    @TempDir
    Path dir;

    record Run(int status, String out, String err) {
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

    private Path write(String name, String text) throws Exception {
        Path p = dir.resolve(name);
        Files.writeString(p, text);
        return p;
    }

    @Test
    void validateAcceptsTheEmbeddedDefaults() throws Exception {
        Path p = write("ok.yaml", Quotas.embeddedText());
        Run r = run("config", "validate", p.toString());
        assertThat(r.status()).isZero();
        assertThat(r.out()).contains("OK").contains("factor 4");
        // issue 26 item 2: the defaults hold their rate, so nothing to warn of
        assertThat(r.out()).doesNotContain("warning");
    }

    /**
     * Issue 22 item 7: a burst that cannot hold its rate over DF limiters is valid (docs/design.md §4) but said, with its
     * path and the minimum that holds it, in the words {@code quota calc} uses; exit 0.
     */
    @Test
    void validateWarnsOfBurstsThatCannotHoldTheirRateAndNamesTheMinimum() throws Exception {
        Path p = write("weak.yaml", """
                factor: 1
                default: {rate: 5000, burst: 0}
                resources:
                  fine: {quota: {rate: 5000, burst: 500}}
                  slow: {quota: {rate: 3.3, burst: 1}}
                """);
        Run r = run("config", "validate", p.toString());
        assertThat(r.status()).as(r.err()).isZero();
        assertThat(r.out()).contains(": OK (factor 1, 2 resources), 2 warning(s)")
                .contains("  warning: default: burst 0 under-admits rate 5000/s over 1 limiter: tolerance (burst - 1) x T"
                        + " = 0 ms at T = 0.2 ms absorbs less than 40 ms of bunched arrivals; burst 201 holds it"
                        + " (docs/quotas.md, \"Bursts that hold the rate\")")
                .contains("  warning: resources.slow.quota: burst 1 under-admits rate 3.3/s over 1 limiter")
                .doesNotContain("resources.fine");
    }

    /**
     * Issue 26 item 2: {@code quota calc} keeps the formula's burst (docs/design.md §4) and, where it rounds to one that
     * cannot hold the rate over DF limiters, says so and names the burst that does; what it prints, validated, gives
     * the same warning.
     */
    @ParameterizedTest(name = "rps {0} factor {1}: burst {2}, minimum {3}")
    @CsvSource({"3, 4, 1, 2", "8, 4, 1, 2", "14, 4, 1, 2", "40, 4, 1, 2", "60, 4, 2, 0", "1000, 4, 28, 0",
            "5000, 1, 550, 0", "1, 1, 1, 2"})
    void calcSaysWhenTheFormulaRoundsToABurstThatCannotHoldTheRateAndValidateAgrees(double rps, int factor,
            int burst, int minimum) throws Exception {
        Run r = run("quota", "calc", "--rps", Double.toString(rps), "--factor", Integer.toString(factor));
        assertThat(r.status()).as(r.err()).isZero();
        assertThat(r.out()).contains("\nburst: " + burst + "\n");
        String rate = r.out().lines().filter(l -> l.startsWith("rate: ")).findFirst().orElseThrow().substring(6);
        Path p = write("calc.yaml", "factor: " + factor + "\ndefault: {rate: " + rate + ", burst: " + burst + "}\n");
        Run v = run("config", "validate", p.toString());
        assertThat(v.status()).as(v.err()).isZero();
        if (minimum == 0) {
            assertThat(r.out()).doesNotContain("under-admits");
            assertThat(v.out()).doesNotContain("warning");
        } else {
            String said = "burst " + burst + " under-admits rate " + rate + "/s over " + factor + " limiter";
            assertThat(r.out()).contains("# " + said).contains("burst " + minimum + " holds it");
            String calcLine = r.out().lines().filter(l -> l.startsWith("# burst ")).findFirst().orElseThrow();
            assertThat(v.out()).contains("  warning: default: " + calcLine.substring(2));
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            malformed YAML         | 'factor: [1, 2'                                                                        | line
            unknown operation      | 'default: {rate: 1, burst: 1}\nmethods_default: {GetObjekt: {rate: 1, burst: 1}}'     | GetObjekt
            star not trailing      | 'default: {rate: 1, burst: 1}\nresources: {b: {prefixes: [{prefix: "a*b", quota: {rate: 1, burst: 1}}]}}' | a*b
            negative rate          | 'default: {rate: -1, burst: 1}'                                                        | rate
            negative burst         | 'default: {rate: 1, burst: -3}'                                                        | burst
            duplicate prefixes     | 'default: {rate: 1, burst: 1}\nresources: {b: {prefixes: [{prefix: "p", quota: {rate: 1, burst: 1}}, {prefix: "p", quota: {rate: 2, burst: 1}}]}}' | p
            unknown field          | 'default: {rate: 1, burst: 1, brust: 2}'                                                | brust
            """)
    void validateNamesTheFieldAndExitsNonZero(String what, String yaml, String named) throws Exception {
        Path p = write("bad.yaml", yaml.replace("\\n", "\n"));
        Run r = run("config", "validate", p.toString());
        assertThat(r.status()).as(what).isEqualTo(1);
        assertThat(r.err()).contains(named).doesNotContain("Exception").doesNotContain("\tat ");
    }

    @Test
    void validateOfAMissingFileSaysSo() {
        Run r = run("config", "validate", dir.resolve("nope.yaml").toString());
        assertThat(r.status()).isEqualTo(1);
        assertThat(r.err()).contains("nope.yaml");
    }

    @Test
    void limiterRefusesToStartWithBadQuotas() throws Exception {
        Path p = write("bad.yaml", "default: {rate: 1, burst: 1}\nmethods_default: {Frobnicate: {rate: 1, burst: 1}}");
        Run r = run("limiter", "--id", "l1", "--listen", "127.0.0.1:0", "--quotas", p.toString(), "--log-target", "stderr");
        assertThat(r.status()).isEqualTo(1);
        assertThat(r.err()).contains("Frobnicate").doesNotContain("\tat ");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            limiter --id l1 --listen nonsense              | HOST:PORT
            limiter --id l1 --listen 127.0.0.1:70000       | out of range
            limiter --id l1 --observer https://127.0.0.1:7000 | only plain HTTP
            limiter --id l1 --observer 127.0.0.1:7000/v1    | no path
            limiter --id l1 --heartbeat soon               | not a duration
            gateway --backend 127.0.0.1:9 --on-failure maybe | maybe
            gateway --backend 127.0.0.1:9 --request-header-timeout soon | not a duration
            gateway --backend 127.0.0.1:9 --no-enforce --request-body-timeout 0s | must be positive
            gateway --backend 127.0.0.1:9 --min-body-rate fast | fast
            observer --log-target carrier-pigeon           | udp://
            demo --load-factor -1                          | load-factor
            limiter                                        | --id
            client --limiter-in-flight 0                   | --limiter-in-flight
            client --limiter-in-flight 2000                | --limiter-in-flight
            client --limiter-in-flight abc                 | --limiter-in-flight
            client --batch-max -1                          | --batch-max
            observer --log-target file:/tmp                | is a directory
            limiter --id l1 --warmup soon                  | not a duration
            limiter --id l1 --drain-grace -1s              | must not be negative
            limiter --id l1 --shutdown-deadline 0s          | must be positive
            client --list-grace later                      | not a duration
            client --check-deadline 0ms                    | must be positive
            client --check-deadline soon                   | not a duration
            gateway --backend 127.0.0.1:9 --list-grace later | not a duration
            gateway --backend 127.0.0.1:9 --list-grace -3s | --list-grace
            gateway --backend 127.0.0.1:9 --check-deadline 0s | must be positive
            gateway --backend 127.0.0.1:9 --limiter-in-flight 0 | --limiter-in-flight must be between 1 and 1024, got 0
            gateway --backend 127.0.0.1:9 --batch-max 2000 | --batch-max must be between 1 and 1024, got 2000
            gateway --backend 127.0.0.1:9 --refresh soon    | not a duration
            gateway --backend 127.0.0.1:9 --backoff 0s      | must be positive
            gateway --backend 127.0.0.1:9 --limiter-wire=maybe | maybe
            client --shutdown-deadline 0ms                  | must be positive
            observer --shutdown-deadline never              | not a duration
            demo --gateways 9                               | --gateways must be 1-8
            bench limiter --rate -5                         | --rate must be
            bench limiter --rate fast                       | fast
            bench http --rate 1000000000 --url http://127.0.0.1:1/ | at most 1000000
            bench http --rate 200 --warmup 1s --duration 1s --url http://127.0.0.1:1/ | no request to http://127.0.0.1:1/ got a 2xx answer in the warm-up
            bench http --rate 200 --warmup 0 --duration 1s --url http://127.0.0.1:1/ | got a 2xx answer in the measured phases
            bench limiter --rate 0.5 --duration 1s           | sends no check in --duration 1000 ms
            bench limiter --target 127.0.0.1:1 --warmup 1s --duration 1s --rate 100 --log-target stderr | cannot open the check wire to 127.0.0.1:1: connection refused
            bench limiter --target 127.0.0.1:1 --encoding json --warmup 1s --duration 1s --rate 100 --log-target stderr | no check of the warm-up succeeded against 127.0.0.1:1
            client --line-idle-timeout 0                     | duration '0' must be positive
            client --line-listen http://127.0.0.1:7201       | not HTTP
            client --line-listen 127.0.0.1:7201:1            | one colon only
            observer --ttl 1e400s                            | longer than 365 days
            limiter --id l1 --warmup 1e400s                  | longer than 365 days
            bench http --rate 0.1 --duration 1s --warmup 0 --url http://127.0.0.1:1/ | sends no request in --duration
            client --listen 127.0.0.1:17299 --line-listen 127.0.0.1:17299 | needs a port of its own
            client --listen 127.0.0.1:17299 --line-listen 0.0.0.0:17299 | needs a port of its own
            demo --backend-latency 30s                      | --backend-latency must be 0s-20s
            demo --backend-latency slow                     | slow
            demo --keep-running --gateways 3                | --keep-running works with one gateway
            gateway --backend 127.0.0.1:9 --no-enforce --etcd http://127.0.0.1:1 | --etcd needs --principals FILE
            client --leases --lease-threshold -1             | --lease-threshold must be a finite number > 0 (requests per second), got -1.0
            client --leases --lease-threshold 0              | --lease-threshold must be a finite number > 0
            client --lease-threshold -0.5                    | --lease-threshold must be a finite number > 0
            client --leases --lease-threshold NaN            | --lease-threshold must be a finite number > 0
            client --leases --lease-threshold Infinity       | --lease-threshold must be a finite number > 0
            client --leases --lease-threshold many           | --lease-threshold
            client --leases --lease-threshold 100req/s       | --lease-threshold
            client --leases --lease-window 0s                | must be positive
            client --leases --lease-window -1s               | --lease-window
            client --leases --lease-window soon              | not a duration
            client --leases --lease-window 25h               | --lease-window must be at most 24h, got 25h
            client --leases=maybe                            | maybe
            gateway --backend 127.0.0.1:9 --leases           | --leases
            """)
    void badFlagsGetAClearMessage(String line, String named) {
        Run r = run(line.trim().split("\\s+"));
        assertThat(r.status()).isNotZero();
        assertThat(r.err()).contains(named).doesNotContain("\tat ");
    }

    /**
     * Issue 23 item 2: {@code levee client --[no-]leases} is on by default (every acceptance item of the issue holds
     * with leases on), {@code --lease-threshold} and {@code --lease-window} reach the client's settings, and the
     * limiter-client settings are the same with leases on or off.
     */
    @Test
    void clientLeaseFlagsAreOnByDefaultAndReachTheSettings() {
        ClientCommand defaults = new ClientCommand();
        new picocli.CommandLine(defaults).parseArgs();
        assertThat(defaults.leases.enabled).isTrue();
        assertThat(defaults.leases.settings()).isEqualTo(dev.levee.client.RequestLeases.Settings.DEFAULTS);
        ClientCommand on = new ClientCommand();
        new picocli.CommandLine(on).parseArgs("--leases", "--lease-threshold", "250.5", "--lease-window", "500ms",
                "--quotas", "q.yaml");
        assertThat(on.leases.enabled).isTrue();
        assertThat(on.leases.settings()).isEqualTo(new dev.levee.client.RequestLeases.Settings(250.5,
                java.time.Duration.ofMillis(500)));
        assertThat(on.leases.quotas).isEqualTo(Path.of("q.yaml"));
        assertThat(on.options()).as("the limiter-client settings do not change").isEqualTo(defaults.options());
        ClientCommand off = new ClientCommand();
        new picocli.CommandLine(off).parseArgs("--no-leases");
        assertThat(off.leases.enabled).isFalse();
        Run help = run("client", "--help");
        assertThat(help.out().replaceAll("\\s+", " ")).contains("--[no-]leases").contains("--lease-threshold=REQ/S")
                .contains("--lease-window=DURATION").contains("request leases for hot keys:").contains("--quotas")
                .contains("--etcd");
        assertThat(run("gateway", "--help").out()).doesNotContain("--[no-]leases").doesNotContain("--lease-threshold");
    }

    @Test
    void gatewayRefusesAPrincipalsFileWithABadSecretNamingTheField() throws Exception {
        Path p = write("principals.yaml", """
                accounts:
                  svc:
                    keys:
                      - {id: AKIAOK, secret: "fine-secret-value"}
                      - {id: AKIABAD, secret: ""}
                """);
        Run r = run("gateway", "--backend", "127.0.0.1:9", "--no-enforce", "--principals", p.toString());
        assertThat(r.status()).isNotZero();
        assertThat(r.err()).contains("accounts.svc.keys[1].secret: is empty").doesNotContain("fine-secret-value")
                .doesNotContain("\tat ");
    }

    @Test
    void gatewayListGraceAndCheckDeadlineReachItsEmbeddedClient() {
        GatewayCommand defaults = new GatewayCommand();
        new picocli.CommandLine(defaults).parseArgs("--backend", "127.0.0.1:9");
        assertThat(defaults.clientOptions().listGrace()).isEqualTo(dev.levee.client.LeveeClient.Options.DEFAULT_LIST_GRACE);
        assertThat(defaults.clientOptions().checkDeadline())
                .isEqualTo(dev.levee.client.LeveeClient.Options.DEFAULT_CHECK_DEADLINE);
        GatewayCommand set = new GatewayCommand();
        new picocli.CommandLine(set).parseArgs("--backend", "127.0.0.1:9", "--list-grace", "0", "--check-deadline", "2s");
        assertThat(set.clientOptions().listGrace()).isZero();
        assertThat(set.clientOptions().checkDeadline()).isEqualTo(java.time.Duration.ofSeconds(2));
    }

    /**
     * Issue 25 item 4: {@code levee client} and the gateway's embedded client take the limiter-client flags from one
     * mixin ({@link LimiterClientOptions}): the same flags with the same defaults and help (the gateway had no
     * --refresh, --backoff, --limiter-in-flight, --batch-max nor --[no-]limiter-wire, and hard-coded refresh 1 s and
     * back-off 2 s), and what the gateway is given reaches its client.
     */
    @Test
    void gatewayTakesTheClientFlagsWithTheClientsDefaultsAndHelp() {
        picocli.CommandLine.Model.CommandSpec client = new picocli.CommandLine(new ClientCommand()).getCommandSpec();
        picocli.CommandLine.Model.CommandSpec gateway = new picocli.CommandLine(new GatewayCommand()).getCommandSpec();
        assertThat(gateway.mixins().get("limiterClient").userObject()).isInstanceOf(LimiterClientOptions.class);
        List<String> names = client.mixins().get("limiterClient").options().stream().map(o -> o.longestName()).toList();
        assertThat(names).contains("--refresh", "--check-timeout", "--check-deadline", "--backoff", "--base-domain",
                "--limiter-in-flight", "--batch-max", "--limiter-wire", "--list-grace");
        Run clientHelp = run("client", "--help");
        Run gatewayHelp = run("gateway", "--help");
        for (String name : names) {
            var c = client.findOption(name);
            var g = gateway.findOption(name);
            assertThat(g).as("levee gateway " + name).isNotNull();
            assertThat(g.defaultValue()).as(name).isEqualTo(c.defaultValue());
            assertThat(g.description()).as(name).containsExactly(c.description());
            String shown = c.negatable() ? "--[no-]" + name.substring(2) : name;
            assertThat(clientHelp.out()).contains(shown);
            assertThat(gatewayHelp.out()).contains(shown);
        }

        GatewayCommand defaults = new GatewayCommand();
        new picocli.CommandLine(defaults).parseArgs("--backend", "127.0.0.1:9");
        ClientCommand clientDefaults = new ClientCommand();
        new picocli.CommandLine(clientDefaults).parseArgs();
        // what the gateway hard-coded before: refresh 1 s, back-off 2 s, the client's in-flight, batch and wire defaults
        assertThat(defaults.clientOptions()).isEqualTo(clientDefaults.options());
        assertThat(defaults.clientOptions().refresh()).isEqualTo(java.time.Duration.ofSeconds(1));
        assertThat(defaults.clientOptions().backoff()).isEqualTo(java.time.Duration.ofSeconds(2));

        GatewayCommand set = new GatewayCommand();
        new picocli.CommandLine(set).parseArgs("--backend", "127.0.0.1:9", "--refresh", "300ms", "--backoff", "5s",
                "--check-timeout", "400ms", "--limiter-in-flight", "8", "--batch-max", "64", "--no-limiter-wire",
                "--base-domain", "s3.example.com");
        dev.levee.client.LeveeClient.Options o = set.clientOptions();
        assertThat(o.refresh()).isEqualTo(java.time.Duration.ofMillis(300));
        assertThat(o.backoff()).isEqualTo(java.time.Duration.ofSeconds(5));
        assertThat(o.checkTimeout()).isEqualTo(java.time.Duration.ofMillis(400));
        assertThat(o.maxInFlight()).isEqualTo(8);
        assertThat(o.maxBatch()).isEqualTo(64);
        assertThat(o.wire()).isFalse();
        assertThat(o.baseDomains()).containsExactly("s3.example.com");
    }

    @Test
    void gatewayClientDeadlineFlagsReachTheGatewaysSettingsWithDocumentedDefaults() {
        GatewayCommand defaults = new GatewayCommand();
        new picocli.CommandLine(defaults).parseArgs("--backend", "127.0.0.1:9", "--no-enforce");
        dev.levee.gateway.GatewayOptions d = defaults.options();
        assertThat(d.clientDeadlines()).isEqualTo(dev.levee.gateway.GatewayOptions.ClientDeadlines.DEFAULTS);
        assertThat(d.clientDeadlines().requestHeaderTimeout()).isEqualTo(java.time.Duration.ofSeconds(60));
        assertThat(d.clientDeadlines().requestBodyTimeout()).isEqualTo(java.time.Duration.ofSeconds(30));
        assertThat(d.clientDeadlines().minBodyRate()).isEqualTo(1024);
        assertThat(d.clientDeadlines().sendTimeout()).isEqualTo(java.time.Duration.ofSeconds(60));
        assertThat(d.continueTimeout()).isEqualTo(java.time.Duration.ofSeconds(1));
        assertThat(defaults.shutdownDeadline).isEqualTo(java.time.Duration.ofSeconds(10));

        GatewayCommand set = new GatewayCommand();
        new picocli.CommandLine(set).parseArgs("--backend", "127.0.0.1:9", "--no-enforce", "--request-header-timeout", "5s",
                "--request-body-timeout", "7s", "--min-body-rate", "2KiB/s", "--backend-continue-timeout", "250ms",
                "--send-timeout", "9s");
        dev.levee.gateway.GatewayOptions o = set.options();
        assertThat(o.clientDeadlines()).isEqualTo(new dev.levee.gateway.GatewayOptions.ClientDeadlines(
                java.time.Duration.ofSeconds(5), java.time.Duration.ofSeconds(7), 2048, java.time.Duration.ofSeconds(9)));
        assertThat(o.continueTimeout()).isEqualTo(java.time.Duration.ofMillis(250));
    }

    @Test
    void gatewayRateLimitFieldsOnAcceptedResponsesAreOffUnlessTheFlagIsGiven() {
        GatewayCommand defaults = new GatewayCommand();
        new picocli.CommandLine(defaults).parseArgs("--backend", "127.0.0.1:9");
        assertThat(defaults.options().rateLimitOnAccept()).isFalse();
        GatewayCommand set = new GatewayCommand();
        new picocli.CommandLine(set).parseArgs("--backend", "127.0.0.1:9", "--ratelimit-headers-on-accept");
        assertThat(set.options().rateLimitOnAccept()).isTrue();
        assertThat(run("gateway", "--help").out()).contains("--ratelimit-headers-on-accept");
    }

    @Test
    void gatewayBackendTimeoutIsTheBackendsOwnSlownessAsTheHelpSays() {
        GatewayCommand set = new GatewayCommand();
        new picocli.CommandLine(set).parseArgs("--backend", "127.0.0.1:9", "--backend-timeout", "2s");
        assertThat(set.options().backendTimeout()).isEqualTo(java.time.Duration.ofSeconds(2));
        // issue 22, item 3: not an overall limit on the exchange (docs/gateway.md, "Backend timeout")
        String help = run("gateway", "--help").out().replaceAll("\\s+", " ");
        assertThat(help).contains("--backend-timeout=<backendTimeout>")
                .contains("longest time the backend may make no progress while the gateway waits for it")
                .contains("time the gateway itself holds the body or does not read (bandwidth governor, slow clients)"
                        + " does not count; then 504 GatewayTimeout (default: 60s)");
    }

    @Test
    void gatewayClockSkewNeedsPrincipalsAndARange() throws Exception {
        Run without = run("gateway", "--backend", "127.0.0.1:9", "--no-enforce", "--max-clock-skew", "5m");
        assertThat(without.status()).isNotZero();
        assertThat(without.err()).contains("--max-clock-skew needs --principals FILE");
        Path p = write("principals.yaml", "accounts: {}\n");
        Run tooLong = run("gateway", "--backend", "127.0.0.1:9", "--no-enforce", "--principals", p.toString(),
                "--max-clock-skew", "48h");
        assertThat(tooLong.status()).isNotZero();
        assertThat(tooLong.err()).contains("--max-clock-skew must lie between 1s and 24h, got 48h");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            --lease-ttl 2500ms                      | whole number of seconds
            --lease-ttl 3s --renew-interval 2s      | at most a third of the lease TTL
            --lease-drift lots                      | --lease-drift: 'lots' is not a fraction
            --lease-drift 60%                       | drift must be in [0, 0.5)
            --gateway-id a/b                        | without spaces or '/'
            --lease-margin 3s                       | less than half the TTL
            """)
    void gatewaySiteLeaseFlagsAreCheckedThroughTheCommandLine(String flags, String named) throws Exception {
        Path p = write("principals.yaml", "accounts: {}\n");
        List<String> args = new java.util.ArrayList<>(List.of("gateway", "--backend", "127.0.0.1:9", "--no-enforce",
                "--principals", p.toString(), "--etcd", "http://127.0.0.1:1"));
        args.addAll(List.of(flags.trim().split("\\s+")));
        Run r = run(args.toArray(String[]::new));
        assertThat(r.status()).isNotZero();
        assertThat(r.err()).contains(named).doesNotContain("\tat ");
    }

    @ParameterizedTest
    @ValueSource(strings = {"--lease-ttl 10s", "--gateway-id gw-1", "--renew-interval 2s", "--lease-margin 50ms"})
    void gatewaySiteLeaseFlagsWithoutEtcdAreRefusedNotIgnored(String flags) throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(System.getenv("LEVEE_ETCD_ENDPOINTS") == null,
                "LEVEE_ETCD_ENDPOINTS is set: --etcd has a default here");
        Path p = write("principals.yaml", "accounts: {}\n");
        List<String> args = new java.util.ArrayList<>(List.of("gateway", "--backend", "127.0.0.1:9", "--no-enforce",
                "--principals", p.toString()));
        args.addAll(List.of(flags.split(" ")));
        Run r = run(args.toArray(String[]::new));
        assertThat(r.status()).as(r.err()).isEqualTo(2);
        assertThat(r.err()).contains(flags.split(" ")[0]).contains("need etcd").contains("LEVEE_ETCD_ENDPOINTS")
                .doesNotContain("\tat ");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            --admission-queue -1                 | --admission-queue must be ≥ 0, got -1
            --max-uploads-per-principal 0        | --max-uploads-per-principal must be ≥ 1
            --max-downloads-per-principal 0      | --max-downloads-per-principal must be ≥ 1
            --max-clock-skew 25h                 | --max-clock-skew must lie between 1s and 24h, got 25h
            """)
    void gatewayGovernanceValuesAreNamedByTheirFlags(String flags, String message) throws Exception {
        Path p = write("principals.yaml", "accounts: {}\n");
        List<String> args = new java.util.ArrayList<>(List.of("gateway", "--backend", "127.0.0.1:9", "--no-enforce",
                "--principals", p.toString()));
        args.addAll(List.of(flags.trim().split("\\s+")));
        Run r = run(args.toArray(String[]::new));
        assertThat(r.status()).as(r.err()).isEqualTo(2);
        assertThat(r.err()).contains(message).doesNotContain("maxWaiters").doesNotContain("PT25H");
    }

    @ParameterizedTest
    @ValueSource(strings = {"1KiB", "65MiB", "-1", "lots", ""})
    void aBadTcpNotSentLowWatermarkIsNamedWithOrWithoutPrincipals(String value) throws Exception {
        Path p = write("principals.yaml", "accounts: {}\n");
        for (List<String> args : List.of(List.of("gateway", "--backend", "127.0.0.1:9", "--no-enforce"),
                List.of("gateway", "--backend", "127.0.0.1:9", "--no-enforce", "--principals", p.toString()))) {
            List<String> all = new java.util.ArrayList<>(args);
            all.addAll(List.of("--tcp-notsent-lowat", value));
            Run r = run(all.toArray(String[]::new));
            assertThat(r.status()).as(r.err()).isEqualTo(2);
            assertThat(r.err()).contains("--tcp-notsent-lowat must be 0 (the kernel's setting) or a size from 16KiB to"
                    + " 64MiB, got '" + value + "'").doesNotContain("\tat ");
        }
    }

    @Test
    void anUnreadableFileIsNamedWithWhyNotJavasWords() throws Exception {
        Path binary = dir.resolve("p_bin.yaml");
        Files.write(binary, new byte[] {(byte) 0xff, (byte) 0xfe, 0, 1, 2, (byte) 0xc3});
        Run bin = run("gateway", "--backend", "127.0.0.1:9", "--no-enforce", "--principals", binary.toString());
        assertThat(bin.status()).isEqualTo(2);
        assertThat(bin.err()).contains(binary + " is not UTF-8 text").doesNotContain("Input length");
        Run missing = run("gateway", "--backend", "127.0.0.1:9", "--no-enforce", "--health-token-file",
                dir.resolve("t_missing").toString());
        assertThat(missing.err()).contains("no such file: " + dir.resolve("t_missing"));
        Run quota = run("quota", "set", "my-bucket", binary.toString(), "--etcd", "http://127.0.0.1:1");
        assertThat(quota.status()).isNotZero();
        assertThat(quota.err()).doesNotContain("Input length");
    }

    @Test
    void gatewaySiteLeaseFlagsReachTheKeeperWithDocumentedDefaults() throws Exception {
        Path p = write("principals.yaml", "accounts: {}\n");
        GatewayCommand defaults = new GatewayCommand();
        new picocli.CommandLine(defaults).parseArgs("--backend", "127.0.0.1:9", "--no-enforce", "--principals", p.toString(),
                "--listen", "127.0.0.1:9100", "--etcd", "http://127.0.0.1:2379,http://127.0.0.1:22379");
        dev.levee.gateway.SiteSettings site = defaults.options().governance().site();
        assertThat(site.etcdEndpoints()).containsExactly("http://127.0.0.1:2379", "http://127.0.0.1:22379");
        assertThat(site.prefix()).isEqualTo("/levee");
        assertThat(site.keeper()).isEqualTo(new dev.levee.lease.ShareKeeper.Settings("127.0.0.1:9100",
                java.time.Duration.ofSeconds(5), java.time.Duration.ofSeconds(1), 0.01, java.time.Duration.ofMillis(100),
                java.time.Duration.ofSeconds(1), 3));
        GatewayCommand set = new GatewayCommand();
        new picocli.CommandLine(set).parseArgs("--backend", "127.0.0.1:9", "--no-enforce", "--principals", p.toString(),
                "--etcd", "http://127.0.0.1:2379", "--gateway-id", "gw-7", "--lease-ttl", "9s", "--renew-interval", "3s",
                "--lease-drift", "2%", "--lease-margin", "250ms", "--etcd-prefix", "/site");
        dev.levee.gateway.SiteSettings s2 = set.options().governance().site();
        assertThat(s2.keeper()).isEqualTo(new dev.levee.lease.ShareKeeper.Settings("gw-7",
                java.time.Duration.ofSeconds(9), java.time.Duration.ofSeconds(3), 0.02, java.time.Duration.ofMillis(250),
                java.time.Duration.ofSeconds(3), 3));
        assertThat(s2.prefix()).isEqualTo("/site");
        GatewayCommand none = new GatewayCommand();
        new picocli.CommandLine(none).parseArgs("--backend", "127.0.0.1:9", "--no-enforce", "--principals", p.toString());
        assertThat(none.options().governance().site()).as("no --etcd: no site budgets").isNull();
    }

    @Test
    void demoStreamsFollowTheEmbeddedQuotas() {
        var streams = DemoCommand.deriveStreams(Quotas.embedded(), 2.0);
        assertThat(streams).extracting(DemoCommand.Stream::label).anyMatch(l -> l.startsWith("default"))
                .anyMatch(l -> l.contains("methods_default.ListObjects")).anyMatch(l -> l.contains("photos/2024"))
                .anyMatch(l -> l.contains("uploads/*")).anyMatch(l -> l.contains("PutObject"));
        streams.forEach(s -> assertThat(s.offered()).isEqualTo(2.0 * s.configured(), org.assertj.core.data.Offset.offset(1e-9)));
        var uploads = streams.stream().filter(s -> s.label().contains("uploads/*")).findFirst().orElseThrow();
        assertThat(uploads.counters()).isEqualTo(2); // one counter per object key
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            after the subcommand  | quota get --etcd http://127.0.0.1:1
            before the subcommand | quota --etcd http://127.0.0.1:1 get
            before, with a prefix | quota --etcd http://127.0.0.1:1 --etcd-prefix /x export
            calc                  | quota --etcd http://127.0.0.1:1 calc --rps 10
            bandwidth, after      | bandwidth status --etcd http://127.0.0.1:1
            bandwidth, before     | bandwidth --etcd http://127.0.0.1:1 set --download 30MiB/s
            """)
    void etcdOptionsWorkInEitherPositionAndARefusedConnectionIsReportedAtOnceNamingTheEndpoint(String what, String line) {
        long t0 = System.nanoTime();
        Run r = run(line.trim().split("\\s+"));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertThat(r.status()).as(what).isEqualTo(1);
        assertThat(r.err()).as(what).contains("refused").contains("http://127.0.0.1:1").doesNotContain("timed out")
                .doesNotContain("\tat ");
        assertThat(ms).as(what + ": ms until the error").isLessThan(2000);
    }

    @Test
    void anEtcdThatDoesNotAnswerTheConnectIsATimeoutNamingTheEndpoint() throws Exception {
        // a listener whose accept queue is full: the kernel drops further SYNs, so a connect gets no answer
        try (java.net.ServerSocket full = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            List<java.net.Socket> fillers = new java.util.ArrayList<>();
            try {
                for (int i = 0; i < 4; i++) {
                    java.net.Socket s = new java.net.Socket();
                    try {
                        s.connect(full.getLocalSocketAddress(), 200);
                    } catch (java.io.IOException e) {
                        // the queue is full
                    }
                    fillers.add(s);
                }
                String endpoint = "http://127.0.0.1:" + full.getLocalPort();
                long t0 = System.nanoTime();
                Run r = run("quota", "get", "--etcd", endpoint);
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertThat(r.status()).isEqualTo(1);
                assertThat(r.err()).contains(endpoint).contains("timed out").doesNotContain("refused");
                assertThat(ms).isLessThan(3000);
            } finally {
                for (java.net.Socket s : fillers) {
                    s.close();
                }
            }
        }
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            --line-listen       | nonsense          | --line-listen
            --line-listen       | 127.0.0.1:70000   | --line-listen
            --line-listen       | https://127.0.0.1:7201 | --line-listen
            --line-listen       | 127.0.0.1         | --line-listen
            --line-idle-timeout | 0s                | must be positive
            --line-idle-timeout | soon              | --line-idle-timeout
            """)
    void aBadLineListenerIsRefusedNamingTheOption(String option, String value, String named) {
        Run r = run("client", option, value);
        assertThat(r.status()).as(r.err()).isEqualTo(2);
        assertThat(r.err()).contains(named).doesNotContain("\tat ").doesNotContain("Exception");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            bench limiter --rounds 0 --stats both                      | --rounds
            bench limiter --encoding smoke                             | --encoding
            bench http --url http://192.0.2.1:80/x --rate 10           | loopback
            demo --limiters 0                                          | --limiters
            demo --load-factor 0                                       | --load-factor
            observer --stats-timeout 0ms                               | --stats-timeout
            observer --etcd http://127.0.0.1:1 --factor 7              | --factor is not used with etcd
            observer --factor 0                                        | --factor must be ≥ 1
            observer --max-limiters 0                                  | --max-limiters must be ≥ 1
            observer --etcd http://127.0.0.1:1 --ttl 10s               | --ttl is not used with etcd
            quota calc --rps 0 --factor 1                              | --rps
            top --rows 0                                               | --rows
            nginx-config --part site --out /tmp/levee-nginx-x          | --out
            nginx-config --http2                                       | HTTP/2
            nginx-config --timeout 2m                                  | timeout
            bandwidth set --etcd http://127.0.0.1:1                    | nothing to set
            bandwidth set --etcd http://127.0.0.1:1 --download lots    | --download
            bandwidth set --etcd http://127.0.0.1:1 --principal a:sideways=1MiB/s | direction
            """)
    void aValueTheCommandChecksItselfIsAUsageErrorLikePicocliOwn(String line, String named) {
        // exit status 2 and a hint to --help, as for a value picocli refuses (status 1: the environment failed)
        Run r = run(line.trim().split("\\s+"));
        assertThat(r.status()).as(r.err()).isEqualTo(2);
        assertThat(r.err()).contains(named).contains("--help' for more information")
                .doesNotContain("\tat ").doesNotContain("Exception");
    }

    @Test
    void aLineListenerThatCannotBindStopsTheStartNamingTheOption() throws Exception {
        try (java.net.ServerSocket busy = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            Run r = run("client", "--listen", "127.0.0.1:0", "--observer", "127.0.0.1:1", "--line-listen",
                    "127.0.0.1:" + busy.getLocalPort(), "--log-target", "stderr", "--log-level", "ERROR");
            assertThat(r.status()).isEqualTo(1);
            assertThat(r.err()).contains("--line-listen 127.0.0.1:" + busy.getLocalPort()).doesNotContain("\tat ");
        }
    }

    @Test
    void theClientsHelpNamesTheLineListener() {
        Run r = run("client", "--help");
        assertThat(r.status()).isZero();
        assertThat(r.out()).contains("--line-listen").contains("cosocket").contains("--line-idle-timeout")
                .contains("default: none");
    }

    @Test
    void bucketNamesMayNotBeginWithAHyphen() {
        assertThat(BucketNames.problem("-bucket")).contains("begin and end");
        assertThat(BucketNames.problem("bucket-")).contains("begin and end");
        assertThat(BucketNames.problem("amzn-s3-demo-bucket")).contains("amzn-s3-demo-");
        assertThat(BucketNames.problem("b--x-s3")).contains("--x-s3");
        assertThat(BucketNames.problem("x".repeat(64))).contains("3 to 63");
        assertThat(BucketNames.problem("my.bucket-1")).isNull();
    }

    @Test
    void aValueErrorPrintsTheErrorAndOneHintNotTheWholeUsage() {
        Run r = run("limiter", "--id", "l1", "--heartbeat", "soon");
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err()).contains("not a duration").contains("Try 'levee limiter --help' for more information.")
                .doesNotContain("Usage:");
        assertThat(r.err().lines().count()).isLessThanOrEqualTo(3);
        Run unknown = run("quota", "gett");
        assertThat(unknown.err()).contains("Try 'levee quota --help'").doesNotContain("Usage:");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            ab                   | 3 to 63
            Example-Bucket       | lowercase
            under_score          | '_'
            .starts-with-dot     | begin and end
            ends-with-dot.       | begin and end
            two..dots            | adjacent dots
            192.168.5.4          | IP address
            xn--punycode         | xn--
            sthree-bucket        | sthree-
            my-bucket-s3alias    | -s3alias
            my-bucket--ol-s3     | --ol-s3
            """)
    void quotaSetAndDeleteRefuseABucketNameThatBreaksS3sRules(String bucket, String rule) throws Exception {
        Path f = write("b.yaml", "quota: {rate: 1, burst: 1}\n");
        for (String[] line : new String[][] {{"quota", "set", bucket, f.toString()}, {"quota", "delete", bucket}}) {
            Run r = run(concat(line, "--etcd", "http://127.0.0.1:1"));
            assertThat(r.status()).as(String.join(" ", line)).isEqualTo(2);
            assertThat(r.err()).contains("bucket name").contains(rule).contains("--allow-legacy-bucket-name")
                    .doesNotContain("refused");
        }
    }

    /**
     * A whole quota file given to {@code quota set}: refused before etcd is asked, naming the file and the command
     * that takes it (issue 26 item 9); a bucket's own YAML with an error names the file, not the etcd key.
     */
    @Test
    void quotaSetOfAWholeQuotaFileNamesTheFileAndSuggestsImport() throws Exception {
        Path whole = write("quotas.yaml", "factor: 2\nresources:\n  photos: {quota: {rate: 10, burst: 1}}\n");
        Run r = run("quota", "set", "photos", whole.toString(), "--etcd", "http://127.0.0.1:1");
        assertThat(r.status()).isEqualTo(1);
        assertThat(r.err()).contains(whole + " is a whole quota file (it has factor:, resources:)")
                .contains("levee quota import " + whole).doesNotContain("/levee/resources/").doesNotContain("refused");
        Path bad = write("bad.yaml", "quota: {rate: -1, burst: 1}\n");
        Run b = run("quota", "set", "photos", bad.toString(), "--etcd", "http://127.0.0.1:1");
        assertThat(b.status()).isNotZero();
        assertThat(b.err()).contains(bad.toString()).doesNotContain("/levee/resources/").doesNotContain("quota import");
    }

    /** {@code config validate} of one bucket's YAML says what it is and which command takes it (issue 26 item 9). */
    @Test
    void validateOfOneBucketsQuotasSaysSo() throws Exception {
        Path one = write("photos.yaml", "quota: {rate: 10, burst: 1}\nprefixes:\n  - {prefix: \"a/\", quota: {rate: 5, burst: 1}}\n");
        Run r = run("config", "validate", one.toString());
        assertThat(r.status()).isEqualTo(1);
        assertThat(r.err()).contains(one + " looks like one bucket's quotas (prefixes:, quota:), valid as one bucket's"
                + " quotas: 'levee quota set BUCKET " + one + "' takes that form");
        Run other = run("config", "validate", write("junk.yaml", "factr: 2\n").toString());
        assertThat(other.err()).doesNotContain("one bucket's quotas");
    }

    @Test
    void quotaSetAcceptsValidAndExplicitlyAllowedLegacyBucketNames() throws Exception {
        Path f = write("b.yaml", "quota: {rate: 1, burst: 1}\n");
        for (String bucket : new String[] {"example-bucket", "a.b-c", "123", "x".repeat(63)}) {
            // the name passes: the command goes on to etcd, which is not there
            assertThat(run("quota", "set", bucket, f.toString(), "--etcd", "http://127.0.0.1:1").err()).as(bucket)
                    .contains("refused");
        }
        assertThat(run("quota", "set", "Legacy_Bucket", f.toString(), "--allow-legacy-bucket-name",
                "--etcd", "http://127.0.0.1:1").err()).contains("refused");
        assertThat(run("quota", "delete", "Legacy_Bucket", "--allow-legacy-bucket-name",
                "--etcd", "http://127.0.0.1:1").err()).contains("refused");
    }

    @Test
    void gatewayReportsEveryPrincipalsFileErrorOnALineOfItsOwn() throws Exception {
        Path p = write("principals.yaml", """
                accounts:
                  a: {keys: [], upload_rate: fast}
                  b: {keys: [AKIAB], colour: blue}
                """);
        Run r = run("gateway", "--backend", "127.0.0.1:9", "--no-enforce", "--principals", p.toString());
        assertThat(r.status()).isEqualTo(2);
        List<String> lines = r.err().lines().filter(l -> l.contains(p.toString())).toList();
        assertThat(lines).hasSize(3);
        assertThat(lines.get(0)).contains("accounts.a.keys");
        assertThat(lines.get(1)).contains("accounts.a.upload_rate");
        assertThat(lines.get(2)).contains("accounts.b: unknown field 'colour'");
        assertThat(r.err()).contains("Try 'levee gateway --help'").doesNotContain("Usage:");
    }

    @Test
    void theExampleFilesTheReadmeUsesShipAndAreValid() throws Exception {
        Path root = Path.of("..").toAbsolutePath().normalize();
        String readme = Files.readString(root.resolve("README.md"));
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("examples/[\\w.-]+\\.yaml").matcher(readme);
        java.util.Set<String> named = new java.util.TreeSet<>();
        while (m.find()) {
            named.add(m.group());
        }
        assertThat(named).contains("examples/quotas.yaml", "examples/bucket.yaml", "examples/principals.yaml");
        for (String f : named) {
            assertThat(root.resolve(f)).as(f).isRegularFile();
        }
        Run r = run("config", "validate", root.resolve("examples/quotas.yaml").toString());
        assertThat(r.status()).as(r.err()).isZero();
        // a bucket's value, as 'levee quota set' validates it before writing
        dev.levee.quota.ResourceQuotas b = dev.levee.config.QuotaConfigLoader.parseResource("example-bucket",
                Files.readString(root.resolve("examples/bucket.yaml")), "examples/bucket.yaml");
        assertThat(b.prefixes()).hasSize(3);
        // the site budget, as 'levee bandwidth import' and 'levee demo --site-budget' read it
        dev.levee.lease.SiteBudget site = dev.levee.lease.SiteBudget.parse("examples/site-budget.yaml",
                Files.readString(root.resolve("examples/site-budget.yaml")));
        assertThat(site.download()).isEqualTo(30L << 20);
        assertThat(site.ceiling(dev.levee.governor.Direction.DOWNLOAD, "svc-backup")).isEqualTo(10L << 20);
        // the principals, as 'levee gateway --principals' reads them
        dev.levee.gateway.PrincipalDirectory principals = dev.levee.gateway.PrincipalDirectory.parseYaml(
                Files.readString(root.resolve("examples/principals.yaml")), "examples/principals.yaml");
        assertThat(principals.principalOf("AKIAPHOTOS2")).isEqualTo("svc-photos");
        assertThat(principals.principalOf("levee-demo")).isEqualTo("levee-demo");
    }

    @Test
    void theDemosLogFileHoldsOneRunOnly() throws Exception {
        Path log = dir.resolve("logs/demo.log");
        Files.createDirectories(log.getParent());
        Files.writeString(log, "a line of an earlier run\n");
        DemoCommand.startFreshLog(dev.levee.runtime.LogTarget.parse("file:" + log));
        assertThat(log).isEmptyFile();
        Path fresh = dir.resolve("new/dir/demo.log");
        DemoCommand.startFreshLog(dev.levee.runtime.LogTarget.parse("file:" + fresh));
        assertThat(fresh).isEmptyFile();
    }

    @Test
    void demoSiteBudgetFileIsValidatedNamingTheFileAndField() throws Exception {
        Path bad = write("budget.yaml", "download: lots\nupload: -1\n");
        Run r = run("demo", "--gateways", "3", "--site-budget", bad.toString());
        assertThat(r.status()).isNotZero();
        assertThat(r.err()).contains(bad.toString() + ": field 'download'").contains("field 'upload'").doesNotContain("\tat ");
        Path none = write("none.yaml", "upload: 10MiB/s\n");
        Run r2 = run("demo", "--gateways", "3", "--site-budget", none.toString());
        assertThat(r2.status()).isNotZero();
        assertThat(r2.err()).contains("field 'download' is 0 or absent");
    }

    @Test
    void helpAndShippedTextsCiteDocumentsOfTheRepositoryNotTheSpec() throws Exception {
        Path root = Path.of("..").toAbsolutePath().normalize();
        List<String> texts = new java.util.ArrayList<>();
        java.util.ArrayDeque<picocli.CommandLine> todo = new java.util.ArrayDeque<>();
        todo.add(new picocli.CommandLine(Main.class));
        while (!todo.isEmpty()) {
            picocli.CommandLine c = todo.poll();
            texts.add(c.getCommandSpec().qualifiedName() + "\n" + c.getUsageMessage());
            todo.addAll(c.getSubcommands().values());
        }
        texts.add(Quotas.embeddedText());
        texts.add(dev.levee.config.QuotaConfigLoader.toYaml(Quotas.embedded()));
        texts.add(Files.readString(root.resolve("nginx/rate.lua")));
        texts.add(Files.readString(root.resolve("openapi.yaml")));
        try (var in = dev.levee.config.QuotaConfigLoader.class.getResourceAsStream(dev.levee.config.QuotaConfigLoader.EXAMPLE_RESOURCE)) {
            texts.add(new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
        }
        assertThat(texts).hasSizeGreaterThan(20);
        for (String t : texts) {
            assertThat(t).as(t.lines().findFirst().orElse("")).doesNotContain("SPEC");
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("docs/[\\w.-]+\\.md").matcher(t);
            while (m.find()) {
                assertThat(root.resolve(m.group())).as(m.group()).isRegularFile();
            }
        }
    }

    static String[] concat(String[] a, String... b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
