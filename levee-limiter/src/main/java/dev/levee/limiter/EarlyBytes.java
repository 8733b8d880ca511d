package dev.levee.limiter;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.util.ArrayDeque;

/**
 * Keeps the bytes a client sent after its upgrade request and before the 101 (RFC 9110 §7.8 lets a client start
 * the new protocol right after its request) until the check wire's handlers are in place, then hands them on in
 * order and leaves the pipeline.
 *
 * <p>It sits just ahead of Vert.x's connection handler from the moment the limiter takes the upgrade: when Vert.x
 * removes its HTTP decoder for the switch, the decoder passes on what it holds undecoded — the early frames — and
 * without this handler Vert.x's HTTP connection, still in place at that moment, drops them and the client waits for
 * answers that never come. Messages that are not raw bytes (the request's end) pass through.
 */
final class EarlyBytes extends ChannelInboundHandlerAdapter {

    private final ArrayDeque<ByteBuf> held = new ArrayDeque<>(2);
    private ChannelHandlerContext ctx;

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ByteBuf b) {
            held.add(b);
        } else {
            ctx.fireChannelRead(msg);
        }
    }

    /** Hands the bytes held to the handlers after this one (the frame decoder), then leaves. On the event loop. */
    void release() {
        while (!held.isEmpty() && !ctx.isRemoved()) {
            ctx.fireChannelRead(held.poll());
        }
        if (!held.isEmpty()) {
            dropAll();
        }
        ctx.fireChannelReadComplete(); // answers go out once per read burst (WireHandler)
        ctx.pipeline().remove(this);
    }

    /** The upgrade failed: drops the bytes held and leaves. */
    void discard() {
        dropAll();
        if (!ctx.isRemoved()) {
            ctx.pipeline().remove(this);
        }
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        dropAll();
    }

    private void dropAll() {
        for (ByteBuf b; (b = held.poll()) != null; ) {
            b.release();
        }
    }
}
