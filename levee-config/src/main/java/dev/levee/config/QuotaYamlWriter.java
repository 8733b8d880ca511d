package dev.levee.config;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import dev.levee.quota.PrefixRule;
import dev.levee.quota.Quota;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.ResourceQuotas;
import dev.levee.s3.S3Operation;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.Map;

/**
 * Writes the single-file form (docs/design.md §4) so that {@link QuotaConfigLoader#parse} reads back an
 * equal configuration: every string value is double-quoted (a bucket named {@code "true"} or
 * a prefix {@code "2024"} stays a string), integral rates are written without a fraction and
 * other rates in Java's shortest round-trip form.
 */
final class QuotaYamlWriter {

    static final String HEADER = "# Levee quotas, single-file form (docs/quotas.md): rate in requests per second, burst in requests.\n";

    private static final YAMLFactory FACTORY = YAMLFactory.builder()
            .disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER)
            .enable(YAMLGenerator.Feature.INDENT_ARRAYS_WITH_INDICATOR)
            .build();

    private QuotaYamlWriter() {
    }

    static String write(QuotaConfig config) {
        StringWriter out = new StringWriter().append(HEADER);
        try (JsonGenerator g = FACTORY.createGenerator(out)) {
            g.writeStartObject();
            g.writeNumberField("factor", config.factor());
            if (config.defaultMode() != dev.levee.quota.QuotaMode.ENFORCE) {
                g.writeStringField("mode", config.defaultMode().label());
            }
            if (!config.defaultLease()) {
                g.writeBooleanField("lease", false);
            }
            g.writeFieldName("default");
            quota(g, config.defaultQuota());
            if (!config.methodsDefault().isEmpty()) {
                g.writeFieldName("methods_default");
                methods(g, config.methodsDefault());
            }
            if (!config.resources().isEmpty()) {
                g.writeFieldName("resources");
                g.writeStartObject();
                for (Map.Entry<String, ResourceQuotas> e : config.resources().entrySet()) {
                    g.writeFieldName(e.getKey());
                    resource(g, e.getValue());
                }
                g.writeEndObject();
            }
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException("writing YAML to memory failed", e); // a StringWriter does not fail
        }
        return out.toString();
    }

    /** Writes one part of the etcd layout: a quota, a methods map or a resource. */
    static String writePart(Object part) {
        StringWriter out = new StringWriter();
        try (JsonGenerator g = FACTORY.createGenerator(out)) {
            if (part instanceof Quota q) {
                quota(g, q);
            } else if (part instanceof ResourceQuotas r) {
                resource(g, r);
            } else if (part instanceof Map<?, ?> m) {
                @SuppressWarnings("unchecked")
                Map<S3Operation, Quota> methods = (Map<S3Operation, Quota>) m;
                methods(g, methods);
            } else {
                throw new IllegalArgumentException("not a quota part: " + part);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("writing YAML to memory failed", e);
        }
        return out.toString();
    }

    private static void resource(JsonGenerator g, ResourceQuotas resource) throws IOException {
        g.writeStartObject();
        if (resource.quota() != null) {
            g.writeFieldName("quota");
            quota(g, resource.quota());
        }
        if (!resource.prefixes().isEmpty()) {
            g.writeFieldName("prefixes");
            g.writeStartArray();
            for (PrefixRule rule : resource.prefixes()) {
                g.writeStartObject();
                g.writeStringField("prefix", rule.prefix());
                if (rule.quota() != null) {
                    g.writeFieldName("quota");
                    quota(g, rule.quota());
                }
                if (!rule.methods().isEmpty()) {
                    g.writeFieldName("methods");
                    methods(g, rule.methods());
                }
                g.writeEndObject();
            }
            g.writeEndArray();
        }
        g.writeEndObject();
    }

    private static void methods(JsonGenerator g, Map<S3Operation, Quota> methods) throws IOException {
        g.writeStartObject();
        for (Map.Entry<S3Operation, Quota> e : methods.entrySet()) {
            g.writeFieldName(e.getKey().name());
            quota(g, e.getValue());
        }
        g.writeEndObject();
    }

    private static void quota(JsonGenerator g, Quota quota) throws IOException {
        g.writeStartObject();
        g.writeFieldName("rate");
        double rate = quota.rate();
        if (rate == Math.rint(rate) && rate < 1e15) {
            g.writeNumber((long) rate);
        } else {
            g.writeNumber(Double.toString(rate));
        }
        g.writeNumberField("burst", quota.burst());
        if (quota.mode() != null) {
            g.writeStringField("mode", quota.mode().label());
        }
        if (quota.lease() != null) {
            g.writeBooleanField("lease", quota.lease());
        }
        g.writeEndObject();
    }
}
