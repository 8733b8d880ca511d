package dev.levee.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.levee.quota.PrefixRule;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaConfigException;
import dev.levee.quota.ResourceQuotas;
import dev.levee.s3.S3Operation;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Smaller rules of the YAML reading, shown on inline documents. */
class QuotaYamlRulesTest {

    private static final String DEFAULT = "default: {rate: 1000, burst: 500}\n";

    private static List<String> errors(String yaml) {
        return catchThrowableOfType(QuotaConfigException.class, () -> QuotaConfigLoader.parse(yaml, "q.yaml")).errors();
    }

    private static QuotaConfig parse(String yaml) {
        return QuotaConfigLoader.parse(yaml, "q.yaml");
    }

    @Test
    void factorIsOptionalAndDefaultsToOne() {
        assertThat(parse(DEFAULT).factor()).isEqualTo(1);
        assertThat(parse("factor: 3\n" + DEFAULT).factor()).isEqualTo(3);
    }

    @Test
    void anEmptyDocumentLacksOnlyTheDefault() {
        assertThat(errors("")).containsExactly("q.yaml: default: required: the quota for requests that match nothing more specific");
        assertThat(errors("# nothing\n")).hasSize(1);
    }

    @Test
    void theRootMustBeAMapping() {
        assertThat(errors("- default\n")).containsExactly(
                "q.yaml:1:1: expected a mapping with factor, default, methods_default and resources, got a list");
    }

    @Test
    void decimalRatesAreAllowedAndBurstMustBeIntegral() {
        assertThat(parse("default: {rate: 27.5, burst: 3}\n").defaultQuota()).isEqualTo(new Quota(27.5, 3));
        assertThat(parse("default: {rate: .5, burst: +3}\n").defaultQuota()).isEqualTo(new Quota(0.5, 3));
        assertThat(parse("default: {rate: 1e3, burst: 0}\n").defaultQuota()).isEqualTo(new Quota(1000, 0));
        assertThat(parse("default: {rate: 0, burst: 0}\n").defaultQuota().blocksAll()).isTrue();
        assertThat(errors("default: {rate: 1, burst: 10.0}\n"))
                .containsExactly("q.yaml:1:27: default.burst: expected an integer ≥ 0 (requests), got 10.0");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
        rate: 1e400, burst: 1   | default.rate: expected a finite number ≥ 0 (requests per second), got 1e400 (too large)
        rate: 1e-400, burst: 1  | default.rate: expected a finite number ≥ 0 (requests per second), got 1e-400 (too small; write 0 to block every request)
        rate: .nan, burst: 1    | default.rate: expected a finite number ≥ 0 (requests per second), got .nan
        rate: 0123, burst: 1    | default.rate: expected a finite number ≥ 0 (requests per second), got 0123
        rate: 1_000, burst: 1   | default.rate: expected a finite number ≥ 0 (requests per second), got 1_000
        rate: 1, burst: 3000000000 | default.burst: expected an integer ≥ 0 (requests), got 3000000000 (out of range)
        rate: 1, burst: ~       | default.burst: expected an integer ≥ 0 (requests), got an empty value
        rate: 1, burst: {a: 1}  | default.burst: expected an integer ≥ 0 (requests), got a mapping
        rate: 1, burst: 2, brust: 2 | default.brust: unknown field 'brust'; expected one of rate, burst, mode, lease (did you mean burst?)
        """)
    void rejectsNumbersThatAreNotPlainDecimals(String quota, String expected) {
        assertThat(errors("default: {" + quota + "}\n")).singleElement().asString().endsWith(expected);
    }

    @Test
    void anEmptyPrefixMustBeWrittenAsAnEmptyString() {
        String resource = DEFAULT + "resources:\n  b:\n    prefixes:\n      - prefix:\n        quota: {rate: 1, burst: 1}\n";
        assertThat(errors(resource)).containsExactly(
                "q.yaml:5:16: resources.b.prefixes[0].prefix: expected a string, got an empty value; write \"\" to match every key");
        assertThat(parse(resource.replace("prefix:\n", "prefix: ''\n")).resources().get("b").prefixes())
                .containsExactly(PrefixRule.of("", new Quota(1, 1)));
    }

    @Test
    void emptyCollectionsAreAllowedButAnEmptyQuotaIsNot() {
        QuotaConfig config = parse(DEFAULT + "methods_default:\nresources:\n  b:\n");
        assertThat(config.methodsDefault()).isEmpty();
        assertThat(config.resources()).containsEntry("b", new ResourceQuotas(null, List.of()));
        assertThat(errors(DEFAULT + "resources:\n  b:\n    quota:\n")).containsExactly(
                "q.yaml:4:11: resources.b.quota: expected a mapping with rate (requests per second) and burst (requests), "
                        + "got an empty value");
    }

    @Test
    void listObjectsV2MayBeConfiguredBesideListObjects() {
        QuotaConfig config = parse(DEFAULT + "methods_default:\n  ListObjects: {rate: 1, burst: 1}\n  ListObjectsV2: {rate: 2, burst: 2}\n");
        assertThat(config.methodsDefault()).containsOnlyKeys(S3Operation.ListObjects, S3Operation.ListObjectsV2);
    }

    @Test
    void bucketNamesThatLookLikeOtherTypesStayStrings() {
        QuotaConfig config = parse(DEFAULT + "resources:\n  true: {quota: {rate: 1, burst: 1}}\n  123: {quota: {rate: 2, burst: 2}}\n");
        assertThat(config.resources()).containsOnlyKeys("true", "123");
    }

    @Test
    void problemsInOneEntryDoNotHideProblemsInOthers() {
        String yaml = "factor: 0\n" + DEFAULT + """
            resources:
              b:
                prefixes:
                  - prefix: "x*y"
                    quota: {rate: -1, burst: 1}
                  - quota: {rate: 1, burst: 1}
                  - prefix: "z"
                    methods: {Foo: {rate: 1, burst: 1}}
                  - "bare string"
                  - prefix: "x*y"
                    quota: {rate: 1, burst: 1}
            """;
        assertThat(errors(yaml)).containsExactly(
                "q.yaml:1:1: factor: expected an integer ≥ 1 (the limiter group size), got 0",
                "q.yaml:6:9: resources.b.prefixes[0] (prefix \"x*y\"): '*' is only allowed at the end",
                "q.yaml:7:23: resources.b.prefixes[0].quota.rate (prefix \"x*y\"): expected a finite number ≥ 0 "
                        + "(requests per second), got -1",
                "q.yaml:8:9: resources.b.prefixes[1].prefix: required: the key prefix the entry applies to (\"\" for every key)",
                "q.yaml:10:19: resources.b.prefixes[2].methods.Foo (prefix \"z\"): unknown operation 'Foo'; "
                        + "operations use AWS API names such as GetObject",
                "q.yaml:11:9: resources.b.prefixes[3]: expected a mapping with prefix, quota and methods, got 'bare string'",
                "q.yaml:12:9: resources.b.prefixes[4] (prefix \"x*y\"): '*' is only allowed at the end",
                "q.yaml:12:9: resources.b.prefixes[4] (prefix \"x*y\"): duplicate prefix: already configured at prefixes[0]");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', quoteCharacter = '`', textBlock = """
        `default: {rate: 1, burst: 1`          | q.yaml:1:28: malformed YAML: expected ',' or '}', but got <stream end> (while parsing a flow mapping started at line 1, column 10)
        `default:\\n\\trate: 1`                | q.yaml:2:1: malformed YAML: found character '\\t(TAB)' that cannot start any token. (Do not use \\t(TAB) for indentation) (while scanning for the next token)
        `? [a, b]\\n: 1`                       | q.yaml:1:4: malformed YAML: mapping keys must be plain scalars (complex keys are not supported)
        `default: "unterminated`               | q.yaml:1:23: malformed YAML: found unexpected end of stream (while scanning a quoted scalar started at line 1, column 10)
        """)
    void syntaxErrorsCarryLineAndColumnAndNoClassNames(String yaml, String expected) {
        List<String> errors = errors(yaml.replace("\\n", "\n").replace("\\t", "\t"));
        assertThat(errors).containsExactly(expected);
        assertThat(errors.get(0)).doesNotContainPattern("[a-z]+\\.[a-z]+\\.[A-Z]|Exception|\\n");
    }

    @Test
    void writesUnusualNamesAndRatesSoThatTheyReadBackEqual() {
        QuotaConfig config = QuotaConfig.builder()
                .factor(7)
                .defaultQuota(new Quota(1e-5, 0))
                .methodDefault(S3Operation.DeleteObjects, new Quota(27.5, 3))
                .resource("true", ResourceQuotas.of(new Quota(1e20, 1)))
                .resource("123", new ResourceQuotas(null, List.of(
                        PrefixRule.of("2024", new Quota(0, 0)),
                        PrefixRule.of("a: b #c", new Quota(1, 1)),
                        PrefixRule.of("'\"\\\u0001\t\n\u0085\u2028\uFEFF😀*", new Quota(2, 2)),
                        new PrefixRule("", null, Map.of(S3Operation.PutObject, new Quota(3, 3), S3Operation.HeadObject, new Quota(4, 4))))))
                .resource("logs.example.com", new ResourceQuotas(null, List.of()))
                .build();
        assertThat(QuotaConfigLoader.parse(QuotaConfigLoader.toYaml(config), "written")).isEqualTo(config);
    }
}
