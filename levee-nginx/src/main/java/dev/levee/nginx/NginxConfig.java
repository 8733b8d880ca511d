package dev.levee.nginx;

import dev.levee.runtime.HostPort;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Renders the NGINX side of Levee (docs/design.md §1) from the templates of the repository's
 * {@code nginx/} directory, packaged in this jar under {@code dev/levee/nginx/}.
 *
 * <p>The templates are the one source of the configuration: {@code levee-http.conf.in} (upstream
 * of levee-client, log format, Lua path; http context), {@code levee-check.conf.in} (the internal
 * check location and {@code @levee_slowdown}; server context), {@code s3-site.conf.in} (a complete
 * S3 server block in front of a backend), {@code status.conf.in} (rate.lua's counters) and
 * {@code nginx.conf.in} (a standalone main file that inlines the others). {@code levee
 * nginx-config} prints any part; levee-stack's {@code EmbeddedNginx} runs the standalone file.
 *
 * <p>Values are validated when the configuration is built, so a rendered file never carries a
 * character that would change its meaning in NGINX's syntax (quotes, semicolons, braces, spaces).
 */
public final class NginxConfig {

    /** What to render. */
    public enum Part {
        /** A standalone nginx.conf for {@code nginx -p PREFIX -c FILE}: everything inlined. */
        FULL,
        /** The http-level include ({@code levee-http.conf}). */
        HTTP,
        /** The server-level include ({@code levee-check.conf}). */
        CHECK,
        /** The S3 upstream and server block, including {@code levee-check.conf} by path. */
        SITE
    }

    /** What NGINX does with a request when Levee cannot decide (docs/design.md §1 step 5). */
    public enum OnFailure {
        /** Let it through (the default). */
        ALLOW,
        /** Refuse it with 503 SlowDown. */
        DENY;

        String word() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * How rate.lua asks levee-client (docs/nginx.md, "Transports: subrequest and cosocket"): a subrequest to the
     * internal check location over HTTP, or a line of levee-line/1 over a pooled cosocket to levee-client's
     * {@code --line-listen}.
     */
    public enum Transport {
        /** The default: {@code ngx.location.capture} of the check location, proxied to {@code GET /v1/s3check}. */
        SUBREQUEST,
        /** {@code ngx.socket.tcp} with a connection pool, straight to levee-client's line endpoint. */
        COSOCKET;

        String word() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** Resource directory of the templates and rate.lua. */
    public static final String RESOURCES = "/dev/levee/nginx/";

    /** Where Debian and Ubuntu install the lua module and the NDK it needs. */
    public static final Path DEBIAN_MODULES = Path.of("/usr/lib/nginx/modules");

    private static final Pattern PLACEHOLDER = Pattern.compile("\\{\\{([a-z_]+)}}");
    private static final Pattern SAFE_PATH = Pattern.compile("[A-Za-z0-9._/+@%=,:-]+");
    private static final Pattern SAFE_LOCATION = Pattern.compile("/[A-Za-z0-9._/-]+");
    private static final Pattern SAFE_HOST = Pattern.compile("[A-Za-z0-9._:-]+");

    private final Builder b;

    private NginxConfig(Builder b) {
        this.b = b;
    }

    /** Returns a builder with the defaults of a Debian/Ubuntu host (see each setter). */
    public static Builder builder() {
        return new Builder();
    }

    /** Returns the text of {@code rate.lua}. */
    public static String rateLua() {
        return resource("rate.lua");
    }

    /**
     * Returns the load_module lines a stock NGINX needs for the lua module: the Debian/Ubuntu
     * modules when installed, none otherwise (OpenResty has the module built in).
     */
    public static List<Path> detectLuaModules() {
        Path lua = DEBIAN_MODULES.resolve("ngx_http_lua_module.so");
        Path ndk = DEBIAN_MODULES.resolve("ndk_http_module.so");
        if (!Files.isRegularFile(lua)) {
            return List.of();
        }
        return Files.isRegularFile(ndk) ? List.of(ndk, lua) : List.of(lua);
    }

    /**
     * Renders one part.
     *
     * @param part what to render
     * @return NGINX configuration text
     */
    public String render(Part part) {
        return switch (part) {
            case HTTP -> fill("levee-http.conf.in", common());
            case CHECK -> fill("levee-check.conf.in", common());
            case SITE -> site("    include " + b.checkInclude + ";");
            case FULL -> full();
        };
    }

    /** Returns the settings this configuration was built from. */
    public Builder settings() {
        return b.copy();
    }

    private Map<String, String> common() {
        Map<String, String> v = new LinkedHashMap<>();
        v.put("lua_dir", b.luaDir.toString());
        v.put("client", b.client.toString());
        v.put("client_keepalive", Integer.toString(b.clientKeepalive));
        v.put("check_location", b.checkLocation);
        v.put("timeout", b.timeout.toMillis() + "ms");
        v.put("on_failure", b.onFailure.word());
        v.put("ratelimit_option", (b.rateLimitOnAccept ? ", ratelimit_on_accept = true" : "")
                + (b.batches ? ", batches = true" : ""));
        v.put("transport_options", transportOptions());
        v.put("listen", b.listen.toString());
        v.put("backend", b.backend.toString());
        v.put("access_log", b.accessLog);
        return v;
    }

    /**
     * Returns the options of the generated {@code attempt(...)} calls that choose the transport, after
     * {@code on_failure} and {@code ratelimit_on_accept}: none for the subrequest transport (its default),
     * else the cosocket transport with levee-client's line address and the check timeout in milliseconds;
     * {@code pool_size} and {@code keepalive} keep rate.lua's defaults.
     */
    public String transportOptions() {
        if (b.transport == Transport.SUBREQUEST) {
            return "";
        }
        String host = b.clientLine.host().indexOf(':') >= 0 ? "[" + b.clientLine.host() + "]" : b.clientLine.host();
        return ", transport = \"cosocket\", host = \"" + host + "\", port = " + b.clientLine.port()
                + ", timeout = " + b.timeout.toMillis();
    }

    private String site(String check) {
        Map<String, String> v = common();
        v.put("levee_check", check);
        return fill("s3-site.conf.in", v);
    }

    private String full() {
        Map<String, String> v = common();
        StringBuilder modules = new StringBuilder();
        for (Path m : b.modules) {
            modules.append("load_module ").append(m).append(";\n");
        }
        v.put("load_modules", modules.toString());
        v.put("workers", b.workers);
        v.put("error_log", b.errorLog);
        v.put("error_level", b.errorLevel);
        v.put("levee_http", indent(fill("levee-http.conf.in", common()), "    "));
        v.put("site", indent(site(indent(fill("levee-check.conf.in", common()), "    ")), "    "));
        if (b.statusListen != null) {
            Map<String, String> s = new LinkedHashMap<>();
            s.put("status_listen", b.statusListen.toString());
            v.put("status", indent(fill("status.conf.in", s), "    "));
        } else {
            v.put("status", "");
        }
        v.put("extra_http", b.extraHttp.isEmpty() ? "" : indent(b.extraHttp, "    "));
        return fill("nginx.conf.in", v);
    }

    private static String indent(String text, String by) {
        StringBuilder out = new StringBuilder();
        for (String line : text.split("\n", -1)) {
            if (!line.isEmpty()) {
                out.append(by).append(line);
            }
            out.append('\n');
        }
        // split(-1) leaves one empty trailing element for a text ending in a newline
        return out.substring(0, out.length() - 1);
    }

    private static String fill(String template, Map<String, String> values) {
        String text = resource(template);
        Matcher m = PLACEHOLDER.matcher(text);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String value = values.get(m.group(1));
            if (value == null) {
                throw new IllegalStateException("template " + template + " uses {{" + m.group(1)
                        + "}}, which has no value");
            }
            m.appendReplacement(out, Matcher.quoteReplacement(value));
        }
        m.appendTail(out);
        return out.toString();
    }

    static String resource(String name) {
        try (InputStream in = NginxConfig.class.getResourceAsStream(RESOURCES + name)) {
            if (in == null) {
                throw new IllegalStateException("resource " + RESOURCES + name + " is missing from the jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Settings of the rendered configuration; every value is checked by {@link #build()}. */
    public static final class Builder {
        private HostPort listen = new HostPort("127.0.0.1", 8080);
        private HostPort backend = new HostPort("127.0.0.1", 9000);
        private HostPort client = new HostPort("127.0.0.1", 7200);
        private OnFailure onFailure = OnFailure.ALLOW;
        private Duration timeout = Duration.ofSeconds(1);
        private int clientKeepalive = 32;
        private String checkLocation = "/.levee";
        private Path luaDir = Path.of("/etc/nginx/levee");
        private String checkInclude = "/etc/nginx/levee/levee-check.conf";
        private String accessLog = "logs/access.log";
        private String errorLog = "logs/error.log";
        private String errorLevel = "warn";
        private String workers = "auto";
        private List<Path> modules = detectLuaModules();
        private HostPort statusListen;
        private String extraHttp = "";
        private boolean http2;
        private boolean rateLimitOnAccept;
        private boolean batches;
        private Transport transport = Transport.SUBREQUEST;
        private HostPort clientLine = new HostPort("127.0.0.1", 7201);

        private Builder() {
        }

        /** Returns a builder with the same settings, to change some of them without changing this one. */
        public Builder copy() {
            Builder c = new Builder();
            c.listen = listen;
            c.backend = backend;
            c.client = client;
            c.onFailure = onFailure;
            c.timeout = timeout;
            c.clientKeepalive = clientKeepalive;
            c.checkLocation = checkLocation;
            c.luaDir = luaDir;
            c.checkInclude = checkInclude;
            c.accessLog = accessLog;
            c.errorLog = errorLog;
            c.errorLevel = errorLevel;
            c.workers = workers;
            c.modules = modules;
            c.statusListen = statusListen;
            c.extraHttp = extraHttp;
            c.http2 = http2;
            c.rateLimitOnAccept = rateLimitOnAccept;
            c.batches = batches;
            c.transport = transport;
            c.clientLine = clientLine;
            return c;
        }

        /** S3 listener (default 127.0.0.1:8080). */
        public Builder listen(HostPort v) {
            listen = Objects.requireNonNull(v);
            return this;
        }

        /** S3 backend the accepted requests go to (default 127.0.0.1:9000, levee gateway's port). */
        public Builder backend(HostPort v) {
            backend = Objects.requireNonNull(v);
            return this;
        }

        /** The local levee-client (default 127.0.0.1:7200). */
        public Builder client(HostPort v) {
            client = Objects.requireNonNull(v);
            return this;
        }

        /** How rate.lua asks levee-client (default {@link Transport#SUBREQUEST}). */
        public Builder transport(Transport v) {
            transport = Objects.requireNonNull(v);
            return this;
        }

        /**
         * levee-client's line endpoint, which the cosocket transport connects to (default 127.0.0.1:7201; levee
         * client {@code --line-listen}); unused by the subrequest transport.
         */
        public Builder clientLine(HostPort v) {
            clientLine = Objects.requireNonNull(v);
            return this;
        }

        /** Policy when no decision comes back (default allow). */
        public Builder onFailure(OnFailure v) {
            onFailure = Objects.requireNonNull(v);
            return this;
        }

        /**
         * Whether accepted requests' responses also carry the RateLimit header fields (rate.lua's
         * {@code ratelimit_on_accept}; default off: only a {@code 503 SlowDown} carries them).
         */
        public Builder rateLimitOnAccept(boolean v) {
            rateLimitOnAccept = v;
            return this;
        }

        /**
         * Whether rate.lua takes batches of leased slots from levee-client (leases on, its default) and admits the
         * next requests to a hot bucket from them without a check (rate.lua's {@code batches}; docs/design.md §12,
         * "Batches in NGINX"; off unless set here, on where they can work in {@code levee nginx-config}). The
         * subrequest transport only, without {@link #rateLimitOnAccept}.
         */
        public Builder batches(boolean v) {
            batches = v;
            return this;
        }

        /**
         * Longest a check may take, 1 ms to 60 s (default 1 s): connect, send and read timeouts, of the check
         * location (subrequest) or of rate.lua's socket (cosocket, its {@code timeout} option).
         */
        public Builder timeout(Duration v) {
            timeout = Objects.requireNonNull(v);
            return this;
        }

        /** Idle keep-alive connections to levee-client per worker (default 32). */
        public Builder clientKeepalive(int v) {
            clientKeepalive = v;
            return this;
        }

        /** Internal location of the check (default {@code /.levee}). */
        public Builder checkLocation(String v) {
            checkLocation = Objects.requireNonNull(v);
            return this;
        }

        /** Directory holding rate.lua (default /etc/nginx/levee). */
        public Builder luaDir(Path v) {
            luaDir = Objects.requireNonNull(v);
            return this;
        }

        /** Path the site part includes levee-check.conf from (default /etc/nginx/levee/levee-check.conf). */
        public Builder checkInclude(String v) {
            checkInclude = Objects.requireNonNull(v);
            return this;
        }

        /** Access log of the S3 server, format {@code levee} (default logs/access.log). */
        public Builder accessLog(String v) {
            accessLog = Objects.requireNonNull(v);
            return this;
        }

        /** Error log of the standalone file (default logs/error.log). */
        public Builder errorLog(String v) {
            errorLog = Objects.requireNonNull(v);
            return this;
        }

        /** Error log level of the standalone file (default warn). */
        public Builder errorLevel(String v) {
            errorLevel = Objects.requireNonNull(v);
            return this;
        }

        /** worker_processes of the standalone file: a number or {@code auto} (default auto). */
        public Builder workers(String v) {
            workers = Objects.requireNonNull(v);
            return this;
        }

        /** Modules the standalone file loads (default: {@link #detectLuaModules()}). */
        public Builder modules(List<Path> v) {
            modules = List.copyOf(v);
            return this;
        }

        /** Loopback listener for {@code GET /levee/stats} (default none). */
        public Builder statusListen(HostPort v) {
            statusListen = v;
            return this;
        }

        /** Extra http-level text appended to the standalone file, e.g. more servers (default none). */
        public Builder extraHttp(String v) {
            extraHttp = Objects.requireNonNull(v);
            return this;
        }

        /** Asks for HTTP/2 on the S3 listener, which {@link #build()} refuses (see there). */
        public Builder http2(boolean v) {
            http2 = v;
            return this;
        }

        /** Returns the S3 listener. */
        public HostPort listen() {
            return listen;
        }

        /** Returns the levee-client address. */
        public HostPort client() {
            return client;
        }

        /** Returns the transport. */
        public Transport transport() {
            return transport;
        }

        /** Returns levee-client's line address (cosocket transport). */
        public HostPort clientLine() {
            return clientLine;
        }

        /** Returns the access log path. */
        public String accessLog() {
            return accessLog;
        }

        /** Returns the error log path. */
        public String errorLog() {
            return errorLog;
        }

        /** Returns the extra http-context text, as given to {@link #extraHttp}. */
        public String extraHttpText() {
            return extraHttp;
        }

        /** Returns the status listener, or null. */
        public HostPort statusListen() {
            return statusListen;
        }

        /**
         * Validates the settings.
         *
         * @return the configuration
         * @throws IllegalArgumentException naming every bad value, or refusing HTTP/2: with the
         *         subrequest transport because the lua module (lua-nginx-module 0.10) makes no
         *         subrequests from HTTP/2 requests, so every check on such a listener would fail; with
         *         the cosocket transport (which checks HTTP/2 requests) because the generated listener is
         *         plain text, where NGINX's {@code http2} speaks HTTP/2 only (h2c with prior knowledge),
         *         which S3 clients do not
         */
        public NginxConfig build() {
            List<String> errors = new ArrayList<>();
            if (http2 && transport == Transport.SUBREQUEST) {
                errors.add("HTTP/2 on the S3 listener is not supported: the NGINX lua module makes no"
                        + " subrequests from HTTP/2 requests, so every check would fail and take the"
                        + " on_failure path. Serve S3 over HTTP/1.1 on this listener (S3 clients use"
                        + " HTTP/1.1), or terminate HTTP/2 in front of it.");
            } else if (http2) {
                errors.add("HTTP/2 on the S3 listener is not generated: the listener is plain text, where NGINX's"
                        + " http2 speaks HTTP/2 only (h2c with prior knowledge), which S3 clients do not. The cosocket"
                        + " transport checks HTTP/2 requests: enable http2 on a TLS listener of your own"
                        + " (docs/nginx.md).");
            }
            if (batches && transport == Transport.COSOCKET) {
                errors.add("batches work with the subrequest transport only (rate.lua reads X-Levee-Batch from the"
                        + " subrequest's answer); leave out the cosocket transport or the batches");
            }
            if (batches && rateLimitOnAccept) {
                errors.add("batches cannot go with the RateLimit fields on accepted responses: a request admitted from"
                        + " a batch is decided without levee-client, which computes them");
            }
            for (HostPort hp : new HostPort[] {listen, backend, client, clientLine}) {
                if (!SAFE_HOST.matcher(hp.host()).matches()) {
                    errors.add("address '" + hp + "' has characters NGINX would misread");
                }
                if (hp.port() == 0) {
                    errors.add("address '" + hp + "' needs a port other than 0");
                }
            }
            if (statusListen != null && (statusListen.port() == 0 || !SAFE_HOST.matcher(statusListen.host()).matches())) {
                errors.add("status listener '" + statusListen + "' is not a usable address");
            }
            if (timeout.toMillis() < 1 || timeout.compareTo(Duration.ofSeconds(60)) > 0) {
                errors.add("timeout " + timeout.toMillis() + " ms is out of range 1 ms - 60 s");
            }
            if (clientKeepalive < 1 || clientKeepalive > 10_000) {
                errors.add("client keep-alive " + clientKeepalive + " is out of range 1-10000");
            }
            if (!SAFE_LOCATION.matcher(checkLocation).matches() || checkLocation.equals("/")) {
                errors.add("check location '" + checkLocation + "' must be a path such as /.levee"
                        + " (letters, digits, '.', '_', '-', '/')");
            }
            for (String[] p : new String[][] {{"lua directory", luaDir.toString()}, {"check include", checkInclude},
                    {"access log", accessLog}, {"error log", errorLog}}) {
                if (!SAFE_PATH.matcher(p[1]).matches()) {
                    errors.add(p[0] + " '" + p[1] + "' has characters NGINX would misread (spaces, quotes, ';', braces)");
                }
            }
            for (Path m : modules) {
                if (!SAFE_PATH.matcher(m.toString()).matches()) {
                    errors.add("module path '" + m + "' has characters NGINX would misread");
                }
            }
            if (!errorLevel.matches("debug|info|notice|warn|error|crit|alert|emerg")) {
                errors.add("error log level '" + errorLevel + "' is not one of debug, info, notice, warn, error,"
                        + " crit, alert, emerg");
            }
            if (!workers.matches("auto|[1-9][0-9]{0,3}")) {
                errors.add("workers '" + workers + "' must be 'auto' or a number");
            }
            if (!errors.isEmpty()) {
                throw new IllegalArgumentException(String.join("\n", errors));
            }
            return new NginxConfig(copy());
        }
    }
}
