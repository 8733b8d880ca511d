package dev.levee.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.List;

/**
 * Validates JSON against a schema of the repository's {@code openapi.yaml} (OpenAPI 3.1, whose
 * schemas are JSON Schema 2020-12) with the networknt validator. The document is the one the
 * gateway jar carries, copied from the repository root at build time.
 */
final class ReadySchema {

    private static final ObjectMapper JSON = new ObjectMapper();

    private ReadySchema() {
    }

    /** Returns the OpenAPI document as a tree. */
    static JsonNode openApi() {
        try (InputStream in = GatewayService.class.getResourceAsStream("openapi.yaml")) {
            if (in == null) {
                throw new IllegalStateException("openapi.yaml is not on the class path (levee-gateway/pom.xml copies it)");
            }
            return new YAMLMapper().readTree(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Returns the named component schema, with the document's components so that its $refs resolve. */
    static Schema component(String name) {
        JsonNode doc = openApi();
        ObjectNode root = JSON.createObjectNode();
        root.put("$schema", "https://json-schema.org/draft/2020-12/schema");
        root.put("$ref", "#/components/schemas/" + name);
        root.set("components", doc.get("components"));
        return SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12).getSchema(root);
    }

    /** Returns the validation errors of {@code json} against the named component, as text. */
    static List<String> errors(String name, String json) {
        try {
            return component(name).validate(JSON.readTree(json)).stream().map(Object::toString).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
