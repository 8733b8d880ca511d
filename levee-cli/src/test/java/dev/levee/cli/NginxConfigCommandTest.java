package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import dev.levee.stack.EmbeddedNginx;
import dev.levee.nginx.NginxConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** {@code levee nginx-config}: every part renders completely, carries the given values, refuses bad ones. */
class NginxConfigCommandTest {

    @TempDir
    Path dir;

    static final Pattern LEFT_OVER = Pattern.compile("\\{\\{[a-z_:]+}}");
    /** A directive that runs before the access phase and would let a request skip the check. */
    static final Pattern SKIPS_CHECK = Pattern.compile("(?m)^\\s*(return|rewrite)\\s");

    @ParameterizedTest
    @ValueSource(strings = {"full", "http", "check", "site"})
    void everyPartRendersCompletelyWithoutADirectiveThatSkipsTheCheck(String part) {
        MainTest.Run r = MainTest.run("nginx-config", "--part", part);
        assertThat(r.status()).as(r.err()).isZero();
        assertThat(r.out()).isNotBlank().doesNotContainPattern(LEFT_OVER.pattern());
        assertThat(SKIPS_CHECK.matcher(r.out()).find()).as("return/rewrite in the %s part", part).isFalse();
    }

    @Test
    void theRateLimitFieldsOnAcceptedResponsesAreOffUnlessAsked() {
        MainTest.Run off = MainTest.run("nginx-config", "--part", "site");
        assertThat(off.out()).contains("attempt(\"/.levee\", { on_failure = \"allow\", batches = true, chunked_location = \"@levee_chunked\" })");
        MainTest.Run on = MainTest.run("nginx-config", "--part", "site", "--ratelimit-headers-on-accept");
        assertThat(on.status()).as(on.err()).isZero();
        assertThat(on.out()).contains("attempt(\"/.levee\", { on_failure = \"allow\", ratelimit_on_accept = true, chunked_location = \"@levee_chunked\" })");
        assertThat(MainTest.run("nginx-config", "--part", "check").out())
                .contains("set $levee_ratelimit_policy \"\";").contains("set $levee_ratelimit \"\";")
                .contains("set $levee_chunked_body \"\";");
        // issue 24: the site hands a signed chunked upload to @levee_chunked, which sends it chunked
        assertThat(off.out()).contains("location @levee_chunked {", "proxy_set_body $levee_chunked_body;",
                "proxy_set_header Transfer-Encoding \"chunked\";", "proxy_set_header Content-Length \"\";");
    }

    @Test
    void batchesAreOnWhereTheyCanWorkOffWhereAskedAndRefusedWhereTheyCannotWork() {
        String batched = "attempt(\"/.levee\", { on_failure = \"allow\", batches = true, chunked_location = \"@levee_chunked\" })";
        MainTest.Run on = MainTest.run("nginx-config", "--part", "site", "--batches");
        assertThat(on.status()).as(on.err()).isZero();
        assertThat(on.out()).contains(batched);
        MainTest.Run byDefault = MainTest.run("nginx-config", "--part", "site");
        assertThat(byDefault.status()).as(byDefault.err()).isZero();
        assertThat(byDefault.out()).as("on by default with the subrequest transport").contains(batched);
        assertThat(byDefault.err()).isEmpty();
        assertThat(MainTest.run("nginx-config", "--part", "site", "--no-batches").out())
                .contains("attempt(\"/.levee\", { on_failure = \"allow\", chunked_location = \"@levee_chunked\" })");
        assertThat(MainTest.run("nginx-config", "--part", "site", "--transport", "cosocket").out())
                .as("off by default where they cannot work").doesNotContain("batches = true").contains("cosocket");
        assertThat(MainTest.run("nginx-config", "--part", "site", "--ratelimit-headers-on-accept").out())
                .doesNotContain("batches = true").contains("ratelimit_on_accept = true");
        assertThat(MainTest.run("nginx-config", "--part", "http").out()).contains("lua_shared_dict levee_batches 4m;")
                .contains("lease=$levee_lease levee=$levee_result';");
        assertThat(MainTest.run("nginx-config", "--part", "check").out()).contains("set $levee_lease \"\";");
        MainTest.Run cosocket = MainTest.run("nginx-config", "--batches", "--transport", "cosocket");
        assertThat(cosocket.status()).isEqualTo(2);
        assertThat(cosocket.err()).contains("batches work with the subrequest transport only").doesNotContain("Exception");
        MainTest.Run fields = MainTest.run("nginx-config", "--batches", "--ratelimit-headers-on-accept");
        assertThat(fields.status()).isEqualTo(2);
        assertThat(fields.err()).contains("batches cannot go with the RateLimit fields on accepted responses");
    }

    @Test
    void valuesReachTheConfiguration() {
        MainTest.Run r = MainTest.run("nginx-config", "--listen", "10.0.0.5:80", "--backend", "10.0.0.9:7480",
                "--client", "127.0.0.1:7201", "--timeout", "250ms", "--on-failure", "deny", "--lua-dir",
                "/opt/levee/lua", "--check-location", "/.levee-check", "--status-listen", "127.0.0.1:7299",
                "--workers", "2", "--lua-module", "/m/ndk.so,/m/lua.so");
        assertThat(r.status()).as(r.err()).isZero();
        assertThat(r.out())
                .contains("listen 10.0.0.5:80;")
                .contains("server 10.0.0.9:7480;")
                .contains("server 127.0.0.1:7201 max_fails=0;")
                .contains("proxy_read_timeout 250ms;")
                .contains("proxy_connect_timeout 250ms;")
                .contains("attempt(\"/.levee-check\", { on_failure = \"deny\", batches = true, chunked_location = \"@levee_chunked\" })")
                .contains("location = /.levee-check {")
                .contains("lua_package_path \"/opt/levee/lua/?.lua;;\";")
                .contains("listen 127.0.0.1:7299;")
                .contains("worker_processes 2;")
                .contains("load_module /m/ndk.so;\nload_module /m/lua.so;")
                // the check never carries the client's body or its framing
                .contains("proxy_pass_request_body off;")
                .contains("proxy_pass_request_headers off;")
                .contains("proxy_set_header Content-Length \"\";")
                .contains("proxy_set_header X-Levee-Uri $request_uri;")
                .contains("log_format levee");
    }

    @Test
    void theCosocketTransportAsksTheLineEndpointWithTheCheckTimeout() {
        MainTest.Run r = MainTest.run("nginx-config", "--part", "site", "--transport", "cosocket", "--client-line",
                "127.0.0.1:7301", "--timeout", "250ms", "--on-failure", "deny", "--ratelimit-headers-on-accept");
        assertThat(r.status()).as(r.err()).isZero();
        assertThat(r.out()).contains("attempt(\"/.levee\", { on_failure = \"deny\", ratelimit_on_accept = true,"
                + " transport = \"cosocket\", host = \"127.0.0.1\", port = 7301, timeout = 250, chunked_location = \"@levee_chunked\" })");
        MainTest.Run v6 = MainTest.run("nginx-config", "--part", "site", "--transport", "COSOCKET", "--client-line", "[::1]:7201");
        assertThat(v6.status()).as(v6.err()).isZero();
        assertThat(v6.out()).contains("transport = \"cosocket\", host = \"[::1]\", port = 7201, timeout = 1000, chunked_location = \"@levee_chunked\" })");
        // the check location and @levee_slowdown are still there: the subrequest is one word away
        assertThat(MainTest.run("nginx-config", "--transport", "cosocket").out()).contains("location = /.levee {")
                .contains("location @levee_slowdown");
    }

    @Test
    void theSubrequestTransportIsTheDefaultAndIgnoresTheLineAddress() {
        MainTest.Run r = MainTest.run("nginx-config", "--part", "site", "--client-line", "127.0.0.1:7301");
        assertThat(r.status()).as(r.err()).isZero();
        assertThat(r.out()).contains("attempt(\"/.levee\", { on_failure = \"allow\", batches = true, chunked_location = \"@levee_chunked\" })").doesNotContain("cosocket");
        assertThat(r.err()).as("the line address given but not used: said so").contains("--client-line is used by"
                + " --transport cosocket only");
        assertThat(MainTest.run("nginx-config", "--part", "site").err()).doesNotContain("--client-line");
        // with cosocket, only the parts that call rate.lua hold the address
        assertThat(MainTest.run("nginx-config", "--part", "check", "--transport", "cosocket", "--client-line",
                "127.0.0.1:7301").err()).contains("--part check does not hold it");
        assertThat(MainTest.run("nginx-config", "--part", "site", "--transport", "cosocket", "--client-line",
                "127.0.0.1:7301").err()).doesNotContain("does not hold it");
        assertThat(MainTest.run("nginx-config", "--part", "site", "--transport", "subrequest").out())
                .isEqualTo(MainTest.run("nginx-config", "--part", "site").out());
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource(delimiter = '|', textBlock = """
            --transport   | tcp                    | tcp
            --transport   | ''                     | --transport
            --client-line | nonsense               | --client-line
            --client-line | 127.0.0.1:70000        | --client-line
            --client-line | https://127.0.0.1:7201 | --client-line
            --client-line | 127.0.0.1:0            | --client-line needs a port other than 0
            --client-line | http://127.0.0.1:7201  | with no scheme, got 'http://127.0.0.1:7201': the line endpoint speaks levee-line/1, not HTTP
            --client-line | tcp://127.0.0.1:7201   | with no scheme, got 'tcp://127.0.0.1:7201'
            --client-line | none                   | expected HOST:PORT, got 'none'
            --client-line | 127.0.0.1:7201:1       | one colon only
            """)
    void badTransportValuesAreRefusedWithExitCode2(String option, String value, String expected) {
        MainTest.Run r = MainTest.run("nginx-config", "--transport", "cosocket", option, value);
        assertThat(r.status()).as(r.err()).isEqualTo(2);
        assertThat(r.out()).isEmpty();
        assertThat(r.err()).contains(expected).doesNotContain("Exception").doesNotContain("\tat ");
    }

    @Test
    void theLineAddressMustNotBeTheClientsHttpAddressAndANameIsWarnedAbout() {
        MainTest.Run same = MainTest.run("nginx-config", "--transport", "cosocket", "--client", "127.0.0.1:7200",
                "--client-line", "127.0.0.1:7200");
        assertThat(same.status()).isEqualTo(2);
        assertThat(same.err()).contains("--client-line 127.0.0.1:7200 is the address of --client")
                .doesNotContain("\tat ");
        // a name needs NGINX's resolver for a cosocket: written, with a warning saying so
        MainTest.Run name = MainTest.run("nginx-config", "--part", "site", "--transport", "cosocket", "--client-line",
                "localhost:7201");
        assertThat(name.status()).as(name.err()).isZero();
        assertThat(name.out()).contains("host = \"localhost\"");
        assertThat(name.err()).contains("--client-line localhost:7201 is a name").contains("resolver");
        MainTest.Run ip = MainTest.run("nginx-config", "--part", "site", "--transport", "cosocket", "--client-line",
                "127.0.0.1:7201");
        assertThat(ip.err()).doesNotContain("resolver");
    }

    @Test
    void http2IsRefusedWithTheCosocketTransportForItsOwnReason() {
        MainTest.Run r = MainTest.run("nginx-config", "--http2", "--transport", "cosocket");
        assertThat(r.status()).as("a usage error").isEqualTo(2);
        assertThat(r.err()).contains("h2c").contains("TLS listener").doesNotContain("subrequests from HTTP/2");
    }

    @Test
    void openRestyNeedsNoModules() {
        MainTest.Run r = MainTest.run("nginx-config", "--lua-module", "none");
        assertThat(r.status()).as(r.err()).isZero();
        assertThat(r.out()).doesNotContain("load_module");
    }

    @Test
    void sitePartIncludesTheCheckByPathAndLogsAtServerLevel() {
        MainTest.Run r = MainTest.run("nginx-config", "--part", "site", "--check-include", "/etc/nginx/snippets/levee.conf");
        assertThat(r.status()).isZero();
        assertThat(r.out()).contains("include /etc/nginx/snippets/levee.conf;")
                .contains("access_log /var/log/nginx/levee-s3.access.log levee;")
                .doesNotContain("location = /.levee");
    }

    @Test
    void luaPartIsRateLuaItself() {
        MainTest.Run r = MainTest.run("nginx-config", "--part", "lua");
        assertThat(r.status()).isZero();
        assertThat(r.out()).isEqualTo(NginxConfig.rateLua()).contains("function _M.attempt(location, opts)");
    }

    @Test
    void http2IsRefusedWithTheReason() {
        MainTest.Run r = MainTest.run("nginx-config", "--http2");
        assertThat(r.status()).as("a usage error").isEqualTo(2);
        assertThat(r.out()).isEmpty();
        assertThat(r.err()).contains("HTTP/2 on the S3 listener is not supported").contains("subrequests")
                .doesNotContain("Exception");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            lua dir with a space     | --lua-dir        | /opt/le vee          | lua directory
            access log with a quote  | --access-log     | /var/log/a"b.log     | access log
            location without slash   | --check-location | levee                | check location
            location that is root    | --check-location | /                    | check location
            zero timeout             | --timeout        | 0ms                  | must be positive
            long timeout             | --timeout        | 2m                   | out of range
            workers not a number     | --workers        | many                 | workers
            port zero                | --backend        | 127.0.0.1:0          | port other than 0
            unknown policy           | --on-failure     | maybe                | maybe
            """)
    void badValuesAreRefusedNamingTheValue(String name, String option, String value, String expected) {
        MainTest.Run r = MainTest.run("nginx-config", option, value);
        assertThat(r.status()).as(r.out()).isNotZero();
        assertThat(r.err()).contains(expected).doesNotContain("Exception");
    }

    @Test
    void outWritesAPrefixThatNginxAccepts() throws Exception {
        MainTest.Run r = MainTest.run("nginx-config", "--out", dir.toString(), "--listen", "127.0.0.1:18999");
        assertThat(r.status()).as(r.err()).isZero();
        Path conf = dir.resolve("nginx.conf");
        assertThat(Files.readString(conf)).contains("lua_package_path \"" + dir.toAbsolutePath().resolve("lua") + "/?.lua;;\";");
        assertThat(Files.readString(dir.resolve("lua/rate.lua"), StandardCharsets.UTF_8)).isEqualTo(NginxConfig.rateLua());
        assumeThat(EmbeddedNginx.unavailable()).as("nginx with the lua module").isEmpty();
        Process p = new ProcessBuilder(EmbeddedNginx.binary().orElseThrow().toString(), "-t", "-p", dir + "/", "-c",
                conf.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).contains("syntax is ok");
    }

    @Test
    void outKeepsFilesThatDifferUnlessForced() throws Exception {
        Path conf = dir.resolve("nginx.conf");
        assertThat(MainTest.run("nginx-config", "--out", dir.toString(), "--listen", "127.0.0.1:18999").status()).isZero();
        String first = Files.readString(conf);
        // the same command again: the same files, nothing to refuse
        MainTest.Run same = MainTest.run("nginx-config", "--out", dir.toString(), "--listen", "127.0.0.1:18999");
        assertThat(same.status()).as(same.err()).isZero();
        // another listener, or an operator's edit: kept, and said so
        Files.writeString(dir.resolve("lua/rate.lua"), "-- edited by hand\n", StandardCharsets.UTF_8);
        MainTest.Run other = MainTest.run("nginx-config", "--out", dir.toString(), "--listen", "127.0.0.1:18998");
        assertThat(other.status()).isEqualTo(1);
        assertThat(other.err()).contains(conf.toString()).contains("rate.lua").contains("nothing written")
                .contains("--force").doesNotContain("Exception");
        assertThat(Files.readString(conf)).isEqualTo(first);
        assertThat(Files.readString(dir.resolve("lua/rate.lua"))).isEqualTo("-- edited by hand\n");
        MainTest.Run forced = MainTest.run("nginx-config", "--out", dir.toString(), "--listen", "127.0.0.1:18998", "--force");
        assertThat(forced.status()).as(forced.err()).isZero();
        assertThat(Files.readString(conf)).contains("127.0.0.1:18998");
        assertThat(Files.readString(dir.resolve("lua/rate.lua"))).isEqualTo(NginxConfig.rateLua());
        try (var left = Files.list(dir)) {
            assertThat(left.map(p -> p.getFileName().toString())).noneMatch(n -> n.endsWith(".levee-tmp"));
        }
    }
}
