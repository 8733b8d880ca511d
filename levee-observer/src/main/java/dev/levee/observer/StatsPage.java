package dev.levee.observer;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Map;

/**
 * The observer's live page (issue 14 item 3): {@code GET /ui/} serves a static HTML page whose script polls
 * the observer's own {@code GET /v1/stats} every second, shows the table of {@code levee top}, keeps a rolling
 * history of the last minutes in the browser and plots it per entry, with the membership and the configuration
 * revisions (docs/stats-page.md).
 *
 * <p>The files are class-path resources under {@code dev/levee/observer/ui/}, read once when the page is
 * created (never from disk per request). Answers carry headers for a loopback admin page: an exact
 * {@code Content-Type}, {@code X-Content-Type-Options: nosniff}, a {@code Content-Security-Policy} that
 * allows only the observer's own origin (no inline script or style), no framing, no referrer, and
 * {@code Cache-Control: no-cache} so that an upgraded observer's page is loaded at once.
 *
 * <p>The page is off unless the observer is started with it (CLI {@code levee observer --ui}, default off);
 * an observer without it answers {@code /ui} with 404 and a message naming the flag.
 */
public final class StatsPage {

    /** The policy sent with every file of the page. */
    public static final String CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'self';"
            + " img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

    private record Asset(String contentType, Buffer body) {
    }

    private static final String DIR = "ui/";

    private final Map<String, Asset> assets;

    private StatsPage(Map<String, Asset> assets) {
        this.assets = assets;
    }

    /**
     * Reads the page's files from the class path once.
     *
     * @return the page, ready to serve
     * @throws UncheckedIOException when a file of the page is missing from the class path (a broken build)
     */
    public static StatsPage load() {
        return new StatsPage(Map.of(
                "/ui/", asset("index.html", "text/html; charset=utf-8"),
                "/ui/app.js", asset("app.js", "text/javascript; charset=utf-8"),
                "/ui/app.css", asset("app.css", "text/css; charset=utf-8")));
    }

    private static Asset asset(String name, String type) {
        try (InputStream in = StatsPage.class.getResourceAsStream(DIR + name)) {
            if (in == null) {
                throw new UncheckedIOException(new IOException("observer page file missing from the class path: "
                        + DIR + name));
            }
            return new Asset(type, Buffer.buffer(in.readAllBytes()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Whether {@code path} belongs to the page ({@code /ui} and anything under {@code /ui/}). */
    static boolean owns(String path) {
        return path.equals("/ui") || path.startsWith("/ui/");
    }

    /**
     * Answers a request for the page, or a 404 naming {@code --ui} when {@code page} is null (the page is off).
     * {@code /ui} redirects to {@code /ui/} so that the page's relative addresses resolve under it.
     */
    static void handle(StatsPage page, HttpServerRequest req) {
        HttpServerResponse resp = req.response();
        String path = req.path();
        if (page == null) {
            dev.levee.runtime.Http.error(resp, 404, "the live page is off; start the observer with --ui");
            return;
        }
        if (req.method() != HttpMethod.GET && req.method() != HttpMethod.HEAD) {
            resp.putHeader("Allow", "GET, HEAD");
            dev.levee.runtime.Http.error(resp, 405, "the live page answers GET and HEAD only");
            return;
        }
        if (path.equals("/ui") || path.equals("/ui/index.html")) {
            secure(resp).setStatusCode(301).putHeader("Location", "/ui/").end();
            return;
        }
        Asset a = page.assets.get(path);
        if (a == null) {
            dev.levee.runtime.Http.error(secure(resp), 404, "no such file of the live page: " + path);
            return;
        }
        secure(resp).setStatusCode(200).putHeader("Content-Type", a.contentType());
        if (req.method() == HttpMethod.HEAD) {
            resp.putHeader("Content-Length", String.valueOf(a.body().length())).end();
        } else {
            resp.end(a.body());
        }
    }

    private static HttpServerResponse secure(HttpServerResponse resp) {
        return resp.putHeader("X-Content-Type-Options", "nosniff")
                .putHeader("Content-Security-Policy", CONTENT_SECURITY_POLICY)
                .putHeader("X-Frame-Options", "DENY")
                .putHeader("Referrer-Policy", "no-referrer")
                .putHeader("Cache-Control", "no-cache");
    }
}
