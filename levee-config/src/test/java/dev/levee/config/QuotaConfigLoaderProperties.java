package dev.levee.config;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.levee.s3.S3Operation;
import java.io.IOException;
import dev.levee.quota.PrefixRule;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaConfigException;
import dev.levee.quota.QuotaRules;
import dev.levee.quota.ResourceQuotas;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/** Invariants of reading and writing: round trip, and no exception but {@link QuotaConfigException}. */
class QuotaConfigLoaderProperties {

    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    @Property(tries = 300)
    void writtenConfigurationsReadBackEqual(@ForAll("configs") QuotaConfig config) {
        assertThat(QuotaConfigLoader.parse(QuotaConfigLoader.toYaml(config), "written")).isEqualTo(config);
    }

    @Property(tries = 3000)
    void anyTextEitherParsesOrFailsWithCleanMessages(@ForAll("yamlish") String text) {
        try {
            QuotaConfigLoader.parse(text, "q.yaml");
        } catch (QuotaConfigException e) {
            assertThat(e.errors()).isNotEmpty().allSatisfy(message -> assertThat(message)
                    .startsWith("q.yaml")
                    .doesNotContain("\n", "Exception", "com.fasterxml", "org.yaml", "java.")
                    .doesNotContainPattern("\\bat [a-z]+\\."));
        }
    }

    @Provide
    Arbitrary<String> yamlish() {
        Arbitrary<String> fragments = Arbitraries.of("default", "rate", "burst", "resources", "prefixes", "prefix", "quota",
                "methods", "methods_default", "factor", "PutObject", ": ", ":", "\n", "  ", "- ", "{", "}", "[", "]", ",", "\"",
                "'", "#", "&a ", "*a", "!t ", "!!str ", "---\n", "1", "-1", "2.5", ".inf", "~", "yes", "\t", "?", "|", ">",
                "\\", "é", "\u0000", "\uD800", "%YAML 1.1\n", "@", "`");
        return Arbitraries.oneOf(
                fragments.list().ofMaxSize(40).map(parts -> String.join("", parts)),
                Arbitraries.strings().ofMaxLength(60));
    }

    @Provide
    Arbitrary<QuotaConfig> configs() {
        Arbitrary<Quota> quotas = Combinators.combine(
                        Arbitraries.oneOf(Arbitraries.integers().between(0, 100_000).map(Integer::doubleValue),
                                Arbitraries.doubles().between(0, 1e9), Arbitraries.of(1e-9, 27.5, 1e20, Double.MIN_VALUE)),
                        Arbitraries.integers().between(0, Integer.MAX_VALUE))
                .as(Quota::new);
        Arbitrary<S3Operation> ops = Arbitraries.of(S3Operation.class).filter(op -> op != S3Operation.Unknown);
        Arbitrary<Map<S3Operation, Quota>> methods = Arbitraries.maps(ops, quotas).ofMaxSize(3);
        Arbitrary<String> texts = Arbitraries.oneOf(
                Arbitraries.strings().ofMaxLength(20),
                Arbitraries.strings().withChars("ab/:#-'\" *.~!&{}[]").ofMaxLength(8),
                Arbitraries.of("true", "null", "~", "123", "1.5", "yes", "", " ", "-", "?", ".inf", "0x10", "#"));
        Arbitrary<PrefixRule> rules = Combinators.combine(texts.map(t -> t.replace("*", "")), Arbitraries.of(true, false),
                        quotas.injectNull(0.3), methods)
                .filter((literal, star, quota, m) -> quota != null || !m.isEmpty())
                .as((literal, star, quota, m) -> new PrefixRule(star ? literal + "*" : literal, quota, m));
        Arbitrary<ResourceQuotas> resources = Combinators.combine(quotas.injectNull(0.5),
                        rules.list().ofMaxSize(4).uniqueElements(PrefixRule::prefix))
                .as(ResourceQuotas::new)
                .filter(rq -> QuotaRules.checkResource("r", rq, "").isEmpty());
        Arbitrary<String> names = texts.filter(n -> QuotaRules.checkResourceName(n, "").isEmpty());
        return Combinators.combine(Arbitraries.integers().between(1, 64), quotas, methods,
                        Arbitraries.maps(names, resources).ofMaxSize(3))
                .as(QuotaConfig::of);
    }

    /**
     * Splits a written file into the values of the etcd layout (docs/design.md §4 table) and reads each
     * with its per-key parser: together they hold the same configuration.
     */
    @Property(tries = 200)
    void perKeyFormsReadWhatTheSingleFileFormHolds(@ForAll("configs") QuotaConfig config) throws IOException {
        JsonNode file = YAML.readTree(QuotaConfigLoader.toYaml(config));
        QuotaConfig.Builder fromKeys = QuotaConfig.builder()
                .factor(QuotaConfigLoader.parseFactor(YAML.writeValueAsString(file.get("factor")), "/levee/factor"))
                .defaultQuota(QuotaConfigLoader.parseQuota(YAML.writeValueAsString(file.get("default")), "/levee/quotas/default"));
        if (file.has("methods_default")) {
            fromKeys.methodsDefault(QuotaConfigLoader.parseMethods(
                    YAML.writeValueAsString(file.get("methods_default")), "/levee/quotas/methods_default"));
        }
        if (file.has("resources")) {
            for (Map.Entry<String, JsonNode> e : file.get("resources").properties()) {
                fromKeys.resource(e.getKey(), QuotaConfigLoader.parseResource(
                        e.getKey(), YAML.writeValueAsString(e.getValue()), "/levee/resources/" + e.getKey()));
            }
        }
        assertThat(fromKeys.build()).isEqualTo(config);
    }
}
