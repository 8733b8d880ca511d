package dev.levee.observer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.core.MembershipView;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Metrics;
import io.vertx.core.Vertx;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The observer's live page (issue 14 item 3): off unless started with it, served from resources loaded once,
 * with the headers of a loopback admin page; the rest of the observer's API is unchanged beside it.
 */
class StatsPageTest {

    static Vertx vertx;
    static ObserverService on;
    static ObserverService off;
    static final HttpClient HTTP = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build();

    @BeforeAll
    static void start() throws Exception {
        vertx = Vertx.vertx();
        MembershipView view = new MembershipView(3, 2, List.of());
        on = ObserverService.start(vertx, new HostPort("127.0.0.1", 0), () -> view, () -> true, Metrics.newRegistry(),
                Duration.ofSeconds(1), StatsPage.load()).await(10, TimeUnit.SECONDS);
        off = ObserverService.start(vertx, new ObserverService.Options(new HostPort("127.0.0.1", 0),
                Duration.ofSeconds(3), 2, 16), System::nanoTime, Metrics.newRegistry()).await(10, TimeUnit.SECONDS);
    }

    @AfterAll
    static void stop() throws Exception {
        vertx.close().await(10, TimeUnit.SECONDS);
    }

    static HttpResponse<String> send(ObserverService o, String method, String path) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + o.port() + path))
                .method(method, HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void thePageAndItsFilesAreServedWithTheirTypesAndTheAdminPageHeaders() throws Exception {
        for (String[] f : new String[][] {{"/ui/", "text/html; charset=utf-8", "<table id=\"stats\">"},
                {"/ui/app.js", "text/javascript; charset=utf-8", "../v1/stats"},
                {"/ui/app.css", "text/css; charset=utf-8", ".plots"}}) {
            HttpResponse<String> r = send(on, "GET", f[0]);
            assertThat(r.statusCode()).as(f[0]).isEqualTo(200);
            assertThat(r.headers().firstValue("Content-Type")).as(f[0]).hasValue(f[1]);
            assertThat(r.headers().firstValue("X-Content-Type-Options")).hasValue("nosniff");
            assertThat(r.headers().firstValue("Content-Security-Policy")).hasValue(StatsPage.CONTENT_SECURITY_POLICY);
            assertThat(r.headers().firstValue("X-Frame-Options")).hasValue("DENY");
            assertThat(r.body()).contains(f[2]);
        }
        assertThat(StatsPage.CONTENT_SECURITY_POLICY).contains("script-src 'self'").contains("connect-src 'self'")
                .doesNotContain("unsafe");
    }

    @Test
    void slashUiRedirectsToTheDirectorySoThatRelativeAddressesResolve() throws Exception {
        HttpResponse<String> r = send(on, "GET", "/ui");
        assertThat(r.statusCode()).isEqualTo(301);
        assertThat(r.headers().firstValue("Location")).hasValue("/ui/");
    }

    @Test
    void headAnswersTheLengthAndOtherMethodsAre405() throws Exception {
        HttpResponse<String> get = send(on, "GET", "/ui/app.js");
        HttpResponse<String> head = send(on, "HEAD", "/ui/app.js");
        assertThat(head.statusCode()).isEqualTo(200);
        assertThat(head.headers().firstValue("Content-Length"))
                .hasValue(String.valueOf(get.body().getBytes(java.nio.charset.StandardCharsets.UTF_8).length));
        HttpResponse<String> post = send(on, "POST", "/ui/");
        assertThat(post.statusCode()).isEqualTo(405);
        assertThat(post.headers().firstValue("Allow")).hasValue("GET, HEAD");
    }

    @Test
    void anUnknownFileOfThePageIs404NamingIt() throws Exception {
        HttpResponse<String> r = send(on, "GET", "/ui/../../etc/passwd");
        assertThat(r.statusCode()).isEqualTo(404);
        assertThat(send(on, "GET", "/ui/nope.js").body()).contains("no such file of the live page: /ui/nope.js");
    }

    @Test
    void anObserverStartedWithoutThePageAnswers404NamingTheFlag() throws Exception {
        for (String path : List.of("/ui", "/ui/", "/ui/app.js")) {
            HttpResponse<String> r = send(off, "GET", path);
            assertThat(r.statusCode()).as(path).isEqualTo(404);
            assertThat(r.body()).as(path).contains("the live page is off; start the observer with --ui");
        }
        assertThat(send(off, "GET", "/v1/limiters").statusCode()).isEqualTo(200);
    }

    @Test
    void theStatisticsTheScriptPollsAreServedBesideThePage() throws Exception {
        HttpResponse<String> r = send(on, "GET", "/v1/stats");
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).contains("\"membershipRevision\":3");
    }
}
