package dev.levee.cli;

import dev.levee.runtime.HostPort;
import dev.levee.nginx.NginxConfig;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code levee nginx-config}: prints the NGINX configuration of Levee's enforcement point
 * (docs/design.md §1) for given addresses and paths, or writes a runnable prefix directory.
 *
 * <p>Parts: {@code full} (a standalone nginx.conf, the default), {@code http} (include inside
 * {@code http {}}), {@code check} (include inside each S3 {@code server {}}), {@code site} (S3
 * upstream and server block), {@code lua} (rate.lua itself). With {@code --out DIR} it writes
 * {@code DIR/nginx.conf} and {@code DIR/lua/rate.lua}, ready for
 * {@code nginx -p DIR/ -c DIR/nginx.conf}. With {@code --transport cosocket} the generated {@code attempt(...)}
 * calls ask levee-client's line endpoint ({@code --client-line}) over a pooled cosocket instead of a subrequest;
 * the check location is still generated (unused, it lets a location switch back by its call alone).
 */
@Command(name = "nginx-config", mixinStandardHelpOptions = true,
        description = "Print the NGINX configuration that enforces Levee's decisions (rate.lua in access_by_lua)"
                + " for given ports and paths, or write a runnable prefix directory with --out.")
final class NginxConfigCommand implements Callable<Integer> {

    /** What to print. */
    enum Part { full, http, check, site, lua }

    @Option(names = "--part", defaultValue = "full",
            description = "full | http | check | site | lua (default: ${DEFAULT-VALUE})")
    Part part;

    @Option(names = "--listen", converter = Converters.HostPortConverter.class, defaultValue = "127.0.0.1:8080",
            description = "S3 listener of NGINX (default: ${DEFAULT-VALUE})")
    HostPort listen;

    @Option(names = "--backend", converter = Converters.HostPortConverter.class, defaultValue = "127.0.0.1:9000",
            description = "S3 backend or levee gateway the accepted requests go to (default: ${DEFAULT-VALUE})")
    HostPort backend;

    @Option(names = "--client", converter = Converters.HostPortConverter.class, defaultValue = "127.0.0.1:7200",
            description = "the local levee-client (default: ${DEFAULT-VALUE})")
    HostPort client;

    @Option(names = "--transport", defaultValue = "subrequest",
            description = "subrequest | cosocket: how rate.lua asks levee-client — a subrequest to the check location"
                    + " (HTTP to --client) or a pooled cosocket speaking the line protocol to --client-line (levee client"
                    + " --line-listen); docs/nginx.md (default: ${DEFAULT-VALUE})")
    NginxConfig.Transport transport;

    @Option(names = "--client-line", converter = Converters.LineAddressConverter.class, defaultValue = "127.0.0.1:7201",
            description = "levee-client's line endpoint, for --transport cosocket (default: ${DEFAULT-VALUE})")
    HostPort clientLine;

    @Option(names = "--on-failure", defaultValue = "allow",
            description = "allow | deny: what NGINX does when no decision comes back (default: ${DEFAULT-VALUE})")
    NginxConfig.OnFailure onFailure;

    @Option(names = "--ratelimit-headers-on-accept", defaultValue = "false",
            description = "also put the RateLimit-Policy and RateLimit header fields on accepted responses; a 503"
                    + " SlowDown always carries them (default: off)")
    boolean rateLimitOnAccept;

    // no defaultValue: null is "auto", on where they can work (the subrequest transport, no RateLimit fields on accept)
    @Option(names = "--batches", negatable = true, fallbackValue = "true",
            description = "admit the next requests to a hot bucket in NGINX from batches of leased slots that levee"
                    + " client (with leases, its default) hands over with an admission, without a check each;"
                    + " docs/nginx.md, \"Batches\". Subrequest transport only, not with --ratelimit-headers-on-accept"
                    + " (default: on where they can work, else off; --batches with either is refused)")
    Boolean batches;

    @Option(names = "--timeout", converter = Converters.DurationConverter.class, defaultValue = "1s",
            description = "longest a check may take before on_failure applies (default: ${DEFAULT-VALUE})")
    Duration timeout;

    @Option(names = "--check-location", defaultValue = "/.levee",
            description = "internal location of the check (default: ${DEFAULT-VALUE})")
    String checkLocation;

    @Option(names = "--lua-dir", description = "directory holding rate.lua (default: /etc/nginx/levee, or DIR/lua"
            + " with --out)")
    Path luaDir;

    @Option(names = "--check-include", defaultValue = "/etc/nginx/levee/levee-check.conf",
            description = "path the site part includes the check part from (default: ${DEFAULT-VALUE})")
    String checkInclude;

    @Option(names = "--access-log", description = "access log of the S3 server (default: logs/access.log for full,"
            + " /var/log/nginx/levee-s3.access.log for site)")
    String accessLog;

    @Option(names = "--workers", defaultValue = "auto", description = "worker_processes (default: ${DEFAULT-VALUE})")
    String workers;

    @Option(names = "--status-listen", converter = Converters.HostPortConverter.class,
            description = "loopback listener for GET /levee/stats (full only; default: none)")
    HostPort statusListen;

    @Option(names = "--lua-module", split = ",",
            description = "module files to load_module, comma-separated, or 'none' (full only; default: the"
                    + " Debian/Ubuntu lua module and NDK when installed, none otherwise)")
    List<Path> luaModules;

    @Option(names = "--http2", description = "ask for HTTP/2 on the S3 listener (refused: see docs/nginx.md)")
    boolean http2;

    @Option(names = "--out", description = "write DIR/nginx.conf and DIR/lua/rate.lua instead of printing; an"
            + " existing file that differs is kept unless --force")
    Path out;

    @Option(names = "--force", description = "with --out: replace files that differ from what this writes")
    boolean force;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    /**
     * Whether rate.lua takes batches: as asked by {@code --batches}/{@code --no-batches}, else on where they can work
     * (docs/decisions.md, "Leases and batches on by default").
     */
    boolean batches() {
        return batches != null ? batches : transport == NginxConfig.Transport.SUBREQUEST && !rateLimitOnAccept;
    }

    @Override
    public Integer call() throws IOException {
        if (spec.commandLine().getParseResult().hasMatchedOption("--client-line")) {
            if (transport != NginxConfig.Transport.COSOCKET) {
                System.err.println("levee nginx-config: --client-line is used by --transport cosocket only; with "
                        + transport.name().toLowerCase(java.util.Locale.ROOT) + " the checks go to --client " + client);
            } else if (part != Part.full && part != Part.site) {
                System.err.println("levee nginx-config: --client-line is written into --part site (and full) only,"
                        + " where rate.lua is called; --part " + part + " does not hold it");
            }
        }
        if (clientLine.port() == 0) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(),
                    "--client-line needs a port other than 0, got " + clientLine);
        }
        if (transport == NginxConfig.Transport.COSOCKET) {
            if (ClientCommand.sameListener(clientLine, client)) {
                throw new picocli.CommandLine.ParameterException(spec.commandLine(),
                        "--client-line " + clientLine + " is the address of --client " + client
                                + ": levee-client's line endpoint (--line-listen) has a port of its own");
            }
            String host = clientLine.host().startsWith("[") ? clientLine.host().substring(1, clientLine.host().length() - 1)
                    : clientLine.host();
            if (!io.netty.util.NetUtil.isValidIpV4Address(host) && !io.netty.util.NetUtil.isValidIpV6Address(host)) {
                System.err.println("levee nginx-config: --client-line " + clientLine + " is a name: rate.lua's cosocket"
                        + " resolves it through NGINX's resolver, so the http block needs a `resolver` line, or every"
                        + " check fails (on_failure); an IP address needs none");
            }
        }
        NginxConfig.Builder b = NginxConfig.builder()
                .listen(listen).backend(backend).client(client).onFailure(onFailure).timeout(timeout)
                .transport(transport).clientLine(clientLine)
                .rateLimitOnAccept(rateLimitOnAccept).batches(batches())
                .checkLocation(checkLocation).checkInclude(checkInclude).workers(workers)
                .statusListen(statusListen).http2(http2);
        if (luaModules != null) {
            b.modules(luaModules.size() == 1 && luaModules.get(0).toString().equals("none") ? List.of() : luaModules);
        }
        if (out != null) {
            b.luaDir(luaDir != null ? luaDir : out.toAbsolutePath().resolve("lua"));
        } else if (luaDir != null) {
            b.luaDir(luaDir);
        }
        if (accessLog != null) {
            b.accessLog(accessLog);
        } else if (part == Part.site) {
            b.accessLog("/var/log/nginx/levee-s3.access.log");
        }
        NginxConfig cfg;
        try {
            cfg = b.build();
        } catch (IllegalArgumentException e) { // every message names an option's value: a usage error
            throw new UsageException(e.getMessage());
        }
        String text = part == Part.lua ? NginxConfig.rateLua() : cfg.render(switch (part) {
            case http -> NginxConfig.Part.HTTP;
            case check -> NginxConfig.Part.CHECK;
            case site -> NginxConfig.Part.SITE;
            default -> NginxConfig.Part.FULL;
        });
        if (out == null) {
            PrintStream o = System.out;
            o.print(text);
            o.flush();
            return 0;
        }
        if (part != Part.full) {
            throw new UsageException("--out writes a whole prefix directory: use it with --part full");
        }
        Path dir = out.toAbsolutePath();
        java.util.Map<Path, String> files = new java.util.LinkedHashMap<>();
        files.put(dir.resolve("nginx.conf"), text);
        files.put(dir.resolve("lua/rate.lua"), NginxConfig.rateLua());
        // an operator's edits are not lost to a second run: a file that differs is replaced only with --force
        List<String> differ = new java.util.ArrayList<>();
        for (var f : files.entrySet()) {
            if (Files.isRegularFile(f.getKey())
                    && !Files.readString(f.getKey(), StandardCharsets.UTF_8).equals(f.getValue())) {
                differ.add(f.getKey().toString());
            }
        }
        if (!differ.isEmpty() && !force) {
            System.err.println("levee nginx-config: " + String.join(" and ", differ) + " already "
                    + (differ.size() == 1 ? "exists and differs" : "exist and differ") + " from what this would write;"
                    + " nothing written (compare: levee nginx-config --part full ... | diff - " + differ.get(0)
                    + "; --force replaces)");
            return 1;
        }
        Files.createDirectories(dir.resolve("lua"));
        Files.createDirectories(dir.resolve("logs"));
        Files.createDirectories(dir.resolve("tmp"));
        for (var f : files.entrySet()) { // whole files: a reload never reads half of one
            Path tmp = f.getKey().resolveSibling(f.getKey().getFileName() + ".levee-tmp");
            Files.writeString(tmp, f.getValue(), StandardCharsets.UTF_8);
            Files.move(tmp, f.getKey(), java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                    java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        }
        System.out.println("wrote " + dir.resolve("nginx.conf") + " and " + dir.resolve("lua/rate.lua")
                + (differ.isEmpty() ? "" : " (replacing what differed: --force)"));
        System.out.println("run:  nginx -p " + dir + "/ -c " + dir.resolve("nginx.conf"));
        return 0;
    }
}
