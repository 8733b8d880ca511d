package dev.levee.gateway;

import dev.levee.runtime.Http;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Handler;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;
import java.util.function.Supplier;

/**
 * The gateway's admin listener (docs/gateway.md): {@code GET /health} (liveness: 503 once the gateway
 * drains), {@code GET /health/ready} (readiness and aggregated counters, behind a bearer token compared in
 * constant time), {@code GET /metrics} (Prometheus) and {@code GET /openapi.yaml} (the contract). Anything
 * else is {@code 404}. It lives on its own listener so that no bucket name is shadowed.
 */
final class AdminEndpoint implements Handler<HttpServerRequest> {

    private final MeterRegistry registry;
    private final byte[] healthToken;
    private final BooleanSupplier closing;
    private final IntSupplier inFlight;
    private final Supplier<ReadyReport> ready;

    /**
     * @param registry    the meters {@code /metrics} shows
     * @param healthToken the bearer token of {@code /health/ready}; null = it answers 401 to everyone
     * @param closing     whether the gateway drains
     * @param inFlight    the requests in flight {@code /health} reports
     * @param ready       what {@code /health/ready} reports now
     */
    AdminEndpoint(MeterRegistry registry, String healthToken, BooleanSupplier closing, IntSupplier inFlight,
                  Supplier<ReadyReport> ready) {
        this.registry = registry;
        this.healthToken = healthToken == null ? null : healthToken.getBytes(StandardCharsets.UTF_8);
        this.closing = closing;
        this.inFlight = inFlight;
        this.ready = ready;
    }

    @Override
    public void handle(HttpServerRequest req) {
        String path = req.path();
        if (req.method() != HttpMethod.GET) {
            Http.error(req.response(), 404, "no such endpoint");
        } else if (path.equals("/health")) {
            boolean closing = this.closing.getAsBoolean();
            Http.json(req.response(), closing ? 503 : 200, Map.of("status", closing ? "closing" : "ready",
                    "inFlight", inFlight.getAsInt()));
        } else if (path.equals("/health/ready")) {
            if (!authorized(req.getHeader("Authorization"))) {
                req.response().putHeader("WWW-Authenticate", "Bearer realm=\"levee\"");
                Http.error(req.response(), 401, "a valid bearer token is required");
            } else {
                ReadyReport r = ready.get();
                Http.json(req.response(), r.status().equals("ready") ? 200 : 503, r);
            }
        } else if (path.equals("/metrics")) {
            Http.metrics(req, registry);
        } else if (path.equals("/openapi.yaml")) {
            openApi(req.response());
        } else {
            Http.error(req.response(), 404, "no such endpoint");
        }
    }

    private boolean authorized(String header) {
        if (healthToken == null || header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return false;
        }
        byte[] presented = header.substring(7).strip().getBytes(StandardCharsets.UTF_8);
        return MessageDigest.isEqual(presented, healthToken); // constant time in the token's content
    }

    private static void openApi(HttpServerResponse resp) {
        try (InputStream in = AdminEndpoint.class.getResourceAsStream("openapi.yaml")) {
            if (in == null) {
                Http.error(resp, 404, "no OpenAPI document in this build");
                return;
            }
            resp.putHeader("Content-Type", "application/yaml").end(Buffer.buffer(in.readAllBytes()));
        } catch (IOException e) {
            Http.error(resp, 500, "cannot read the OpenAPI document");
        }
    }
}
