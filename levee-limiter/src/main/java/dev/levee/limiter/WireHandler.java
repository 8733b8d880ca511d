package dev.levee.limiter;

import dev.levee.wire.BinaryChecks;
import dev.levee.wire.CheckWire;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.DecoderException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The limiter's end of one check-wire connection ({@link CheckWire}), after the HTTP upgrade: takes the frames
 * {@link CheckWire#frameDecoder()} cuts, decides each CHECKS frame's checks in order on the connection's event
 * loop, and writes one ANSWERS frame per CHECKS frame into a buffer that goes out once per read burst
 * ({@code channelReadComplete}): the checks a client sent together cost one read and one write.
 *
 * <p>A frame that cannot be read — an unknown type, a length over {@link CheckWire#MAX_FRAME}, a body that is not
 * a well-formed check body — is answered with an ERROR frame naming what is wrong, counted as invalid, and the
 * connection is closed: none of its checks is decided (the body is read through once before any decision).
 * Reads never reach Vert.x's handler behind this one; closing and shutdown events do. A peer that does not read
 * its answers is not read from either (back-pressure): while the connection's output is over Netty's high-water
 * mark, no more frames are read.
 */
final class WireHandler extends ChannelInboundHandlerAdapter {

    private static final Logger LOG = LoggerFactory.getLogger("levee.limiter");
    /** A burst's answers go out before this many bytes pile up: 64 KiB. */
    private static final int FLUSH_BYTES = 64 * 1024;

    private final Checks checks;
    private final BinaryChecks.CheckCursor cursor = new BinaryChecks.CheckCursor();
    private final Decider.Decision decision = new Decider.Decision();
    private ByteBuf out;
    private boolean closing;

    WireHandler(Checks checks) {
        this.checks = checks;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ByteBuf frame)) {
            ctx.fireChannelRead(msg);
            return;
        }
        try {
            if (!closing) {
                frame(ctx, frame);
            }
        } finally {
            frame.release();
        }
    }

    private void frame(ChannelHandlerContext ctx, ByteBuf frame) {
        if (frame.readableBytes() < 5) {
            refuse(ctx, 0, "frame of " + frame.readableBytes() + " bytes: too short for its type and id");
            return;
        }
        byte type = frame.readByte();
        int id = frame.readInt();
        if (type != CheckWire.CHECKS) {
            refuse(ctx, id, "frame type " + type + " is not CHECKS (" + CheckWire.CHECKS + ")");
            return;
        }
        if (out == null) {
            out = ctx.alloc().ioBuffer(256);
        }
        int start = CheckWire.startFrame(out, CheckWire.ANSWERS, id);
        try {
            checks.decideFrame(frame, cursor, out, decision);
        } catch (IllegalArgumentException e) {
            out.writerIndex(start); // nothing of this frame was decided: the body is read through first
            refuse(ctx, id, e.getMessage());
            return;
        }
        CheckWire.endFrame(out, start);
        if (out.readableBytes() >= FLUSH_BYTES) {
            ctx.writeAndFlush(out, ctx.voidPromise());
            out = null;
        }
    }

    /** Answers ERROR, counts the frame as invalid and closes the connection once the ERROR is written. */
    private void refuse(ChannelHandlerContext ctx, int id, String why) {
        checks.countInvalidFrame();
        LOG.debug("check wire from {}: {}; closing the connection", ctx.channel().remoteAddress(), why);
        if (out == null) {
            out = ctx.alloc().ioBuffer(64);
        }
        CheckWire.writeError(out, id, why);
        closing = true;
        ByteBuf b = out;
        out = null;
        ctx.writeAndFlush(b).addListener(ChannelFutureListener.CLOSE);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        if (out != null) {
            ByteBuf b = out;
            out = null;
            ctx.writeAndFlush(b, ctx.voidPromise());
        }
        if (!closing && !ctx.channel().isWritable() && ctx.channel().config().isAutoRead()) {
            // the peer does not read its answers as fast as it sends checks: read no more checks until it does,
            // so that its answers wait in its socket, not in this limiter's memory
            ctx.channel().config().setAutoRead(false);
        }
        ctx.fireChannelReadComplete();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable() && !closing && !ctx.channel().config().isAutoRead()) {
            ctx.channel().config().setAutoRead(true);
        }
        ctx.fireChannelWritabilityChanged();
    }

    /** Tells the client the limiter is stopping (GOAWAY): it sends nothing more and closes once answered. */
    void goAway(ChannelHandlerContext ctx) {
        if (!ctx.executor().inEventLoop()) {
            ctx.executor().execute(() -> goAway(ctx));
            return;
        }
        if (closing || !ctx.channel().isActive()) {
            return;
        }
        ByteBuf b = out != null ? out : ctx.alloc().ioBuffer(16);
        out = null;
        CheckWire.writeGoAway(b);
        ctx.writeAndFlush(b, ctx.voidPromise());
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (cause instanceof io.netty.handler.codec.TooLongFrameException && !closing) {
            // the frame decoder's own words name its arithmetic, not the rule
            refuse(ctx, 0, "frame length over the limit of " + CheckWire.MAX_FRAME + " bytes (or not a frame of "
                    + CheckWire.PROTOCOL + " at all)");
            return;
        }
        if (cause instanceof DecoderException && !closing) {
            // from the frame decoder: a corrupted stream
            refuse(ctx, 0, cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage());
            return;
        }
        LOG.debug("check wire from {} failed: {}", ctx.channel().remoteAddress(), cause.toString());
        ctx.close();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        if (out != null) {
            out.release();
            out = null;
        }
    }
}
