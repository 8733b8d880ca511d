package dev.levee.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TimeZone;
import java.util.concurrent.ConcurrentHashMap;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.Layout;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.DefaultConfiguration;
import org.apache.logging.log4j.core.impl.Log4jLogEvent;
import org.apache.logging.log4j.core.impl.MutableLogEvent;
import org.apache.logging.log4j.core.layout.ByteBufferDestination;
import org.apache.logging.log4j.core.layout.PatternLayout;
import org.apache.logging.log4j.core.layout.Rfc5424Layout;
import org.apache.logging.log4j.core.net.Facility;
import org.apache.logging.log4j.message.Message;
import org.apache.logging.log4j.message.ParameterizedMessage;
import org.apache.logging.log4j.message.ReusableSimpleMessage;
import org.apache.logging.log4j.message.SimpleMessage;

/**
 * Differential test: the {@link Rfc5424Pattern} layout writes the bytes Log4j's {@code Rfc5424Layout} wrote with
 * the attributes Levee's configuration gave it before (facility LOCAL0, id {@code levee}, no MDC, newline at the
 * end, newlines escaped as {@code \n}, exceptions as {@code %ex{8}}), for the same event, in several default
 * time zones — except that a carriage return is always written {@code \r} (see {@link Rfc5424Pattern}).
 */
class Rfc5424PatternTest {

    static final Configuration CONFIG = new DefaultConfiguration();

    /** Layouts per time zone: the new one reads the zone when it is built, {@code Rfc5424Layout} when it formats. */
    static final Map<String, Layout<?>[]> LAYOUTS = new ConcurrentHashMap<>();

    static final List<String> ZONES = List.of("UTC", "Europe/Berlin", "America/St_Johns", "Asia/Kathmandu",
            "Australia/Lord_Howe", "America/Los_Angeles", "Pacific/Chatham");

    static final List<Level> LEVELS = List.of(Level.OFF, Level.FATAL, Level.ERROR, Level.WARN, Level.INFO,
            Level.DEBUG, Level.TRACE, Level.ALL);

    /** Rfc5424Layout as the Rfc5424Layout component in Logging was built before this class replaced it. */
    static Rfc5424Layout oldLayout(String appName, boolean newLine) {
        return Rfc5424Layout.newBuilder().setConfiguration(CONFIG).setFacility(Facility.LOCAL0).setId("levee")
                .setIncludeMDC(false).setIncludeNL(newLine).setEscapeNL("\\n").setExceptionPattern("%ex{8}")
                .setAppName(appName).build();
    }

    /**
     * The new layout, with the attributes Logging gives it, and the HOSTNAME the old layout wrote (a reverse look-up
     * of the local address, which it takes itself): the layouts are compared byte for byte, the host name's choice
     * apart ({@link #theHostNameIsTheMachinesOwnQualifiedWhenALookUpSaysSoNeverLocalhost}).
     */
    static PatternLayout newLayout(String appName, boolean newLine) {
        String pattern = Rfc5424Pattern.pattern(org.apache.logging.log4j.core.util.NetUtils.getCanonicalLocalHostname(),
                appName, org.apache.logging.log4j.util.ProcessIdUtil.getProcessId(), newLine);
        return PatternLayout.newBuilder().withConfiguration(CONFIG).withPattern(pattern)
                .withAlwaysWriteExceptions(false).withCharset(StandardCharsets.UTF_8).build();
    }

    /** Formats {@code event} in {@code zone} as the old and the new layout encode it: {old, new}. */
    static String[] both(String zone, boolean newLine, LogEvent event) {
        TimeZone saved = TimeZone.getDefault();
        try {
            TimeZone.setDefault(TimeZone.getTimeZone(zone));
            Layout<?>[] layouts = LAYOUTS.computeIfAbsent(zone + newLine,
                    k -> new Layout<?>[] {oldLayout("levee-limiter", newLine), newLayout("levee-limiter", newLine)});
            return new String[] {encode(layouts[0], event), encode(layouts[1], event)};
        } finally {
            TimeZone.setDefault(saved);
        }
    }

    /** Encodes as an appender does ({@code Layout#encode} into the manager's buffer), in a small buffer. */
    static String encode(Layout<?> layout, LogEvent event) {
        Sink sink = new Sink();
        layout.encode(event, sink);
        sink.drain(sink.buffer);
        return sink.out.toString(StandardCharsets.UTF_8);
    }

    static final class Sink implements ByteBufferDestination {
        final ByteBuffer buffer = ByteBuffer.allocate(64); // small: lines span several drains
        final ByteArrayOutputStream out = new ByteArrayOutputStream();

        @Override
        public ByteBuffer getByteBuffer() {
            return buffer;
        }

        @Override
        public ByteBuffer drain(ByteBuffer buf) {
            buf.flip();
            out.write(buf.array(), buf.arrayOffset() + buf.position(), buf.remaining());
            buf.clear();
            return buf;
        }

        @Override
        public void writeBytes(ByteBuffer data) {
            while (data.hasRemaining()) {
                out.write(data.get());
            }
        }

        @Override
        public void writeBytes(byte[] data, int offset, int length) {
            out.write(data, offset, length);
        }
    }

    /** The message kinds a line can carry: SLF4J's parameterized form, plain text, an async logger's reused text. */
    enum Kind { PARAMETERIZED, SIMPLE, REUSABLE }

    static LogEvent event(Kind kind, String text, Level level, String logger, long millis, Throwable thrown) {
        Message message = switch (kind) {
            case PARAMETERIZED -> new ParameterizedMessage("{}", text);
            case SIMPLE -> new SimpleMessage(text);
            case REUSABLE -> {
                ReusableSimpleMessage m = new ReusableSimpleMessage();
                m.set(text);
                yield m;
            }
        };
        Log4jLogEvent e = Log4jLogEvent.newBuilder().setLoggerName(logger).setLevel(level).setMessage(message)
                .setTimeMillis(millis).setThrown(thrown).build();
        if (kind != Kind.REUSABLE) {
            return e;
        }
        MutableLogEvent m = new MutableLogEvent(); // the async ring's slot: the text copied into the event
        m.initFrom(e);
        return m;
    }

    @Property(tries = 1500)
    void linesWithoutCarriageReturnAreByteIdentical(@ForAll("messages") String message, @ForAll("kinds") Kind kind,
            @ForAll("levels") Level level, @ForAll("loggers") String logger, @ForAll("times") long millis,
            @ForAll("zones") String zone, @ForAll boolean newLine) {
        String text = message.replace("\r", "");
        String[] lines = both(zone, newLine, event(kind, text, level, logger, millis, null));
        assertThat(lines[1]).isEqualTo(lines[0]);
    }

    /** The one difference: a CR is written {@code \r} — what Rfc5424Layout writes for a message with {@code \r}. */
    @Property(tries = 1000)
    void aCarriageReturnIsEscapedAsBackslashR(@ForAll("messages") String message, @ForAll("kinds") Kind kind,
            @ForAll("levels") Level level, @ForAll("times") long millis, @ForAll("zones") String zone) {
        String now = both(zone, true, event(kind, message, level, "levee.client", millis, null))[1];
        String before = both(zone, true, event(kind, message.replace("\r", "\\r"), level, "levee.client", millis, null))[0];
        assertThat(now).isEqualTo(before);
        assertThat(now.substring(0, now.length() - 1)).doesNotContain("\r", "\n");
    }

    @Property(tries = 200)
    void linesWithAnExceptionAreByteIdentical(@ForAll("messages") String message, @ForAll("messages") String why,
            @ForAll("kinds") Kind kind, @ForAll("levels") Level level, @ForAll("times") long millis,
            @ForAll("zones") String zone) {
        Exception thrown = new IllegalStateException(why.replace("\r", ""),
                new java.io.IOException("cause\nwith a newline"));
        String[] lines = both(zone, true, event(kind, message.replace("\r", ""), level, "levee.limiter", millis, thrown));
        assertThat(lines[1]).isEqualTo(lines[0]).contains("IllegalStateException").endsWith("\n");
        assertThat(lines[1].substring(0, lines[1].length() - 1)).doesNotContain("\n");
    }

    @Example
    void aDecisionLine() {
        long t = Instant.parse("2026-03-29T00:59:59.999Z").toEpochMilli(); // Berlin: the last ms before summer time
        String text = "decision result=accepted resource=bucket key=photos/a.jpg op=GetObject level=bucket"
                + " limit_key=bucket rate=1000.0 burst=100 g=2 remaining=99 retry_after=0 limiter=l1";
        for (long ms : new long[] {t, t + 1}) {
            String[] lines = both("Europe/Berlin", true, event(Kind.REUSABLE, text, Level.INFO, "levee.limiter.decision",
                    ms, null));
            assertThat(lines[1]).isEqualTo(lines[0]).startsWith("<134>1 2026-03-29T0").endsWith(" - - " + text + "\n")
                    .contains(ms == t ? "T01:59:59.999+01:00 " : "T03:00:00.000+02:00 ");
        }
        String[] utc = both("UTC", false, event(Kind.SIMPLE, "", Level.FATAL, "x", t, null));
        assertThat(utc[1]).isEqualTo(utc[0]).startsWith("<129>1 2026-03-29T00:59:59.999Z ").endsWith(" - -");
    }

    @Example
    void headerFieldsThatLookLikePatternSyntaxAreLiteral() {
        String p = Rfc5424Pattern.pattern("host%d\\n", "app%m", "42", true);
        PatternLayout layout = PatternLayout.newBuilder().withConfiguration(CONFIG).withPattern(p)
                .withAlwaysWriteExceptions(false).build();
        assertThat(layout.toSerializable(event(Kind.SIMPLE, "hi", Level.WARN, "x", 0, null)))
                .matches("<132>1 \\S+ host%d\\\\n app%m 42 - - hi\n");
    }

    @Provide
    Arbitrary<String> messages() {
        Arbitrary<String> pieces = Arbitraries.oneOf(
                Arbitraries.of("\r\n", "\n", "\r", "\n\r", "]", "\"", "\\", "\\n", "=", " ", "é", "✓", "\u0000", "\t",
                        "\u2028", "\uD83D\uDE00", "\uD83D", "%m", "${env:HOME}", "{}", "key=value "),
                Arbitraries.strings().all().ofMaxLength(12),
                Arbitraries.strings().ascii().ofMaxLength(20));
        return pieces.list().ofMaxSize(12).map(l -> String.join("", l));
    }

    @Provide
    Arbitrary<Kind> kinds() {
        return Arbitraries.of(Kind.class);
    }

    @Provide
    Arbitrary<Level> levels() {
        return Arbitraries.of(LEVELS);
    }

    @Provide
    Arbitrary<String> loggers() {
        return Arbitraries.of("levee.limiter.decision", "levee.client", "org.eclipse.jetty.server.Server", "");
    }

    @Provide
    Arbitrary<String> zones() {
        return Arbitraries.of(ZONES);
    }

    /** 2000 to 2100, and the milliseconds around this year's summer-time changes. */
    @Provide
    Arbitrary<Long> times() {
        long from = Instant.parse("2000-01-01T00:00:00Z").toEpochMilli();
        long to = Instant.parse("2100-01-01T00:00:00Z").toEpochMilli();
        Arbitrary<Long> edges = Combinators.combine(
                Arbitraries.of(Instant.parse("2026-03-29T01:00:00Z"), Instant.parse("2026-10-25T01:00:00Z"),
                        Instant.parse("2026-03-08T10:00:00Z"), Instant.parse("2026-04-05T15:00:00Z"),
                        Instant.parse("2026-09-27T14:00:00Z")).map(Instant::toEpochMilli),
                Arbitraries.longs().between(-120_000, 120_000)).as(Long::sum);
        return Arbitraries.oneOf(Arbitraries.longs().between(from, to), edges);
    }

    @org.junit.jupiter.params.ParameterizedTest(name = "{0} and {1}: {2}")
    @org.junit.jupiter.params.provider.CsvSource(delimiter = '|', textBlock = """
            vm     | localhost              | vm
            vm     | localhost.localdomain  | vm
            vm     | 127.0.0.1              | vm
            vm     | vm.example.net         | vm.example.net
            web-1  | WEB-1.corp.example     | WEB-1.corp.example
            web-1  | web-10.example         | web-1
            web-1  | web-1.                 | web-1
            web-1  | other.example          | web-1
            ''     | db.example             | db.example
            ''     | ''                     | -
            """)
    void theHostNameIsTheMachinesOwnQualifiedWhenALookUpSaysSoNeverLocalhost(String own, String canonical, String chosen) {
        // RFC 5424 §6.2.4: FQDN, else the host name; a reverse look-up of 127.0.0.1 named every Debian machine localhost
        assertThat(Rfc5424Pattern.hostName(own, canonical)).isEqualTo(chosen);
    }

    @org.junit.jupiter.api.Test
    void thisMachinesHostNameIsItsOwnName() throws Exception {
        String own = java.net.InetAddress.getLocalHost().getHostName();
        assertThat(Rfc5424Pattern.hostName()).startsWith(own);
    }
}
