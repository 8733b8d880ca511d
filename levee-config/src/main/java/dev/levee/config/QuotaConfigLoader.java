package dev.levee.config;

import dev.levee.quota.ConfigProblem;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaConfigException;
import dev.levee.quota.QuotaRules;
import dev.levee.quota.ResourceQuotas;
import dev.levee.s3.S3Operation;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Reads and writes quota configuration in YAML, strictly (docs/design.md §4).
 *
 * <h2>Forms</h2>
 * The single-file form, used by the embedded default and {@code levee quota import}:
 * <pre>
 * factor: 4                  # optional, default 1: the limiter group size DF (docs/design.md §5)
 * lease: true                # optional, default true: quotas may be leased to clients (per quota too)
 * default: {rate: 1000, burst: 500}
 * methods_default:           # optional
 *   ListObjects: {rate: 250, burst: 250}
 * resources:                 # optional
 *   example-bucket:
 *     quota: {rate: 2000, burst: 250}
 *     prefixes:
 *       - prefix: "photos/2024"
 *         quota: {rate: 1700, burst: 300}
 *       - prefix: ""
 *         methods:
 *           PutObject: {rate: 100, burst: 25}
 * </pre>
 * and the per-key forms of the etcd layout: {@link #parseFactor} for {@code /levee/factor},
 * {@link #parseQuota} for {@code /levee/quotas/default}, {@link #parseMethods} for
 * {@code /levee/quotas/methods_default} and {@link #parseResource} for
 * {@code /levee/resources/<bucket>}. A complete example ships as the class-path resource
 * {@value #EXAMPLE_RESOURCE}.
 *
 * <h2>Strictness</h2>
 * Unknown fields, unknown operation names, duplicate keys, wrong types (a quoted number, a
 * boolean, a fraction where an integer is expected), negative or non-finite numbers, numbers in
 * octal, hexadecimal or with {@code _} separators, YAML aliases, custom tags and several
 * documents in one text are errors. {@code rate} is a decimal ≥ 0 in requests per second;
 * {@code burst} an integer ≥ 0 in requests; both are required in every quota. {@code factor}
 * is optional and defaults to {@code 1} (the etcd layout keeps it in its own key); {@code default}
 * is required. An empty value ({@code methods_default:} with nothing after it) stands for an
 * empty collection where a collection is expected, and is an error where a quota, a number or
 * a prefix is expected.
 *
 * <h2>Errors</h2>
 * Every method either returns a valid value or throws {@link QuotaConfigException}, never
 * another exception type. The exception lists as many problems as one pass finds, in document
 * order, each as {@code source:line:column: path (context): message}, for example
 * <pre>quotas.yaml:12:11: resources.example-bucket.prefixes[1] (prefix "up*loads"): '*' is only allowed at the end</pre>
 * Messages quote values with control characters escaped and never carry stack traces or class
 * names. A syntax error ends the pass; it is reported with its line and column.
 */
public final class QuotaConfigLoader {

    /** The class-path resource holding the example configuration of the documentation. */
    public static final String EXAMPLE_RESOURCE = "/dev/levee/config/example-quotas.yaml";

    private QuotaConfigLoader() {
    }

    /**
     * Parses the single-file form.
     *
     * @param yamlText   the YAML text
     * @param sourceName how messages name the text, such as a file name; {@code "<yaml>"} when
     *                   {@code null} or empty
     * @return the validated configuration
     * @throws QuotaConfigException listing every problem found, if the text is not valid
     * @throws NullPointerException if {@code yamlText} is {@code null}
     */
    public static QuotaConfig parse(String yamlText, String sourceName) {
        Objects.requireNonNull(yamlText, "yamlText");
        QuotaDecoder decoder = new QuotaDecoder(name(sourceName));
        YamlTree.Result read = YamlTree.read(yamlText);
        decoder.addReadProblems(read.problems());
        if (read.syntaxError()) {
            throw decoder.failure();
        }
        QuotaConfig.Builder builder = decoder.config(read.root());
        if (builder == null) {
            throw decoder.failure();
        }
        try {
            QuotaConfig config = builder.build();
            if (!decoder.hasProblems()) {
                return config;
            }
        } catch (QuotaConfigException e) {
            decoder.addRuleProblems(e.problems());
        }
        throw decoder.failure();
    }

    /**
     * Reads and parses a file in the single-file form (UTF-8).
     *
     * @param file the file
     * @return the validated configuration
     * @throws QuotaConfigException naming the path if the file cannot be read or is not UTF-8,
     *                              or listing every problem of its content
     * @throws NullPointerException if {@code file} is {@code null}
     */
    public static QuotaConfig load(Path file) {
        String source = file.toString();
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw unreadable(source, "no such file", e);
        } catch (AccessDeniedException e) {
            throw unreadable(source, "permission denied", e);
        } catch (FileSystemException e) {
            throw unreadable(source, e.getReason() == null ? "I/O error" : e.getReason(), e);
        } catch (IOException e) {
            String detail = Files.isDirectory(file) ? "it is a directory" : e.getMessage() == null ? "I/O error" : e.getMessage();
            throw unreadable(source, detail, e);
        }
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw unreadable(source, "not valid UTF-8", e);
        }
        return parse(text, source);
    }

    /**
     * Parses the value of {@code /levee/factor}: the group factor DF.
     *
     * @param yaml       the YAML text, such as {@code "4"}
     * @param sourceName how messages name the text, such as the etcd key
     * @return DF, ≥ 1
     * @throws QuotaConfigException if the text is not one integer ≥ 1
     * @throws NullPointerException if {@code yaml} is {@code null}
     */
    public static int parseFactor(String yaml, String sourceName) {
        QuotaDecoder decoder = new QuotaDecoder(name(sourceName));
        YamlTree.Node root = readPart(yaml, decoder);
        Integer factor = root == null
                ? null
                : decoder.integer(root, "", null, QuotaDecoder.FACTOR_EXPECTED);
        if (root == null && !decoder.hasProblems()) {
            decoder.addRuleProblems(List.of(ConfigProblem.of("", "expected " + QuotaDecoder.FACTOR_EXPECTED + ", got an empty value")));
        }
        if (factor != null) {
            decoder.addRuleProblems(QuotaRules.checkFactor(factor, ""));
        }
        return finish(decoder, factor);
    }

    /**
     * Parses the value of {@code /levee/mode}: the mode of quotas that set none, {@code enforce} or
     * {@code shadow} (docs/quotas.md, "Shadow quotas").
     *
     * @param yaml       the YAML text, such as {@code "shadow"}
     * @param sourceName how messages name the text, such as the etcd key
     * @return the mode
     * @throws QuotaConfigException if the text is not exactly {@code enforce} or {@code shadow}
     * @throws NullPointerException if {@code yaml} is {@code null}
     */
    public static dev.levee.quota.QuotaMode parseMode(String yaml, String sourceName) {
        QuotaDecoder decoder = new QuotaDecoder(name(sourceName));
        YamlTree.Node root = readPart(yaml, decoder);
        dev.levee.quota.QuotaMode mode = root == null ? null : decoder.mode(root, "", null);
        if (root == null && !decoder.hasProblems()) {
            decoder.addRuleProblems(List.of(ConfigProblem.of("", "expected " + QuotaDecoder.MODE_EXPECTED + ", got an empty value")));
        }
        return finish(decoder, mode);
    }

    /**
     * Parses the value of {@code /levee/lease}: whether quotas that do not say may be leased to clients,
     * {@code true} or {@code false} (docs/quotas.md, "Request leases").
     *
     * @param yaml       the YAML text, such as {@code "false"}
     * @param sourceName how messages name the text, such as the etcd key
     * @return the setting
     * @throws QuotaConfigException if the text is not exactly {@code true} or {@code false}
     * @throws NullPointerException if {@code yaml} is {@code null}
     */
    public static boolean parseLease(String yaml, String sourceName) {
        QuotaDecoder decoder = new QuotaDecoder(name(sourceName));
        YamlTree.Node root = readPart(yaml, decoder);
        Boolean lease = root == null ? null : decoder.lease(root, "", null);
        if (root == null && !decoder.hasProblems()) {
            decoder.addRuleProblems(List.of(ConfigProblem.of("", "expected " + QuotaDecoder.LEASE_EXPECTED + ", got an empty value")));
        }
        return finish(decoder, lease);
    }

    /**
     * Parses the value of {@code /levee/quotas/default}: one quota {@code {rate, burst}}.
     *
     * @param yaml       the YAML text
     * @param sourceName how messages name the text, such as the etcd key
     * @return the quota
     * @throws QuotaConfigException listing every problem, if the text is not a valid quota
     * @throws NullPointerException if {@code yaml} is {@code null}
     */
    public static Quota parseQuota(String yaml, String sourceName) {
        QuotaDecoder decoder = new QuotaDecoder(name(sourceName));
        YamlTree.Node root = readPart(yaml, decoder);
        Quota quota = null;
        if (root != null) {
            quota = decoder.quota(root, "", null);
        } else if (!decoder.hasProblems()) {
            decoder.addRuleProblems(List.of(ConfigProblem.of("", "expected " + QuotaDecoder.QUOTA_EXPECTED + ", got an empty value")));
        }
        return finish(decoder, quota);
    }

    /**
     * Parses the value of {@code /levee/quotas/methods_default}: quotas by operation name.
     *
     * @param yaml       the YAML text; empty for no quotas
     * @param sourceName how messages name the text, such as the etcd key
     * @return the quotas by operation, unmodifiable, in document order
     * @throws QuotaConfigException listing every problem, such as unknown operation names
     * @throws NullPointerException if {@code yaml} is {@code null}
     */
    public static Map<S3Operation, Quota> parseMethods(String yaml, String sourceName) {
        QuotaDecoder decoder = new QuotaDecoder(name(sourceName));
        YamlTree.Node root = readPart(yaml, decoder);
        Map<S3Operation, Quota> methods = Map.of();
        if (root != null) {
            methods = decoder.methods(root, "", null);
            decoder.addRuleProblems(QuotaRules.checkMethods(methods, "", null));
        }
        return finish(decoder, methods);
    }

    /**
     * Parses the value of {@code /levee/resources/<bucket>}: {@code {quota, prefixes}}.
     *
     * @param bucket     the resource (bucket) name, taken from the etcd key
     * @param yaml       the YAML text; empty for a resource without quotas
     * @param sourceName how messages name the text, such as the etcd key
     * @return the resource's quotas, validated with the bucket name
     * @throws QuotaConfigException listing every problem, including a bad bucket name
     * @throws NullPointerException if {@code bucket} or {@code yaml} is {@code null}
     */
    public static ResourceQuotas parseResource(String bucket, String yaml, String sourceName) {
        Objects.requireNonNull(bucket, "bucket");
        QuotaDecoder decoder = new QuotaDecoder(name(sourceName));
        YamlTree.Node root = readPart(yaml, decoder);
        ResourceQuotas resource = null;
        if (!decoder.hasProblems() || root != null) {
            resource = root == null ? new ResourceQuotas(null, List.of()) : decoder.resource(root, "");
            decoder.addRuleProblems(QuotaRules.checkResource(bucket, resource, ""));
        }
        return finish(decoder, resource);
    }

    /**
     * Writes a configuration in the single-file form; {@code parse(toYaml(c), s)} equals
     * {@code c}.
     *
     * @param cfg the configuration
     * @return the YAML text, starting with a comment line
     * @throws NullPointerException if {@code cfg} is {@code null}
     */
    public static String toYaml(QuotaConfig cfg) {
        return QuotaYamlWriter.write(Objects.requireNonNull(cfg, "cfg"));
    }

    private static YamlTree.Node readPart(String yaml, QuotaDecoder decoder) {
        Objects.requireNonNull(yaml, "yaml");
        YamlTree.Result read = YamlTree.read(yaml);
        decoder.addReadProblems(read.problems());
        decoder.markRoot(read.root());
        if (read.root() instanceof YamlTree.Scalar s && s.kind() == YamlTree.Kind.NULL) {
            return null;
        }
        return read.root();
    }

    private static <T> T finish(QuotaDecoder decoder, T value) {
        if (decoder.hasProblems() || value == null) {
            throw decoder.failure();
        }
        return value;
    }

    private static QuotaConfigException unreadable(String source, String reason, Throwable cause) {
        return new QuotaConfigException(List.of(new ConfigProblem(source, "", null, "cannot read the file: " + reason)), cause);
    }

    private static String name(String sourceName) {
        return sourceName == null || sourceName.isEmpty() ? "<yaml>" : sourceName;
    }
}
