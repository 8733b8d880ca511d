package dev.levee.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.levee.quota.PrefixRule;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaConfigException;
import dev.levee.quota.ResourceQuotas;
import dev.levee.s3.S3Operation;
import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The single-file form (docs/design.md §4): the example, the broken fixtures, files. */
class QuotaConfigLoaderTest {

    static Path fixture(String name) {
        try {
            return Path.of(Objects.requireNonNull(QuotaConfigLoaderTest.class.getResource("/" + name), name).toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Parses a broken fixture, named in messages by its file name, and returns the messages. */
    static List<String> errors(String name) throws IOException {
        String text = Files.readString(fixture("broken/" + name));
        return catchThrowableOfType(QuotaConfigException.class, () -> QuotaConfigLoader.parse(text, name)).errors();
    }

    static QuotaConfig seedExample() {
        return QuotaConfig.builder()
                .factor(4)
                .defaultQuota(new Quota(1000, 500))
                .methodDefault(S3Operation.ListObjects, new Quota(250, 250))
                .resource("example-bucket", new ResourceQuotas(new Quota(2000, 250), List.of(
                        PrefixRule.of("photos/2024", new Quota(1700, 300)),
                        PrefixRule.of("uploads/*", new Quota(1700, 300)),
                        new PrefixRule("", new Quota(1700, 300), Map.of(S3Operation.PutObject, new Quota(100, 25))))))
                .build();
    }

    @Test
    void aSingleFileOfEightyThousandBucketsAboveSnakeYamlsThreeMebiCodePointDefaultParses() {
        StringBuilder b = new StringBuilder("default: {rate: 1000, burst: 100}\nresources:\n");
        for (int i = 0; i < 80_000; i++) {
            b.append("  bucket-").append(i).append(": {quota: {rate: 2, burst: 1}}\n");
        }
        assertThat(b.length()).isGreaterThan(3 << 20);
        assertThat(QuotaConfigLoader.parse(b.toString(), "big.yaml").resources()).hasSize(80_000);
    }

    @Test
    void loadsTheSeedExample() {
        assertThat(QuotaConfigLoader.load(fixture("good/example-quotas.yaml"))).isEqualTo(seedExample());
    }

    @Test
    void shipsTheSameExampleForTheDocumentation() throws IOException {
        try (InputStream shipped = QuotaConfigLoader.class.getResourceAsStream(QuotaConfigLoader.EXAMPLE_RESOURCE)) {
            assertThat(shipped).isNotNull();
            assertThat(shipped.readAllBytes()).isEqualTo(Files.readAllBytes(fixture("good/example-quotas.yaml")));
        }
    }

    @Test
    void writesTheExampleSoThatItReadsBackEqual() {
        String yaml = QuotaConfigLoader.toYaml(seedExample());
        assertThat(yaml).startsWith("# Levee quotas").contains("  - prefix: \"uploads/*\"\n");
        assertThat(QuotaConfigLoader.parse(yaml, "written")).isEqualTo(seedExample());
    }

    // ---- broken fixtures: one test each, asserting every message in full

    @Test
    void misspelledKeysAreNamedWithTheirPathAndASuggestion() throws IOException {
        assertThat(errors("misspelled_key.yaml")).containsExactly(
                "misspelled_key.yaml:2:1: methods_defaults: unknown field 'methods_defaults'; expected one of factor, mode, lease, default, "
                        + "methods_default, resources (did you mean methods_default?)",
                "misspelled_key.yaml:8:9: resources.example-bucket.prefixes[0].qouta (prefix \"photos/2024\"): unknown field "
                        + "'qouta'; expected one of prefix, quota, methods (did you mean quota?)");
    }

    @Test
    void unknownOperationsAreNamedWithTheirPath() throws IOException {
        assertThat(errors("unknown_operation.yaml")).containsExactly(
                "unknown_operation.yaml:3:3: methods_default.ListObject: unknown operation 'ListObject' "
                        + "(did you mean ListObjects?); operations use AWS API names such as GetObject",
                "unknown_operation.yaml:4:3: methods_default.Unknown: operation Unknown cannot be configured: "
                        + "unclassified requests are limited by the resource-level quotas",
                "unknown_operation.yaml:10:11: resources.example-bucket.prefixes[0].methods.PutObjects (prefix \"\"): "
                        + "unknown operation 'PutObjects' (did you mean PutObject?); operations use AWS API names such as GetObject",
                "unknown_operation.yaml:11:11: resources.example-bucket.prefixes[0].methods.putobject (prefix \"\"): "
                        + "unknown operation 'putobject' (did you mean PutObject?); operations use AWS API names such as GetObject");
    }

    @Test
    void aStarThatIsNotTrailingIsRejected() throws IOException {
        assertThat(errors("wildcard_not_trailing.yaml")).containsExactly(
                "wildcard_not_trailing.yaml:9:9: resources.example-bucket.prefixes[2] (prefix \"up*loads\"): "
                        + "'*' is only allowed at the end",
                "wildcard_not_trailing.yaml:11:9: resources.example-bucket.prefixes[3] (prefix \"logs/**\"): "
                        + "only a single trailing '*' is allowed");
    }

    @Test
    void negativeNumbersAreRejected() throws IOException {
        assertThat(errors("negative_numbers.yaml")).containsExactly(
                "negative_numbers.yaml:1:1: factor: expected an integer ≥ 1 (the limiter group size), got -4",
                "negative_numbers.yaml:3:9: default.rate: expected a finite number ≥ 0 (requests per second), got -1000",
                "negative_numbers.yaml:4:10: default.burst: expected an integer ≥ 0 (requests), got -500",
                "negative_numbers.yaml:7:19: resources.example-bucket.quota.rate: expected a finite number ≥ 0 "
                        + "(requests per second), got -0.5");
    }

    @Test
    void duplicatePrefixesAreRejectedButAWildcardBesideItsPrefixIsNot() throws IOException {
        assertThat(errors("duplicate_prefixes.yaml")).containsExactly(
                "duplicate_prefixes.yaml:9:9: resources.example-bucket.prefixes[2] (prefix \"photos/\"): "
                        + "duplicate prefix: already configured at prefixes[0]");
    }

    @Test
    void malformedYamlIsReportedWithLineAndColumn() throws IOException {
        assertThat(errors("malformed.yaml")).containsExactly(
                "malformed.yaml:3:9: malformed YAML: mapping values are not allowed here (check the indentation)");
    }

    @Test
    void wrongTypesAreNamedWithWhatWasExpectedAndFound() throws IOException {
        assertThat(errors("wrong_types.yaml")).containsExactly(
                "wrong_types.yaml:1:9: factor: expected an integer ≥ 1 (the limiter group size), got 'four'",
                "wrong_types.yaml:3:9: default.rate: expected a finite number ≥ 0 (requests per second), got the string '1000'",
                "wrong_types.yaml:4:10: default.burst: expected an integer ≥ 0 (requests), got 'ten'",
                "wrong_types.yaml:6:35: methods_default.ListObjects.burst: expected an integer ≥ 0 (requests), got 27.5",
                "wrong_types.yaml:9:12: resources.example-bucket.quota: expected a mapping with rate (requests per second) "
                        + "and burst (requests), got a list",
                "wrong_types.yaml:11:17: resources.example-bucket.prefixes[0].prefix: expected a string, got 2024; quote it: \"2024\"",
                "wrong_types.yaml:13:17: resources.example-bucket.prefixes[1].prefix: expected a string, "
                        + "got 'yes' (read as a boolean); quote it: \"yes\"",
                "wrong_types.yaml:14:23: resources.example-bucket.prefixes[1].quota.rate: expected a finite number ≥ 0 "
                        + "(requests per second), got .inf",
                "wrong_types.yaml:14:36: resources.example-bucket.prefixes[1].quota.burst: expected an integer ≥ 0 "
                        + "(requests), got 0x10",
                "wrong_types.yaml:17:7: resources.other-bucket.prefixes: expected a list of entries ('- prefix: ...'), "
                        + "got a mapping");
    }

    @Test
    void duplicateYamlKeysAreRejectedAtEveryLevel() throws IOException {
        assertThat(errors("duplicate_keys.yaml")).containsExactly(
                "duplicate_keys.yaml:7:7: resources.example-bucket.quota.rate: duplicate key \"rate\" (first at line 5)",
                "duplicate_keys.yaml:8:1: default: duplicate key \"default\" (first at line 1)");
    }

    @Test
    void missingFieldsAreNamed() throws IOException {
        assertThat(errors("missing_fields.yaml")).containsExactly(
                "missing_fields.yaml:1:1: default: required: the quota for requests that match nothing more specific",
                "missing_fields.yaml:4:12: resources.example-bucket.quota.burst: required (requests)",
                "missing_fields.yaml:6:9: resources.example-bucket.prefixes[0].prefix: required: the key prefix the entry "
                        + "applies to (\"\" for every key)",
                "missing_fields.yaml:7:9: resources.example-bucket.prefixes[1] (prefix \"logs/\"): needs a quota or methods");
    }

    @Test
    void badResourceNamesAreQuotedInThePath() throws IOException {
        assertThat(errors("bad_resource_names.yaml")).containsExactly(
                "bad_resource_names.yaml:3:3: resources[\"a/b\"]: resource name \"a/b\" must not contain '/'",
                "bad_resource_names.yaml:4:3: resources[\"\"]: resource name must not be empty",
                "bad_resource_names.yaml:5:3: resources[\"tab\\there\"]: resource name \"tab\\there\" must not contain "
                        + "control characters",
                "bad_resource_names.yaml:7:29: resources[\"logs.example.com\"].quota.burst: expected an integer ≥ 0 "
                        + "(requests), got the string '1'");
    }

    @Test
    void aliasesCustomTagsAndExtraDocumentsAreRejected() throws IOException {
        assertThat(errors("yaml_features.yaml")).containsExactly(
                "yaml_features.yaml:3:16: methods_default.ListObjects: YAML aliases (*base) are not supported; write the value out",
                "yaml_features.yaml:5:19: resources.example-bucket: YAML tag !bucket is not supported",
                "yaml_features.yaml:8:1: more than one YAML document ('---'); a quota file holds exactly one");
    }

    // ---- files

    @Test
    void aMissingFileIsNamed(@TempDir Path dir) {
        Path file = dir.resolve("quotas.yaml");
        assertThat(catchThrowableOfType(QuotaConfigException.class, () -> QuotaConfigLoader.load(file)).errors())
                .containsExactly(file + ": cannot read the file: no such file");
    }

    @Test
    void aDirectoryIsNamed(@TempDir Path dir) {
        assertThat(catchThrowableOfType(QuotaConfigException.class, () -> QuotaConfigLoader.load(dir)).errors())
                .containsExactly(dir + ": cannot read the file: it is a directory");
    }

    @Test
    void aFileThatIsNotUtf8IsNamed(@TempDir Path dir) throws IOException {
        Path file = Files.write(dir.resolve("latin1.yaml"), new byte[] {'d', ':', ' ', (byte) 0xE9, '\n'});
        QuotaConfigException e = catchThrowableOfType(QuotaConfigException.class, () -> QuotaConfigLoader.load(file));
        assertThat(e.errors()).containsExactly(file + ": cannot read the file: not valid UTF-8");
        assertThat(e.getMessage()).doesNotContain("Exception");
    }

    @Test
    void errorsOfAFileCarryItsPath(@TempDir Path dir) throws IOException {
        Path file = Files.writeString(dir.resolve("q.yaml"), "default: {rate: 1, burst: -1}\n");
        assertThat(catchThrowableOfType(QuotaConfigException.class, () -> QuotaConfigLoader.load(file)).errors())
                .containsExactly(file + ":1:27: default.burst: expected an integer ≥ 0 (requests), got -1");
    }
}
