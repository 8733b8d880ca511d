import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * scripts/test-summary's counter: one total line, "N passed, N failed, N skipped (K test classes)", over every
 * surefire and failsafe report under a directory (*&#47;target/{surefire,failsafe}-reports/TEST-*.xml).
 *
 * <p>It counts the {@code <testcase>} elements, not the {@code tests=} attribute of {@code <testsuite>}:
 * Surefire 3.5.4 writes {@code tests="0"} for a JUnit {@code @ParameterizedClass} (NginxCheckIT) although the
 * file holds every invocation's cases, because it keys a suite's statistics by the test's class and reports
 * those cases under the invocation's name ({@code NginxCheckIT[1]}), whose statistics it never writes (issue 26
 * item 8). A case with a {@code <failure>} or {@code <error>} failed, one with {@code <skipped>} was skipped.
 * A report that cannot be read makes the run fail (exit 1, naming the file): a total that silently leaves
 * out a report is wrong. Run with the JDK's source launcher: {@code java scripts/TestSummary.java DIR [NEWER-THAN-FILE]}.
 */
public final class TestSummary {
    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 2) {
            System.err.println("usage: test-summary DIR [NEWER-THAN-FILE]");
            System.exit(2);
        }
        Path dir = Path.of(args[0]);
        FileTime newer = args.length == 2 ? Files.getLastModifiedTime(Path.of(args[1])) : null;
        List<Path> reports = new ArrayList<>();
        try (Stream<Path> all = Files.walk(dir)) {
            all.filter(p -> p.getFileName().toString().startsWith("TEST-") && p.getFileName().toString().endsWith(".xml"))
                    .filter(p -> p.getParent() != null && p.getParent().getParent() != null
                            && (p.getParent().getFileName().toString().equals("surefire-reports")
                                    || p.getParent().getFileName().toString().equals("failsafe-reports"))
                            && p.getParent().getParent().getFileName().toString().equals("target"))
                    .forEach(reports::add);
        }
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
        long passed = 0, failed = 0, skipped = 0, classes = 0;
        List<String> unreadable = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        for (Path report : reports.stream().sorted().toList()) {
            try {
                if (newer != null && Files.getLastModifiedTime(report).compareTo(newer) <= 0) {
                    continue;
                }
                var builder = f.newDocumentBuilder();
                builder.setErrorHandler(null);
                Element root = builder.parse(report.toFile()).getDocumentElement();
                if (!root.getTagName().equals("testsuite")) {
                    throw new IOException("its root element is <" + root.getTagName() + ">, not <testsuite>");
                }
                NodeList cases = root.getElementsByTagName("testcase");
                for (int i = 0; i < cases.getLength(); i++) {
                    Element testcase = (Element) cases.item(i);
                    switch (outcome(testcase)) {
                        case "failed" -> {
                            failed++;
                            failures.add(failure(testcase));
                        }
                        case "skipped" -> skipped++;
                        default -> passed++;
                    }
                }
                classes++;
            } catch (Exception e) {
                unreadable.add(report + ": " + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
            }
        }
        System.out.printf("%d passed, %d failed, %d skipped (%d test classes)%n", passed, failed, skipped, classes);
        // what each failed test said, for a console that keeps only the end of a run (CI shows its last lines)
        for (String failure : failures) {
            System.err.println(failure);
        }
        for (String u : unreadable) {
            System.err.println("test-summary: cannot read the report " + u);
        }
        System.exit(unreadable.isEmpty() ? 0 : 1);
    }

    /** Lines of a failure message shown per failed test: enough for an assertion's list of problems. */
    private static final int FAILURE_LINES = 25;

    /**
     * One failed {@code <testcase>} as "FAILED Class.method: " and the first {@value #FAILURE_LINES} lines of its
     * {@code <failure>} or {@code <error>} message (or of its stack trace, when the message is empty).
     */
    private static String failure(Element testcase) {
        String name = testcase.getAttribute("classname") + "." + testcase.getAttribute("name");
        for (Node c = testcase.getFirstChild(); c != null; c = c.getNextSibling()) {
            if (c instanceof Element e && (e.getTagName().equals("failure") || e.getTagName().equals("error"))) {
                String text = e.getAttribute("message").isBlank() ? e.getTextContent() : e.getAttribute("message");
                List<String> lines = text.strip().lines().toList();
                String shown = String.join("\n  ", lines.subList(0, Math.min(FAILURE_LINES, lines.size())));
                return "FAILED " + name + ": " + shown
                        + (lines.size() > FAILURE_LINES ? "\n  (" + (lines.size() - FAILURE_LINES) + " more lines in its report)" : "");
            }
        }
        return "FAILED " + name;
    }

    /** Returns "failed", "skipped" or "passed" for one {@code <testcase>} by its child elements. */
    private static String outcome(Element testcase) {
        boolean skipped = false;
        for (Node c = testcase.getFirstChild(); c != null; c = c.getNextSibling()) {
            if (c instanceof Element e) {
                switch (e.getTagName()) {
                    case "failure", "error" -> {
                        return "failed";
                    }
                    case "skipped" -> skipped = true;
                    default -> { }
                }
            }
        }
        return skipped ? "skipped" : "passed";
    }
}
