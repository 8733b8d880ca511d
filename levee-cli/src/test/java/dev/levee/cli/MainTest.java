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
            limiter --id l1 --drain-grace -1s              | must be positive
            limiter --id l1 --shutdown-deadline 0s          | must be positive
            client --list-grace later                      | not a duration
            client --check-deadline 0ms                    | must be positive
            client --check-deadline soon                   | not a duration
            gateway --backend 127.0.0.1:9 --list-grace later | not a duration
            gateway --backend 127.0.0.1:9 --list-grace -3s | --list-grace
            gateway --backend 127.0.0.1:9 --check-deadline 0s | must be positive
            client --shutdown-deadline 0ms                  | must be positive
            observer --shutdown-deadline never              | not a duration
            demo --gateways 9                               | --gateways must be 1-8
            gateway --backend 127.0.0.1:9 --no-enforce --etcd http://127.0.0.1:1 | --etcd needs --principals FILE
            """)
    void badFlagsGetAClearMessage(String line, String named) {
        Run r = run(line.trim().split("\\s+"));
        assertThat(r.status()).isNotZero();
        assertThat(r.err()).contains(named).doesNotContain("\tat ");
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

    @Test
    void gatewayClientDeadlineFlagsReachTheGatewaysSettingsWithDocumentedDefaults() {
        GatewayCommand defaults = new GatewayCommand();
        new picocli.CommandLine(defaults).parseArgs("--backend", "127.0.0.1:9", "--no-enforce");
        dev.levee.gateway.GatewayService.Options d = defaults.options();
        assertThat(d.clientDeadlines()).isEqualTo(dev.levee.gateway.GatewayService.ClientDeadlines.DEFAULTS);
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
        dev.levee.gateway.GatewayService.Options o = set.options();
        assertThat(o.clientDeadlines()).isEqualTo(new dev.levee.gateway.GatewayService.ClientDeadlines(
                java.time.Duration.ofSeconds(5), java.time.Duration.ofSeconds(7), 2048, java.time.Duration.ofSeconds(9)));
        assertThat(o.continueTimeout()).isEqualTo(java.time.Duration.ofMillis(250));
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
        assertThat(tooLong.err()).contains("clock skew must lie between 1s and 24h");
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

    @Test
    void gatewaySiteLeaseFlagsReachTheKeeperWithDocumentedDefaults() throws Exception {
        Path p = write("principals.yaml", "accounts: {}\n");
        GatewayCommand defaults = new GatewayCommand();
        new picocli.CommandLine(defaults).parseArgs("--backend", "127.0.0.1:9", "--no-enforce", "--principals", p.toString(),
                "--listen", "127.0.0.1:9100", "--etcd", "http://127.0.0.1:2379,http://127.0.0.1:22379");
        dev.levee.gateway.SiteSettings site = defaults.options().governance().site();
        assertThat(site.etcdEndpoints()).containsExactly("http://127.0.0.1:2379", "http://127.0.0.1:22379");
        assertThat(site.prefix()).isEqualTo("/levee");
        assertThat(site.keeper()).isEqualTo(new dev.levee.gateway.site.ShareKeeper.Settings("127.0.0.1:9100",
                java.time.Duration.ofSeconds(5), java.time.Duration.ofSeconds(1), 0.01, java.time.Duration.ofMillis(100),
                java.time.Duration.ofSeconds(1), 3));
        GatewayCommand set = new GatewayCommand();
        new picocli.CommandLine(set).parseArgs("--backend", "127.0.0.1:9", "--no-enforce", "--principals", p.toString(),
                "--etcd", "http://127.0.0.1:2379", "--gateway-id", "gw-7", "--lease-ttl", "9s", "--renew-interval", "3s",
                "--lease-drift", "2%", "--lease-margin", "250ms", "--etcd-prefix", "/site");
        dev.levee.gateway.SiteSettings s2 = set.options().governance().site();
        assertThat(s2.keeper()).isEqualTo(new dev.levee.gateway.site.ShareKeeper.Settings("gw-7",
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
}
