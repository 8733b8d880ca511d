package dev.levee.bench.logging;

import dev.levee.runtime.Rfc5424Pattern;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.Layout;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.DefaultConfiguration;
import org.apache.logging.log4j.core.impl.MutableLogEvent;
import org.apache.logging.log4j.core.layout.ByteBufferDestination;
import org.apache.logging.log4j.core.layout.PatternLayout;
import org.apache.logging.log4j.core.layout.Rfc5424Layout;
import org.apache.logging.log4j.core.net.Facility;
import org.apache.logging.log4j.message.ReusableMessageFactory;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What the logger thread does per decision line (issue 12, "Logging allocation"): format one RFC 5424 line and
 * encode it into the appender's reused byte buffer, as the File appender does ({@code Layout#encode} into its
 * manager, drained at the end of the batch) — with Log4j's {@code Rfc5424Layout} as Levee configured it before
 * ({@code rfc5424Layout}) and with the {@code PatternLayout} of {@link Rfc5424Pattern} ({@code patternLayout}).
 * The event is what the async ring holds: the message text already formatted by the caller into the event.
 * {@code msPerLine} 0: every line in the same millisecond (the time stamp cached by both); 1: each line in a new
 * one. Run with {@code -prof gc}: {@code gc.alloc.rate.norm} is the garbage per line.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class Rfc5424LineBenchmark {

    /** The decision line's form (LimiterService.logDecision), 12 parameters. */
    static final String DECISION = "decision result={} resource={} key={} op={} level={} limit_key={} rate={} burst={}"
            + " g={} remaining={} retry_after={} limiter={}";

    @Param({"0", "1"})
    public int msPerLine;

    private Layout<?> rfc5424Layout;
    private Layout<?> patternLayout;
    private MutableLogEvent event;
    private final Sink sink = new Sink();
    private long t0;
    private long i;

    @Setup
    public void setup() {
        Configuration config = new DefaultConfiguration();
        rfc5424Layout = Rfc5424Layout.newBuilder().setConfiguration(config).setFacility(Facility.LOCAL0).setId("levee")
                .setIncludeMDC(false).setIncludeNL(true).setEscapeNL("\\n").setExceptionPattern("%ex{8}")
                .setAppName("levee-limiter").build();
        patternLayout = PatternLayout.newBuilder().withConfiguration(config)
                .withPattern(Rfc5424Pattern.pattern("levee-limiter", true)).withAlwaysWriteExceptions(false)
                .withCharset(StandardCharsets.UTF_8).build();
        event = new MutableLogEvent();
        event.setLoggerName("levee.limiter.decision");
        event.setLevel(Level.INFO);
        // as the caller's thread does: the reusable message formatted into the event's own text
        event.setMessage(new ReusableMessageFactory().newMessage(DECISION, "accepted", "bucket", "photos/a.jpg",
                "GetObject", "bucket", "bucket", 1000.0, 100, 2, 99L, 0L, "l1"));
        t0 = System.currentTimeMillis();
    }

    @Benchmark
    public long rfc5424Layout() {
        return line(rfc5424Layout);
    }

    @Benchmark
    public long patternLayout() {
        return line(patternLayout);
    }

    private long line(Layout<?> layout) {
        event.setTimeMillis(t0 + msPerLine * i++);
        layout.encode(event, sink);
        sink.drain(sink.buffer); // the appender's flush at the end of a batch
        return sink.bytes;
    }

    /** The appender's reused buffer (8 KiB, as Log4j's OutputStreamManager), drained to nowhere. */
    static final class Sink implements ByteBufferDestination {
        final ByteBuffer buffer = ByteBuffer.wrap(new byte[8192]);
        long bytes;

        @Override
        public ByteBuffer getByteBuffer() {
            return buffer;
        }

        @Override
        public ByteBuffer drain(ByteBuffer buf) {
            buf.flip();
            bytes += buf.remaining();
            buf.clear();
            return buf;
        }

        @Override
        public void writeBytes(ByteBuffer data) {
            while (data.hasRemaining()) {
                if (!buffer.hasRemaining()) {
                    drain(buffer);
                }
                int n = Math.min(data.remaining(), buffer.remaining());
                buffer.put(buffer.position(), data, data.position(), n).position(buffer.position() + n);
                data.position(data.position() + n);
            }
        }

        @Override
        public void writeBytes(byte[] data, int offset, int length) {
            if (length > buffer.remaining()) {
                drain(buffer);
            }
            if (length > buffer.capacity()) {
                bytes += length; // written past the buffer, as OutputStreamManager does
                return;
            }
            buffer.put(data, offset, length); // copied into the buffer, as OutputStreamManager does
        }
    }
}
