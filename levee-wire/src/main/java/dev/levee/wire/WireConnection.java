package dev.levee.wire;

import dev.levee.core.Ticker;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpClientUpgradeHandler;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * levee-client's end of one check-wire connection to a limiter ({@link CheckWire}): the checks sent to the
 * limiter during one turn of the connection's event loop go out together, as one CHECKS frame and one write, at
 * the end of the turn (a task queued behind the turn's I/O) — no check waits for another to come back, and none
 * waits longer than the turn it arrived in. Answers come back in order; each is matched to its check.
 *
 * <p>The connection is confined to one Netty event loop: {@link #send} from another thread hands the check over
 * to it. The handshake is Netty's HTTP/1.1 upgrade ({@link HttpClientUpgradeHandler}); a limiter that answers
 * anything but 101 does not take the wire ({@link Peer#noWire}).
 *
 * <p>Failure: a check outstanding longer than {@code timeout} (checked every eighth of it), a closed connection, an
 * ERROR frame or an answer that does not match what was sent closes the connection and hands every outstanding
 * check to {@link Peer#failed}, once; GOAWAY (the limiter is stopping) stops new sends and closes the connection
 * once the outstanding checks are answered.
 *
 * <p>Used by levee-client ({@code LeveeClient}), by a limiter warming its own wire path, and by load generators
 * ({@code levee bench limiter --encoding wire}).
 *
 * @param <T> a check as the peer knows it
 */
public final class WireConnection<T> extends ChannelInboundHandlerAdapter {

    /** What a connection needs from, and tells, the limiter channel that owns it. All calls on its event loop. */
    public interface Peer<T> {
        /** Bytes of {@code check} in a frame. */
        int size(T check);

        /** Appends {@code check} to a CHECKS frame's body. */
        void write(T check, ByteBuf frame);

        /** Hands over {@code check}'s answer (the cursor holds it until the next answer is read). */
        void answered(T check, BinaryChecks.AnswerCursor answer);

        /** Hands over the checks outstanding when the connection failed: they go to another limiter. */
        void failed(List<T> checks, Throwable cause);

        /**
         * The connection is closed and holds no check any more: forget it.
         *
         * @param clean whether it ended without a failure (idle, retired, GOAWAY) rather than from one
         */
        void closed(WireConnection<T> connection, boolean clean);

        /** The limiter answered the upgrade with {@code status}: it does not take the wire (an older version). */
        void noWire(int status);
    }

    /** Most checks outstanding on one connection; beyond it {@link #send} refuses: 16 384. */
    public static final int MAX_OUTSTANDING = 16_384;
    /** A frame is cut before its body passes this many bytes: 1 MiB. */
    public static final int MAX_FRAME_BODY = 1 << 20;

    private final Peer<T> peer;
    private final EventLoop loop;
    private final Ticker ticker;
    private final long timeoutNanos;
    private final int maxBatch;
    /** The limiter's {@code host:port} (an IPv6 literal in brackets), for the Host header and messages. */
    private final String address;
    private Channel channel;
    private ChannelHandlerContext ctx;
    private final ArrayDeque<T> outstanding = new ArrayDeque<>();
    /** When each outstanding check was sent (ticker ns), in the same order. */
    private long[] sentAt = new long[64];
    private int sentHead;
    /** Checks per frame sent and not yet answered, oldest first (a ring). */
    private int[] frames = new int[16];
    private int framesHead;
    private int framesCount;
    private int nextId;
    private int expectId;
    /** The CHECKS frame being filled in this turn, or null. */
    private ByteBuf frame;
    private int frameStart;
    private int frameChecks;
    private final Runnable flushTask = this::flushFrame;
    private final BinaryChecks.AnswerCursor answers = new BinaryChecks.AnswerCursor();
    private ScheduledFuture<?> timeouts;
    private boolean ready;
    private boolean goingAway;
    private boolean failed;

    private WireConnection(Peer<T> peer, EventLoop loop, Ticker ticker, String address, long timeoutNanos,
                           int maxBatch) {
        this.peer = peer;
        this.loop = loop;
        this.ticker = ticker;
        this.address = address;
        this.timeoutNanos = timeoutNanos;
        this.maxBatch = maxBatch;
    }

    /**
     * Connects to a limiter and upgrades the connection to the wire.
     *
     * @param channelClass the socket channel class of {@code loop}'s transport (epoll or NIO)
     * @param host         the limiter's host name or address (an IPv6 literal without brackets)
     * @param port         the limiter's port
     * @param timeout      longest the connect and the upgrade may take, and longest a check may be outstanding
     * @return completes with the connection once upgraded; fails when the limiter cannot be reached or does not
     *         take the wire ({@link Peer#noWire} was called then)
     */
    public static <T> Future<WireConnection<T>> connect(Peer<T> peer, EventLoop loop, Class<? extends Channel> channelClass,
                                                 String host, int port, Ticker ticker, java.time.Duration timeout,
                                                 int maxBatch) {
        // as levee-runtime's HostPort writes it (this module sits below levee-runtime)
        String address = (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
        WireConnection<T> w = new WireConnection<>(peer, loop, ticker, address, timeout.toNanos(), maxBatch);
        Promise<WireConnection<T>> done = loop.newPromise();
        int millis = (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        Bootstrap b = new Bootstrap().group(loop).channel(channelClass)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, millis)
                .handler(new ChannelInitializer<>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        HttpClientCodec codec = new HttpClientCodec();
                        ch.pipeline().addLast("http", codec);
                        ch.pipeline().addLast("upgrade", new HttpClientUpgradeHandler(codec, w.new Upgrade(done), 8192));
                        ch.pipeline().addLast("aggregate", new HttpObjectAggregator(8192));
                        ch.pipeline().addLast("refused", w.new Refused(done));
                    }
                });
        b.connect(host, port).addListener((ChannelFutureListener) f -> {
            if (!f.isSuccess()) {
                done.tryFailure(f.cause());
                return;
            }
            w.channel = f.channel();
            HttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, CheckWire.PATH,
                    Unpooled.EMPTY_BUFFER);
            req.headers().set(HttpHeaderNames.HOST, address);
            f.channel().writeAndFlush(req);
        });
        ScheduledFuture<?> deadline = loop.schedule(() -> {
            if (done.tryFailure(new java.util.concurrent.TimeoutException("no answer to the check-wire upgrade within "
                    + millis + " ms")) && w.channel != null) {
                w.channel.close();
            }
        }, millis, TimeUnit.MILLISECONDS);
        done.addListener(f -> deadline.cancel(false));
        return done;
    }

    /** Netty's upgrade codec for {@link CheckWire#PROTOCOL}: on 101 the pipeline becomes frames and this handler. */
    private final class Upgrade implements HttpClientUpgradeHandler.UpgradeCodec {
        private final Promise<WireConnection<T>> done;

        Upgrade(Promise<WireConnection<T>> done) {
            this.done = done;
        }

        @Override
        public CharSequence protocol() {
            return CheckWire.PROTOCOL;
        }

        @Override
        public Collection<CharSequence> setUpgradeHeaders(ChannelHandlerContext c, HttpRequest upgradeRequest) {
            return List.of();
        }

        @Override
        public void upgradeTo(ChannelHandlerContext c, FullHttpResponse upgradeResponse) {
            var p = c.pipeline();
            p.remove("aggregate");
            p.remove("refused");
            p.addLast("levee-frames", new Frames());
            p.addLast("levee-wire", WireConnection.this);
            if (!done.trySuccess(WireConnection.this)) {
                c.close(); // the handshake's deadline passed first
            }
        }
    }

    /** Sees the answer to the upgrade request when it is not 101: the limiter does not take the wire. */
    private final class Refused extends ChannelInboundHandlerAdapter {
        private final Promise<WireConnection<T>> done;

        Refused(Promise<WireConnection<T>> done) {
            this.done = done;
        }

        @Override
        public void channelRead(ChannelHandlerContext c, Object msg) {
            try {
                if (msg instanceof FullHttpResponse r) {
                    int status = r.status().code();
                    // not HTTP at all (Netty's decoder then reports status 999): e.g. levee-client's line endpoint
                    if (done.tryFailure(new IllegalStateException(r.decoderResult().isFailure()
                            ? "the peer answered the check-wire upgrade with something other than HTTP"
                            : "limiter answered the check-wire upgrade with HTTP " + status))) {
                        peer.noWire(status);
                    }
                }
            } finally {
                ReferenceCountUtil.release(msg);
                c.close();
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext c) {
            done.tryFailure(new IllegalStateException("limiter closed the connection during the check-wire upgrade"));
            c.fireChannelInactive();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext c, Throwable cause) {
            done.tryFailure(cause);
            c.close();
        }
    }

    @Override
    public void handlerAdded(ChannelHandlerContext c) {
        ctx = c;
        ready = true;
        long period = Math.max(1_000_000L, timeoutNanos / 8);
        timeouts = loop.scheduleAtFixedRate(this::checkTimeouts, period, period, TimeUnit.NANOSECONDS);
    }

    /** The event loop this connection lives on. */
    public EventLoop eventLoop() {
        return loop;
    }

    /** Whether {@link #send} may take checks: upgraded, open, not going away. Read on the event loop. */
    public boolean usable() {
        return ready && !goingAway && !failed && outstanding.size() < MAX_OUTSTANDING;
    }

    /**
     * Queues a check into this turn's CHECKS frame. On the connection's event loop only.
     *
     * @return false when the connection takes no more checks ({@link #usable()} false): send it another way
     */
    public boolean send(T check) {
        if (!usable()) {
            return false;
        }
        int size = peer.size(check);
        if (frame != null && (frameChecks >= maxBatch || frame.writerIndex() - frameStart + size > MAX_FRAME_BODY)) {
            flushFrame(); // a full frame goes now; this check starts the next one
        }
        if (frame == null) {
            frame = ctx.alloc().ioBuffer(Math.max(64, 16 + size * 4));
            frameStart = CheckWire.startFrame(frame, CheckWire.CHECKS, nextId);
            frame.writeByte(BinaryChecks.VERSION);
            frame.writeShort(0); // the count, once the turn is over
            frameChecks = 0;
            loop.execute(flushTask);
        }
        peer.write(check, frame);
        frameChecks++;
        if (sentHead + outstanding.size() == sentAt.length || outstanding.size() == sentAt.length) {
            compactSentAt();
        }
        sentAt[sentHead + outstanding.size()] = ticker.read();
        outstanding.addLast(check);
        return true;
    }

    private void compactSentAt() {
        int n = outstanding.size();
        long[] to = n * 2 > sentAt.length ? new long[sentAt.length * 2] : sentAt;
        System.arraycopy(sentAt, sentHead, to, 0, n);
        sentAt = to;
        sentHead = 0;
    }

    /** Ends this turn's frame and writes it (a task queued by the turn's first {@link #send}). */
    private void flushFrame() {
        ByteBuf f = frame;
        if (f == null) {
            return;
        }
        frame = null;
        if (failed) {
            f.release();
            return;
        }
        f.setShort(frameStart + CheckWire.HEADER_BYTES + 1, frameChecks);
        CheckWire.endFrame(f, frameStart);
        pushFrame(frameChecks);
        nextId++;
        ctx.writeAndFlush(f, ctx.voidPromise());
    }

    private void pushFrame(int checks) {
        if (framesCount == frames.length) {
            int[] to = new int[frames.length * 2];
            for (int k = 0; k < framesCount; k++) {
                to[k] = frames[(framesHead + k) % frames.length];
            }
            frames = to;
            framesHead = 0;
        }
        frames[(framesHead + framesCount) % frames.length] = checks;
        framesCount++;
    }

    /**
     * Cuts the received bytes into frames ({@link CheckWire}: a u32 length, then type, id and body) and hands each to
     * the connection where it lies in the buffer, without a slice per frame as {@link CheckWire#frameDecoder()}
     * makes: the client reads every ANSWERS frame in place. A length over {@link CheckWire#MAX_FRAME} fails the
     * connection, as that decoder does.
     */
    private final class Frames extends io.netty.handler.codec.ByteToMessageDecoder {
        @Override
        protected void decode(ChannelHandlerContext c, ByteBuf in, List<Object> out) {
            while (in.readableBytes() >= 4) {
                int start = in.readerIndex();
                int length = in.getInt(start);
                if (length < 0 || length > CheckWire.MAX_FRAME) {
                    throw new io.netty.handler.codec.TooLongFrameException("frame length " + (length & 0xFFFFFFFFL)
                            + " exceeds " + CheckWire.MAX_FRAME);
                }
                if (in.readableBytes() - 4 < length) {
                    return; // the rest of the frame comes with a later read
                }
                int end = start + 4 + length;
                in.readerIndex(start + 4);
                try {
                    if (!failed) {
                        frame(in, end);
                    }
                } catch (IllegalArgumentException | IllegalStateException e) {
                    fail(new IllegalStateException("malformed answer: " + e.getMessage()));
                } finally {
                    in.readerIndex(end);
                }
            }
        }
    }

    /** Reads one frame: {@code f} from its reader index (the type) to {@code end}. */
    private void frame(ByteBuf f, int end) {
        if (end - f.readerIndex() < 5) {
            throw new IllegalStateException("frame of " + (end - f.readerIndex()) + " bytes");
        }
        byte type = f.readByte();
        int id = f.readInt();
        switch (type) {
            case CheckWire.ANSWERS -> answers(f, end, id);
            case CheckWire.GOAWAY -> {
                goingAway = true;
                closeIfDone();
            }
            case CheckWire.ERROR -> fail(new IllegalStateException("limiter refused frame " + id + ": "
                    + CheckWire.readError(f.slice(f.readerIndex(), end - f.readerIndex()))));
            default -> throw new IllegalStateException("unknown frame type " + type);
        }
    }

    private void answers(ByteBuf f, int end, int id) {
        if (framesCount == 0) {
            throw new IllegalStateException("an answer to frame " + id + ", but no frame is outstanding");
        }
        if (id != expectId) {
            throw new IllegalStateException("answer to frame " + id + " where " + expectId + " was next");
        }
        int expected = frames[framesHead];
        int n = answers.begin(f, end);
        if (n != expected) {
            throw new IllegalStateException(n + " answers for " + expected + " checks");
        }
        framesHead = (framesHead + 1) % frames.length;
        framesCount--;
        expectId++;
        for (int k = 0; k < n; k++) {
            answers.next();
            T check = outstanding.pollFirst();
            sentHead++;
            peer.answered(check, answers);
        }
        answers.end();
        if (outstanding.isEmpty()) {
            sentHead = 0;
        }
        closeIfDone();
    }

    private void closeIfDone() {
        if (goingAway && outstanding.isEmpty() && frame == null) {
            ctx.close();
        }
    }

    private void checkTimeouts() {
        if (!failed && !outstanding.isEmpty() && ticker.read() - sentAt[sentHead] > timeoutNanos) {
            fail(new java.util.concurrent.TimeoutException("limiter " + address + " answered no check within "
                    + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms"));
        }
    }

    /** Fails every outstanding check over to the peer, once, and closes the connection. */
    private void fail(Throwable cause) {
        end(cause, false);
    }

    private void end(Throwable cause, boolean clean) {
        if (failed) {
            return;
        }
        failed = true;
        if (timeouts != null) {
            timeouts.cancel(false);
        }
        if (frame != null) {
            frame.release();
            frame = null;
        }
        List<T> left = new ArrayList<>(outstanding);
        outstanding.clear();
        framesCount = 0;
        if (ctx != null) {
            ctx.close();
        }
        if (!left.isEmpty()) {
            peer.failed(left, cause);
        }
        peer.closed(this, clean && left.isEmpty());
    }

    /** Sends no more checks and closes the connection once the outstanding ones are answered. */
    public void retire() {
        goingAway = true;
        if (ctx != null) {
            closeIfDone();
        }
    }

    /** Closes the connection; checks outstanding go to {@link Peer#failed} with {@code cause}. */
    public void close(Throwable cause) {
        if (loop.inEventLoop()) {
            fail(cause);
        } else {
            loop.execute(() -> fail(cause));
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext c) {
        // with nothing outstanding (idle, retired, GOAWAY answered) a closed connection is no failure
        end(new IllegalStateException(goingAway ? "limiter " + address + " stopped" : "connection to limiter "
                + address + " closed"), outstanding.isEmpty());
        c.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext c, Throwable cause) {
        fail(cause);
    }
}
