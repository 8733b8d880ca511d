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
            .disable(com.fasterxml.jackson.databind.MapperFeature.ALLOW_COERCION_OF_SCALARS)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            // a number or true/false where a string is expected is an error, not "1" or "true"
            .withCoercionConfig(com.fasterxml.jackson.databind.type.LogicalType.Textual, c -> c
                    .setCoercion(com.fasterxml.jackson.databind.cfg.CoercionInputShape.Integer,
                            com.fasterxml.jackson.databind.cfg.CoercionAction.Fail)
                    .setCoercion(com.fasterxml.jackson.databind.cfg.CoercionInputShape.Float,
                            com.fasterxml.jackson.databind.cfg.CoercionAction.Fail)
                    .setCoercion(com.fasterxml.jackson.databind.cfg.CoercionInputShape.Boolean,
                            com.fasterxml.jackson.databind.cfg.CoercionAction.Fail))
            .build();

    private Json() {
    }

    /**
     * Parses {@code bytes} as a {@code type}.
     *
     * @throws IllegalArgumentException with a one-line message naming the field at fault
     */
    public static <T> T parse(byte[] bytes, Class<T> type) {
        if (blank(bytes)) {
            throw new IllegalArgumentException("malformed JSON: the body is empty, expected a JSON object");
        }
        try {
            T value = MAPPER.readValue(bytes, type);
            if (value == null) {
                throw new IllegalArgumentException("body must be a JSON object");
            }
            return value;
        } catch (UnrecognizedPropertyException e) {
            throw new IllegalArgumentException("unknown field '" + path(e) + "'");
        } catch (JsonMappingException e) {
            throw new IllegalArgumentException(describe(e));
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(malformed(e));
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("unreadable body");
        }
    }

    private static boolean blank(byte[] bytes) {
        for (byte b : bytes) {
            if (b != ' ' && b != '\t' && b != '\n' && b != '\r') {
                return false;
            }
        }
        return true;
    }

    /** Serialises {@code value} to JSON bytes. */
    public static byte[] write(Object value) {
        try {
            return MAPPER.writeValueAsBytes(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialise " + value.getClass().getSimpleName(), e);
        }
    }

    private static String describeType(Class<?> t) {
        if (t == Integer.class || t == int.class || t == Long.class || t == long.class) {
            return "an integer";
        }
        if (t == Double.class || t == double.class) {
            return "a number";
        }
        if (t == String.class) {
            return "a string";
        }
        if (t == Boolean.class || t == boolean.class) {
            return "true or false";
        }
        if (java.util.Collection.class.isAssignableFrom(t) || t.isArray()) {
            return "a JSON array";
        }
        return "a JSON object";
    }

    /** "malformed JSON at line L, column C: what", for a syntax error or a number/name over Jackson's limits. */
    private static String malformed(JsonProcessingException e) {
        String what = e.getOriginalMessage() == null ? "" : e.getOriginalMessage().split("\n")[0];
        what = what.replaceAll("\\(.*", "").replaceAll("Source: .*", "").replaceAll("`[^`]*`", "").trim();
        if (what.length() > 200) {
            what = what.substring(0, 200) + "…";
        }
        com.fasterxml.jackson.core.JsonLocation at = e.getLocation();
        String where = at == null || at.getLineNr() < 0 ? "" : " at line " + at.getLineNr() + ", column " + at.getColumnNr();
        return "malformed JSON" + where + (what.isEmpty() ? "" : ": " + what);
    }

    private static String path(JsonMappingException e) {
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
        return path.toString();
    }

    private static String describe(JsonMappingException e) {
        String path = path(e);
        String msg;
        String original = e.getOriginalMessage() == null ? "" : e.getOriginalMessage();
        if (original.startsWith("Trailing token")) {
            return "malformed JSON: content after the JSON value";
        }
        if (e.getCause() instanceof com.fasterxml.jackson.core.exc.InputCoercionException) {
            msg = "number out of range";
        } else if (e.getCause() instanceof JsonProcessingException cause) {
            return (path.isEmpty() ? "" : "field '" + path + "': ") + malformed(cause);
        } else if (e instanceof com.fasterxml.jackson.databind.exc.MismatchedInputException m && m.getTargetType() != null) {
            msg = "expected " + describeType(m.getTargetType());
        } else {
            msg = "invalid value";
        }
        return path.isEmpty() ? (msg.equals("expected a JSON object") ? "body must be a JSON object" : msg)
                : "field '" + path + "': " + msg;
    }
}
