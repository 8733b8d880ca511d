package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.Handler;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.streams.ReadStream;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** An early answer is read at once and held: a failure after its end (the backend's close) cannot destroy it (issue 22, item 5). */
class EarlyAnswerTest {

    /** A source driven by the test, recording whether it is paused. */
    static final class Source implements ReadStream<Buffer> {
        Handler<Buffer> handler;
        Handler<Void> end;
        Handler<Throwable> failure;
        boolean paused = true;

        @Override
        public Source exceptionHandler(Handler<Throwable> h) {
            failure = h;
            return this;
        }

        @Override
        public Source handler(Handler<Buffer> h) {
            handler = h;
            return this;
        }

        @Override
        public Source pause() {
            paused = true;
            return this;
        }

        @Override
        public Source resume() {
            paused = false;
            return this;
        }

        @Override
        public Source fetch(long amount) {
            paused = false;
            return this;
        }

        @Override
        public Source endHandler(Handler<Void> h) {
            end = h;
            return this;
        }
    }

    @Test
    void anAnswerReceivedWholeIsRelayedEvenIfTheConnectionFailsAfterIt() {
        Source s = new Source();
        EarlyAnswer a = new EarlyAnswer(s, 1 << 20);
        assertThat(s.paused).as("read at once").isFalse();
        s.handler.handle(Buffer.buffer("<Error>NoSuchBucket"));
        s.handler.handle(Buffer.buffer("</Error>"));
        s.end.handle(null);
        s.failure.handle(new IllegalStateException("Connection was closed")); // the backend's close, after the end
        assertThat(a.complete()).isTrue();
        assertThat(a.failure()).isNull();
        // the reader comes later (the download permits took their time)
        StringBuilder got = new StringBuilder();
        List<String> events = new ArrayList<>();
        a.exceptionHandler(e -> events.add("failed"));
        a.endHandler(v -> events.add("ended"));
        a.handler(b -> got.append(b));
        a.resume();
        assertThat(got.toString()).isEqualTo("<Error>NoSuchBucket</Error>");
        assertThat(events).containsExactly("ended");
    }

    @Test
    void aFailureBeforeTheEndIsToldAfterTheBytesThatCameBeforeIt() {
        Source s = new Source();
        EarlyAnswer a = new EarlyAnswer(s, 1 << 20);
        s.handler.handle(Buffer.buffer("<Err"));
        s.failure.handle(new IllegalStateException("reset"));
        assertThat(a.failure()).hasMessage("reset");
        List<String> events = new ArrayList<>();
        a.exceptionHandler(e -> events.add("failed: " + e.getMessage()));
        a.endHandler(v -> events.add("ended"));
        a.handler(b -> events.add("data: " + b));
        a.pause();
        assertThat(events).isEmpty();
        a.fetch(1);
        assertThat(events).containsExactly("data: <Err", "failed: reset");
    }

    @Test
    void pastTheBoundTheSourceIsPausedAndResumedAsTheReaderTakes() {
        Source s = new Source();
        EarlyAnswer a = new EarlyAnswer(s, 8);
        s.handler.handle(Buffer.buffer("12345678"));
        assertThat(s.paused).isTrue();
        List<String> got = new ArrayList<>();
        a.handler(b -> got.add(b.toString()));
        a.resume();
        assertThat(got).containsExactly("12345678");
        assertThat(s.paused).isFalse();
    }
}
