package dev.levee.runtime;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * Holds the strict JSON mapper of Levee's HTTP APIs: unknown fields, duplicate keys, nulls for
 * primitives and trailing tokens all fail; errors are turned into one-line messages naming the
 * field (never a Java class name).
 */
public final class Json {

    /** The shared, thread-safe strict mapper. */
    public static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    private Json() {
    }

    /**
     * Parses {@code bytes} as a {@code type}.
     *
     * @throws IllegalArgumentException with a one-line message naming the field at fault
     */
    public static <T> T parse(byte[] bytes, Class<T> type) {
        if (bytes.length == 0 || new String(bytes, java.nio.charset.StandardCharsets.UTF_8).isBlank()) {
            throw new IllegalArgumentException("malformed JSON: the body is empty, expected a JSON object");
        }
        try {
            T value = MAPPER.readValue(bytes, type);
            if (value == null) {
                throw new IllegalArgumentException("body must be a JSON object");
            }
            return value;
        } catch (UnrecognizedPropertyException e) {
            throw new IllegalArgumentException("unknown field '" + e.getPropertyName() + "'");
        } catch (JsonMappingException e) {
            throw new IllegalArgumentException(describe(e));
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("malformed JSON at line " + e.getLocation().getLineNr()
                    + ", column " + e.getLocation().getColumnNr() + ": " + e.getOriginalMessage().split("\n")[0]);
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("unreadable body");
        }
    }

    /** Serialises {@code value} to JSON bytes. */
    public static byte[] write(Object value) {
        try {
            return MAPPER.writeValueAsBytes(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialise " + value.getClass().getSimpleName(), e);
        }
    }

    private static String describe(JsonMappingException e) {
        StringBuilder path = new StringBuilder();
        for (JsonMappingException.Reference ref : e.getPath()) {
            if (ref.getFieldName() != null) {
                if (!path.isEmpty()) {
                    path.append('.');
                }
                path.append(ref.getFieldName());
            } else if (ref.getIndex() >= 0) {
                path.append('[').append(ref.getIndex()).append(']');
            }
        }
        String msg = e.getOriginalMessage() == null ? "invalid value" : e.getOriginalMessage().split("\n")[0];
        // keep the message free of Java type names
        msg = msg.replaceAll("`[a-zA-Z0-9_.$]+`", "value").replaceAll("\\(class [^)]*\\)", "");
        return path.isEmpty() ? msg : "field '" + path + "': " + msg;
    }
}
