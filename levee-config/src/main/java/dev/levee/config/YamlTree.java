package dev.levee.config;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLParser;
import com.fasterxml.jackson.dataformat.yaml.JacksonYAMLParseException;
import dev.levee.quota.ConfigPath;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Reads one YAML document into a small tree that keeps the line and column of every node,
 * so that each configuration problem can point at its place in the file.
 *
 * <p>Jackson's own tree model drops positions and stops at the first duplicate key; this reader
 * reports duplicate keys, aliases, custom tags and extra documents as problems and carries on,
 * so that one pass finds as many problems as possible. A syntax error ends the pass: nothing
 * after it can be trusted.
 */
final class YamlTree {

    /**
     * Largest document, in code points: 128 Mi. SnakeYAML's default of 3 Mi is a single-file form of
     * about 50 000 small buckets; a site with 100 000 buckets and prefix rules needs tens of MiB
     * (issue 10, defect 3). etcd values are held to {@code --etcd-max-value-size} before they get here.
     */
    static final int MAX_CODE_POINTS = 128 << 20;

    private static final YAMLFactory FACTORY = YAMLFactory.builder()
            .enable(YAMLParser.Feature.EMPTY_STRING_AS_NULL) // "key:" is empty, "key: ''" is a string
            .loaderOptions(loaderOptions())
            .build();

    private static org.yaml.snakeyaml.LoaderOptions loaderOptions() {
        org.yaml.snakeyaml.LoaderOptions o = new org.yaml.snakeyaml.LoaderOptions();
        o.setCodePointLimit(MAX_CODE_POINTS);
        return o;
    }
    private static final Pattern CLASS_NAME = Pattern.compile("\\b[a-z][a-z0-9_]*\\.[a-z][a-z0-9_]*\\.[A-Za-z_$]|<[a-z]+\\.[a-z]");
    private static final String CORE_TAG = "tag:yaml.org,2002:";

    private YamlTree() {
    }

    /** A position in the document, 1-based. */
    record Mark(int line, int column) {
    }

    /** A node of the document. */
    sealed interface Node permits MapNode, ListNode, Scalar {
        Mark mark();
    }

    /** One key of a mapping, with the position of the key. */
    record Field(String key, Mark mark, Node value) {
    }

    /** A mapping; keys unique, in document order. */
    record MapNode(Map<String, Field> fields, Mark mark) implements Node {
    }

    /** A sequence. */
    record ListNode(List<Node> items, Mark mark) implements Node {
    }

    /** Scalar kinds as YAML resolves plain scalars; INVALID marks a node whose problem is already reported. */
    enum Kind { STRING, INTEGER, FLOAT, BOOLEAN, NULL, INVALID }

    /** A scalar with its text as written (for numbers) or its value (for strings). */
    record Scalar(Kind kind, String text, Mark mark) implements Node {
    }

    /** A problem found while reading, at a path of the document. */
    record Problem(String path, String message, Mark mark) {
    }

    /**
     * The outcome of reading: the root ({@code null} for an empty document or after a syntax
     * error) and the problems found.
     */
    record Result(Node root, List<Problem> problems, boolean syntaxError) {
    }

    static Result read(String text) {
        List<Problem> problems = new ArrayList<>();
        try (YAMLParser parser = FACTORY.createParser(text)) {
            JsonToken first = parser.nextToken();
            if (first == null) {
                return new Result(null, problems, false);
            }
            Node root = new Reader(parser, problems).value(first, "");
            JsonToken next = parser.nextToken();
            if (next != null) {
                problems.add(new Problem("", "more than one YAML document ('---'); a quota file holds exactly one",
                        mark(parser.currentTokenLocation())));
            }
            return new Result(root, problems, false);
        } catch (JacksonYAMLParseException e) {
            problems.add(syntaxProblem(e));
        } catch (StreamConstraintsException e) {
            problems.add(new Problem("", "malformed YAML: the document is too large or too deeply nested", mark(e.getLocation())));
        } catch (JacksonException e) {
            problems.add(new Problem("", "malformed YAML: " + clean(e.getOriginalMessage()), mark(e.getLocation())));
        } catch (IOException | RuntimeException e) { // not expected from a String: reported, never thrown
            problems.add(new Problem("", "malformed YAML: the parser failed on unexpected content", null));
        }
        return new Result(null, problems, true);
    }

    /**
     * Describes a YAML syntax error with the parser's problem, its context and its position.
     * Jackson 2 marks its wrapper of SnakeYAML's positions as deprecated, yet it is the only
     * access to them that does not reach into SnakeYAML's own classes.
     */
    @SuppressWarnings("deprecation")
    private static Problem syntaxProblem(JacksonYAMLParseException e) {
        if (!(e instanceof com.fasterxml.jackson.dataformat.yaml.snakeyaml.error.MarkedYAMLException marked)) {
            return new Problem("", "malformed YAML: " + clean(e.getOriginalMessage()), mark(e.getLocation()));
        }
        String problem = clean(marked.getProblem());
        StringBuilder message = new StringBuilder("malformed YAML: ").append(problem);
        if (problem.startsWith("mapping values are not allowed") || problem.startsWith("expected <block end>")) {
            message.append(" (check the indentation)");
        }
        if (marked.getContext() != null) {
            message.append(" (").append(clean(marked.getContext()));
            if (marked.getContextMark() != null) {
                message.append(" started at line ").append(marked.getContextMark().getLine() + 1)
                        .append(", column ").append(marked.getContextMark().getColumn() + 1);
            }
            message.append(')');
        }
        Mark at = marked.getProblemMark() == null ? mark(e.getLocation())
                : new Mark(marked.getProblemMark().getLine() + 1, marked.getProblemMark().getColumn() + 1);
        return new Problem("", message.toString(), at);
    }

    /** Keeps a parser message on one line and free of Java class names. */
    static String clean(String message) {
        if (message == null || message.isBlank()) {
            return "unexpected content";
        }
        String line = message.strip().lines().findFirst().orElse("").strip();
        if (line.startsWith("Expected a field name")) {
            return "mapping keys must be plain scalars (complex keys are not supported)";
        }
        if (CLASS_NAME.matcher(line).find()) {
            return "unexpected content";
        }
        StringBuilder sb = new StringBuilder(line.length());
        line.codePoints().forEach(c -> {
            if (Character.isISOControl(c)) {
                sb.append(String.format("\\u%04x", c));
            } else {
                sb.appendCodePoint(c);
            }
        });
        return sb.toString();
    }

    private static Mark mark(JsonLocation location) {
        return location == null || location.getLineNr() < 1 ? null : new Mark(location.getLineNr(), location.getColumnNr());
    }

    /** Builds the tree from the parser's token stream. */
    private static final class Reader {
        private final YAMLParser parser;
        private final List<Problem> problems;

        Reader(YAMLParser parser, List<Problem> problems) {
            this.parser = parser;
            this.problems = problems;
        }

        Node value(JsonToken token, String path) throws IOException {
            Mark at = mark(parser.currentTokenLocation());
            if (token == null) {
                return new Scalar(Kind.NULL, "", at);
            }
            if (parser.isCurrentAlias()) {
                problems.add(new Problem(path, "YAML aliases (*" + parser.getText() + ") are not supported; write the value out", at));
                return new Scalar(Kind.INVALID, "", at);
            }
            String tag = parser.getTypeId();
            if (tag != null && !tag.startsWith(CORE_TAG)) {
                problems.add(new Problem(path, "YAML tag !" + ConfigPath.escape(tag) + " is not supported", at));
                parser.skipChildren();
                return new Scalar(Kind.INVALID, "", at);
            }
            return switch (token) {
                case START_OBJECT -> map(path, at);
                case START_ARRAY -> list(path, at);
                case VALUE_STRING -> new Scalar(Kind.STRING, parser.getText(), at);
                case VALUE_NUMBER_INT -> new Scalar(Kind.INTEGER, parser.getText(), at);
                case VALUE_NUMBER_FLOAT -> new Scalar(Kind.FLOAT, parser.getText(), at);
                case VALUE_TRUE, VALUE_FALSE -> new Scalar(Kind.BOOLEAN, parser.getText(), at);
                case VALUE_NULL -> new Scalar(Kind.NULL, "", at);
                default -> {
                    problems.add(new Problem(path, "unsupported YAML value (binary or other typed data)", at));
                    yield new Scalar(Kind.INVALID, "", at);
                }
            };
        }

        private MapNode map(String path, Mark at) throws IOException {
            Map<String, Field> fields = new LinkedHashMap<>();
            while (parser.nextToken() == JsonToken.FIELD_NAME) {
                String key = parser.currentName();
                Mark keyMark = mark(parser.currentTokenLocation());
                String child = ConfigPath.key(path, key);
                Node value = value(parser.nextToken(), child);
                Field first = fields.putIfAbsent(key, new Field(key, keyMark, value));
                if (first != null) {
                    String where = first.mark() == null ? "" : " (first at line " + first.mark().line() + ")";
                    problems.add(new Problem(child, "duplicate key " + ConfigPath.quote(key) + where, keyMark));
                }
            }
            return new MapNode(fields, at);
        }

        private ListNode list(String path, Mark at) throws IOException {
            List<Node> items = new ArrayList<>();
            JsonToken token;
            while ((token = parser.nextToken()) != JsonToken.END_ARRAY && token != null) {
                items.add(value(token, ConfigPath.index(path, items.size())));
            }
            return new ListNode(items, at);
        }
    }
}
