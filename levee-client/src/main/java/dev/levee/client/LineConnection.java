package dev.levee.client;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelInputShutdownReadComplete;
import io.netty.handler.timeout.IdleStateEvent;
import io.vertx.core.Completable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connection of the line endpoint (levee-line/1, {@link LineDecoder}, {@link LineAnswers}): a Netty handler
 * that sits in the socket's pipeline before Vert.x's own, so the bytes never become Vert.x buffers.
 *
 * <p><b>Order.</b> Requests are checked as they are decoded and may be decided out of order (they can go to
 * different limiters); their answers go out in request order. Each request takes a slot of a ring of at most
 * {@link #MAX_PENDING}; a slot is the check's completion handler ({@link LeveeClient#check(dev.levee.s3.S3Classification,
 * io.vertx.core.Completable)}), so a check allocates neither a callback nor a future, and is reused once its answer
 * is written. Answers are written into one pooled buffer and flushed once per read
 * burst ({@code channelReadComplete}) or, for answers that come later, once per event-loop turn.
 *
 * <p><b>Back-pressure.</b> With {@link #MAX_PENDING} checks outstanding, or while the socket does not take
 * more output, decoding stops and reading pauses; the undecoded rest waits and is decoded as answers leave.
 *
 * <p><b>Ends.</b> A malformed request is answered {@code error} after the answers due before it, then the
 * connection closes: its framing is lost. The idle timer (Vert.x's, ahead of this handler: no byte received for
 * the idle timeout) closes the connection only while no check is pending. {@link #drain()} (graceful shutdown) stops reading, decodes what was
 * already received, answers every request and closes. A peer that half-closes (shuts down its output, as
 * {@code nc -N} or a script does after its last request; the server allows half-closure) gets the answers to every
 * request it sent, then the close; a request cut short by that end is answered {@code error}. A check that completes after the connection closed is
 * dropped. All state is touched on the channel's event loop only; a completion from another thread is moved
 * there.
 */
final class LineConnection extends ChannelInboundHandlerAdapter implements LineDecoder.Sink {

    private static final Logger LOG = LoggerFactory.getLogger("levee.client");

    /** Most requests of one connection waiting for their answers. */
    static final int MAX_PENDING = 128;

    /** Decides one request: {@link LeveeClient#check} on the connection's Vert.x context. */
    interface Checks {
        /**
         * Starts deciding {@code request} (valid only during the call) and completes {@code done} with the decision,
         * exactly once, now or later, on any thread.
         */
        void check(LineDecoder.Request request, Completable<ClientDecision> done);
    }

    private final Checks checks;
    private final LineDecoder decoder = new LineDecoder();
    private final Slot[] ring = new Slot[MAX_PENDING];
    private final Runnable flushTask = this::flushTask;
    private ChannelHandlerContext ctx;
    /** Ring position of the oldest request waiting for its answer, and how many wait. */
    private int head;
    private int pending;
    /** Answers written but not flushed. */
    private ByteBuf out;
    /** Received bytes not decoded yet (back-pressure), or null. */
    private ByteBuf held;
    private boolean reading;
    private boolean flushScheduled;
    private boolean pumping;
    private boolean repump;
    /** No more requests are decoded: malformed input or a drain; the connection closes once answers are out. */
    private boolean closeWhenAnswered;
    private boolean draining;
    /** The peer shut down its output (half-close): no more bytes will come. */
    private boolean inputEnded;
    private boolean closed;

    LineConnection(Checks checks) {
        this.checks = checks;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ByteBuf in)) {
            ctx.fireChannelRead(msg);
            return;
        }
        if (closed || (closeWhenAnswered && !draining) || decoder.broken()) {
            in.release(); // after a malformed request nothing more is read
            return;
        }
        reading = true;
        if (held != null) {
            ByteBuf both = ctx.alloc().buffer(held.readableBytes() + in.readableBytes());
            both.writeBytes(held).writeBytes(in);
            held.release();
            in.release();
            held = both;
        } else {
            held = in;
        }
        pump();
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        reading = false;
        flush();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable()) {
            pump();
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof ChannelInputShutdownEvent) {
            inputEnded();
            return;
        }
        if (evt instanceof ChannelInputShutdownReadComplete) {
            return;
        }
        if (evt instanceof IdleStateEvent && pending > 0) {
            return; // nothing came in for a while, but a check is being decided: not idle (the timer comes again)
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        closed = true;
        release();
        ctx.fireChannelInactive();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        closed = true;
        release();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        // a peer that resets its connection is routine; nothing Vert.x's handler behind this one needs to see
        LOG.debug("line connection {}: {}", ctx.channel().remoteAddress(), cause.toString());
        closed = true;
        release();
        ctx.close();
    }

    /**
     * Starts a graceful close (the server's shutdown): reads no more, answers every request already received
     * — the whole requests among the bytes read so far — then closes.
     */
    void drain() {
        if (closed || draining) {
            return;
        }
        draining = true;
        closeWhenAnswered = true;
        ctx.channel().config().setAutoRead(false);
        pump();
        flush();
    }

    /** The peer shut down its output: answer what it sent, then close (the output side stays open until then). */
    private void inputEnded() {
        if (closed || inputEnded) {
            return;
        }
        inputEnded = true;
        closeWhenAnswered = true;
        pump();
        flush();
    }

    private void release() {
        if (held != null) {
            held.release();
            held = null;
        }
        if (out != null) {
            out.release();
            out = null;
        }
    }

    /** Decodes what waits while there is room, writes the answers that are due; re-entrant calls loop here. */
    private void pump() {
        if (pumping) {
            repump = true;
            return;
        }
        pumping = true;
        try {
            do {
                repump = false;
                writeDueAnswers();
                if (held != null && !closed && room()) {
                    ByteBuf in = held;
                    decoder.decode(in, this);
                    if (!in.isReadable() || decoder.broken()) {
                        in.release();
                        held = null;
                    }
                }
                if (inputEnded && held == null && !closed && pending < MAX_PENDING) {
                    decoder.endOfInput(this); // a request cut short by the end of input: answered error
                }
            } while (repump);
        } finally {
            pumping = false;
        }
        if (closed) {
            return;
        }
        boolean paused = held != null || closeWhenAnswered;
        if (ctx.channel().config().isAutoRead() == paused) {
            ctx.channel().config().setAutoRead(!paused);
        }
        if (closeWhenAnswered && pending == 0 && held == null) {
            closeNow();
        } else if (out != null && !reading) {
            scheduleFlush();
        }
    }

    private boolean room() {
        return pending < MAX_PENDING && ctx.channel().isWritable();
    }

    @Override
    public boolean request(LineDecoder.Request request, boolean rateLimitOnAccept) {
        Slot s = enqueue();
        s.rateLimitOnAccept = rateLimitOnAccept;
        try {
            checks.check(request, s);
        } catch (RuntimeException e) {
            s.complete(null, e);
        }
        return room();
    }

    @Override
    public void malformed(String reason) {
        Slot s = enqueue();
        s.error = reason;
        s.done = true;
        closeWhenAnswered = true;
        repump = true;
    }

    private Slot enqueue() {
        // decoding stops while the ring is full (room()), so there is a free slot here
        int i = (head + pending) % MAX_PENDING;
        Slot s = ring[i];
        if (s == null) {
            s = new Slot();
            ring[i] = s;
        }
        s.reset();
        pending++;
        return s;
    }

    private void writeDueAnswers() {
        while (pending > 0 && ring[head].done) {
            Slot s = ring[head];
            if (!closed) {
                if (out == null) {
                    out = ctx.alloc().ioBuffer(LineAnswers.MAX_DECISION_BYTES);
                }
                if (s.error != null) {
                    LineAnswers.writeError(out, s.error);
                } else {
                    LineAnswers.write(out, s.failure == null ? s.decision : null, s.rateLimitOnAccept);
                }
            }
            s.reset();
            head = (head + 1) % MAX_PENDING;
            pending--;
        }
    }

    private void scheduleFlush() {
        if (!flushScheduled) {
            flushScheduled = true;
            ctx.executor().execute(flushTask);
        }
    }

    private void flushTask() {
        flushScheduled = false;
        flush();
    }

    private void flush() {
        if (out != null && !closed) {
            ByteBuf o = out;
            out = null;
            ctx.writeAndFlush(o, ctx.voidPromise());
        }
    }

    private void closeNow() {
        closed = true;
        if (held != null) {
            held.release();
            held = null;
        }
        if (out != null) {
            ByteBuf o = out;
            out = null;
            ctx.writeAndFlush(o).addListener(ChannelFutureListener.CLOSE);
        } else {
            ctx.close();
        }
    }

    /** One request waiting for its answer; the completion handler of its check. */
    private final class Slot implements Completable<ClientDecision> {
        boolean done;
        boolean rateLimitOnAccept;
        ClientDecision decision;
        Throwable failure;
        String error;

        void reset() {
            done = false;
            decision = null;
            failure = null;
            error = null;
        }

        @Override
        public void complete(ClientDecision result, Throwable failure) {
            if (!ctx.executor().inEventLoop()) {
                ctx.executor().execute(() -> complete(result, failure));
                return;
            }
            this.decision = result;
            this.failure = failure;
            this.done = true;
            pump();
        }
    }
}
