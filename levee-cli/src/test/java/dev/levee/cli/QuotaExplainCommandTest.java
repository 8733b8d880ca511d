package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.levee.runtime.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code levee quota explain} through the command line: the request forms, the output, and bad input refused
 * with one error line and one hint line, status 2 (its agreement with real limiters: levee-it QuotaExplainIT).
 */
class QuotaExplainCommandTest {

    @TempDir
    Path dir;

    Path quotas;

    @BeforeEach
    void writeQuotas() throws Exception {
        quotas = dir.resolve("q.yaml");
        Files.writeString(quotas, """
                factor: 4
                default: {rate: 1000, burst: 500}
                methods_default:
                  CreateMultipartUpload: {rate: 40, burst: 4}
                resources:
                  example-bucket:
                    prefixes:
                      - {prefix: "uploads/*", quota: {rate: 1700, burst: 300}}
                      - prefix: ""
                        quota: {rate: 1700, burst: 300}
                        methods: {PutObject: {rate: 100, burst: 25}}
                """);
    }

    private MainTest.Run explain(String... args) {
        List<String> all = new ArrayList<>(List.of("quota", "explain", "--quotas", quotas.toString()));
        all.addAll(List.of(args));
        return MainTest.run(all.toArray(String[]::new));
    }

    private static JsonNode json(MainTest.Run r) throws Exception {
        assertThat(r.status()).as(r.err()).isZero();
        return Json.MAPPER.readTree(r.out());
    }

    @Test
    void anS3UriTakesTheKeyAsWritten() throws Exception {
        JsonNode x = json(explain("--json", "PUT", "s3://example-bucket/uploads/100% a+b?.bin"));

        assertThat(x.at("/classification/resource").asText()).isEqualTo("example-bucket");
        assertThat(x.at("/classification/key").asText()).isEqualTo("uploads/100% a+b?.bin");
        assertThat(x.at("/classification/operation").asText()).isEqualTo("PutObject");
        assertThat(x.at("/match/level").asText()).isEqualTo("prefix");
        assertThat(x.at("/match/prefix").asText()).isEqualTo("uploads/*");
        assertThat(x.at("/limitKey").asText()).isEqualTo("prefix:example-bucket/uploads/*@uploads/100% a+b?.bin");
        assertThat(x.at("/g").asInt()).isEqualTo(4);
        assertThat(x.at("/perLimiter/rate").asDouble()).isEqualTo(425.0);
        assertThat(x.at("/perLimiter/burst").asInt()).isEqualTo(300);
        assertThat(x.at("/perLimiter/emissionIntervalNs").asLong()).isEqualTo(2_352_942L); // ceil(4e9 / 1700)
        assertThat(x.at("/group").isNull()).isTrue();
    }

    @Test
    void aShadowQuotaIsNamedWithTheQuotaThatEnforcesInstead() throws Exception {
        Files.writeString(quotas, """
                factor: 4
                default: {rate: 1000, burst: 500}
                resources:
                  example-bucket:
                    prefixes:
                      - {prefix: "uploads/*", quota: {rate: 50, burst: 5, mode: shadow}}
                  trial-bucket: {quota: {rate: 10, burst: 1, mode: shadow}}
                """);
        JsonNode x = json(explain("--json", "PUT", "s3://example-bucket/uploads/a.bin"));
        assertThat(x.at("/match/level").asText()).isEqualTo("prefix");
        assertThat(x.at("/mode").asText()).isEqualTo("shadow");
        assertThat(x.at("/enforced/level").asText()).isEqualTo("default");
        assertThat(x.at("/enforced/rate").asDouble()).isEqualTo(1000.0);
        assertThat(json(explain("--json", "GET", "s3://example-bucket/other")).at("/mode").asText()).isEqualTo("enforce");

        MainTest.Run text = explain("PUT", "s3://example-bucket/uploads/a.bin");
        assertThat(text.out()).contains("mode        shadow: decided, logged and counted (would_reject), never refuses")
                .contains("shadow key  shadow:prefix:example-bucket/uploads/*@uploads/a.bin")
                .contains("enforced    default: default, key default:example-bucket, rate 1000/s, burst 500");
        assertThat(text.out().lines().filter(l -> l.startsWith("mode ") || l.startsWith("enforced "))
                .mapToInt(String::length).max().orElseThrow()).isLessThanOrEqualTo(80);
        assertThat(explain("GET", "s3://trial-bucket/k").out()).contains("enforced    default: default");

        Files.writeString(quotas, """
                mode: shadow
                default: {rate: 1000, burst: 500}
                """);
        assertThat(explain("GET", "s3://any-bucket/k").out())
                .contains("enforced    nothing: only shadow quotas apply, every request is admitted");
    }

    @Test
    void aVirtualHostedRequestAsNginxSeesItAndAGroupGivenByHand() throws Exception {
        MainTest.Run r = explain("--base-domain", "s3.example", "--method", "POST", "--host", "example-bucket.s3.example",
                "--uri", "/big.iso?uploads", "--limiters", "l1,l2,l3,l4,l5,l6");

        assertThat(r.status()).as(r.err()).isZero();
        assertThat(r.out())
                .contains("classified  resource=example-bucket key=big.iso operation=CreateMultipartUpload")
                .contains("matched     prefix: resources.\"example-bucket\".prefixes[1] (prefix \"\").quota")
                .contains("limit key   prefix:example-bucket/")
                .contains("per limiter g=4: rate 425/s")
                .contains("group       g = min(DF 4, 6 active) = 4, by HRW over --limiters:")
                .contains("spill-over  ");
        assertThat(r.out().lines().filter(l -> l.matches(" {12}\\d\\. l\\d"))).hasSize(4);
        assertThat(r.out().lines()).allSatisfy(l -> assertThat(l.length()).isLessThanOrEqualTo(80));
    }

    /**
     * Issue 23 item 2: explain says whether the request's counter would be leased — eligible by the quota file (its
     * own {@code lease}, else the top-level one, else the default) or never ({@code lease: false}, or only shadow
     * quotas) — and above which rate; the lines it printed before are unchanged.
     */
    @Test
    void explainSaysWhetherTheKeyWouldBeLeasedAndAboveWhichRate() throws Exception {
        MainTest.Run before = explain("GET", "s3://example-bucket/uploads/a.bin");
        assertThat(before.status()).as(before.err()).isZero();
        assertThat(before.out()).contains("""
                limit key   prefix:example-bucket/uploads/*@uploads/a.bin
                quota       rate 1700/s for the group, burst 300 per limiter
                lease       eligible: no lease setting, the default (true)
                            never leased: τ + T = 705 ms, over a lease's 200 ms
                per limiter g=4: rate 425/s, burst 300 (GCRA: T = 2352942 ns, capacity 300)
                """);

        Files.writeString(quotas, """
                factor: 4
                lease: false
                default: {rate: 1000, burst: 500}
                resources:
                  example-bucket:
                    prefixes:
                      - {prefix: "uploads/*", quota: {rate: 1700, burst: 30, lease: true}}
                      - {prefix: "logs/", quota: {rate: 1700, burst: 300, mode: shadow}}
                  audit:
                    quota: {rate: 10, burst: 1, lease: false}
                  hotb:
                    quota: {rate: 20000, burst: 100, lease: true}
                """);
        MainTest.Run hot = explain("--lease-threshold", "250.5", "GET", "s3://example-bucket/uploads/a.bin");
        assertThat(hot.out()).contains("""
                lease       eligible: lease: true on the matched quota
                            leased when hot: above 250.5 req/s at a levee client
                            NGINX batches: no, the bucket has prefix entries (NGINX tells requests apart by bucket only)
                """);
        assertThat(explain("GET", "s3://example-bucket/k").out()).contains("lease       never: top-level lease: false\n"
                + "per limiter");
        assertThat(explain("GET", "s3://audit/k").out()).contains("lease       never: lease: false on the matched quota\n");
        JsonNode x = json(explain("--json", "GET", "s3://audit/k"));
        assertThat(x.at("/lease/eligible").asBoolean()).isFalse();
        assertThat(x.at("/lease/setting").asText()).isEqualTo("resources.\"audit\".quota");
        assertThat(x.at("/lease/threshold").asDouble()).isEqualTo(100.0);
        JsonNode shadowed = json(explain("--json", "GET", "s3://example-bucket/logs/1"));
        assertThat(shadowed.at("/mode").asText()).isEqualTo("shadow");
        assertThat(shadowed.at("/lease/why").asText()).as("judged on the enforced quota, the default")
                .isEqualTo("top-level lease: false");
        assertThat(hot.out().lines().filter(l -> l.startsWith("lease ") || l.contains("leased when hot")))
                .hasSize(2).allSatisfy(l -> assertThat(l.length()).isLessThanOrEqualTo(80));
        MainTest.Run whole = explain("GET", "s3://hotb/k"); // a bucket quota and no prefixes: one counter per bucket
        assertThat(whole.out()).contains("            NGINX batches: yes, the whole bucket\n");
        // 20 000 req/s over g = 4 with a burst of 100: T 0.2 ms, τ 19.8 ms; a slot lasts until used from 776.7 req/s
        assertThat(whole.out()).contains("""
                            leased when hot: above 776.7 req/s at a levee client
                            (slower, a lease's slots would end unused: g / (T + τ/4))
                """);
        assertThat(hot.out()).doesNotContain("slower");
        assertThat(json(explain("--json", "GET", "s3://hotb/k")).at("/lease/batches").asBoolean()).isTrue();
        assertThat(json(explain("--json", "GET", "s3://hotb/k")).at("/lease/leasedAbove").asDouble())
                .isCloseTo(776.7, org.assertj.core.data.Offset.offset(0.1));
        assertThat(json(explain("--json", "GET", "s3://audit/k")).at("/lease/leasedAbove").asDouble()).isEqualTo(100.0);
        assertThat(json(explain("--json", "GET", "s3://example-bucket/uploads/a.bin")).at("/lease/noBatches").asText())
                .startsWith("the bucket has prefix entries");

        MainTest.Run bad = explain("--lease-threshold", "0", "GET", "s3://b/k");
        assertThat(bad.status()).isEqualTo(QuotaExplainCommand.BAD_INPUT);
        assertThat(bad.err()).contains("--lease-threshold must be a finite number > 0").doesNotContain("\tat ");
        MainTest.Run notANumber = explain("--lease-threshold", "many", "GET", "s3://b/k");
        assertThat(notANumber.status()).isNotZero();
        assertThat(notANumber.err()).contains("--lease-threshold").contains("many").doesNotContain("\tat ");
    }

    @Test
    void fewerLimitersThanTheFactorMakeASmallerGroup() throws Exception {
        JsonNode x = json(explain("--json", "--limiters", "a,b", "--resource", "other", "--key", "k", "--operation",
                "CreateMultipartUpload"));

        assertThat(x.at("/match/level").asText()).isEqualTo("methods_default");
        assertThat(x.at("/g").asInt()).isEqualTo(2);
        assertThat(x.at("/perLimiter/rate").asDouble()).isEqualTo(20.0);
        assertThat(x.at("/group/limiters")).hasSize(2);
    }

    @Test
    void rawExplainsWhatStrictModeRefuses() throws Exception {
        JsonNode x = json(explain("--json", "--raw", "--method", "get", "--uri", "/example-bucket/k"));

        assertThat(x.at("/classification/operation").asText()).isEqualTo("Unknown");
        assertThat(x.at("/match/level").asText()).isEqualTo("prefix");
    }

    @ParameterizedTest(name = "{0}")
    // arguments separated by ';'
    @CsvSource(delimiter = '|', textBlock = """
            unknown method             | FETCH;s3://b/k                              | unknown method 'FETCH'          | GET, HEAD, PUT, POST or DELETE
            method in lower case       | --method;get;--uri;/b/k                     | unknown method 'get'            | did you mean GET?
            bad escape                 | --method;GET;--uri;/b/%ZZ                   | malformed URI                   | %25
            truncated escape           | --method;GET;--uri;/b/a%2                   | malformed URI                   | --raw
            no leading slash           | --method;GET;--uri;b/k                      | must start with '/'             | $request_uri
            raw space                  | --method;GET;--uri;/b/a b                   | malformed URI                   | %20
            empty URI                  | --method;GET;--uri;''                       | malformed URI: empty            | /BUCKET/KEY
            missing bucket in s3 URI   | PUT;s3:///k                                 | missing bucket                  | s3://BUCKET/KEY
            empty s3 URI               | GET;s3://                                   | missing bucket                  | s3://BUCKET/KEY
            missing bucket on service  | --method;PUT;--uri;/                        | missing bucket                  | --uri /BUCKET/KEY
            not an s3 URI              | GET;http://b/k                              | a request is a method and s3:// | --method/--host/--uri
            unknown operation          | --resource;b;--operation;GetObjekt          | unknown operation 'GetObjekt'   | AWS API names
            resource without operation | --resource;b                                | go together                     | --operation
            method without URI         | --method;GET                                | go together                     | --uri
            two request forms          | GET;s3://b/k;--method;GET;--uri;/b/k        | one way only                    | --resource
            no request                 | --json                                      | no request given                | s3://BUCKET/KEY
            bad limiter id             | --limiters;a b;GET;s3://b/k                 | not a limiter id                | comma-separated
            duplicate limiter          | --limiters;a,a;GET;s3://b/k                 | given twice                     | once
            bad base domain            | --base-domain;s3.example:9000;GET;s3://b/k  | --base-domain                   | bare host names
            bad observer               | --observer;http://;GET;s3://b/k             | not an address                  | HOST:PORT
            """)
    void badInputIsRefusedWithOneErrorAndOneHint(String what, String args, String error, String hint) {
        MainTest.Run r = explain(args.replace("''", "").split(";", -1));

        assertThat(r.status()).as(what + ": " + r.err()).isEqualTo(2);
        assertThat(r.out()).isEmpty();
        assertThat(r.err().lines().toList()).as(what).satisfiesExactly(
                l -> assertThat(l).startsWith("levee quota explain: ").contains(error),
                l -> assertThat(l).startsWith("hint: ").contains(hint));
        assertThat(r.err()).doesNotContain("Exception").doesNotContain("\tat ");
    }

    /** Neither a file nor etcd: the embedded defaults, as {@code levee demo} runs with, and said (issue 26 item 9). */
    @Test
    void withoutQuotasItExplainsAgainstTheEmbeddedDefaultsAndSaysSo() {
        MainTest.Run r = MainTest.run("quota", "explain", "GET", "s3://b/k");

        assertThat(r.status()).as(r.err()).isZero();
        assertThat(r.out()).contains("quotas      the embedded default quotas (those of levee demo;")
                .contains("--quotas FILE").contains("--etcd");
        assertThat(r.out()).contains("factor " + Quotas.embedded().factor());
    }

    @Test
    void anUnreachableObserverIsNamed() {
        MainTest.Run r = explain("--observer", "127.0.0.1:1", "GET", "s3://b/k");

        assertThat(r.status()).isEqualTo(1);
        assertThat(r.err()).contains("observer 127.0.0.1:1").doesNotContain("Exception");
    }
}
