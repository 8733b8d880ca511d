package dev.levee.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.levee.runtime.HostPort;
import dev.levee.runtime.Json;
import dev.levee.runtime.SystemTicker;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code levee top} (issue 14 item 2): the hot resources of the whole cluster, from the observer's
 * {@code GET /v1/stats}, as a table that fits 80 columns, redrawn every second with ANSI clear-screen
 * (works over ssh, no curses), or printed once with {@code --once}.
 */
@Command(name = "top", mixinStandardHelpOptions = true,
        description = "Live view of the hot resources: offered, admitted and refused checks per second per quota"
                + " entry, summed over the limiters by the observer (GET /v1/stats).")
final class TopCommand implements Callable<Integer> {

    /** The sort keys of {@code --sort}. */
    enum Sort { offered, admitted, refused, share, shadow, resource, limiters }

    @Option(names = "--observer", defaultValue = "127.0.0.1:7000",
            description = "the observer, host:port or http://host:port (default: ${DEFAULT-VALUE})")
    String observer;

    @Option(names = "--sort", defaultValue = "offered",
            description = "order of the rows: ${COMPLETION-CANDIDATES}, largest first (resource: by name)"
                    + " (default: ${DEFAULT-VALUE})")
    Sort sort;

    @Option(names = "--window", converter = Converters.DurationConverter.class, defaultValue = "10s",
            description = "which of the limiters' windows to show (default: ${DEFAULT-VALUE})")
    Duration window;

    @Option(names = "--once", description = "print one table and exit (for scripts)")
    boolean once;

    @Option(names = "--interval", converter = Converters.DurationConverter.class, defaultValue = "1s",
            description = "refresh interval (default: ${DEFAULT-VALUE})")
    Duration interval;

    @Option(names = "--rows", defaultValue = "20", description = "most rows shown (default: ${DEFAULT-VALUE})")
    int rows;

    @Option(names = "--timeout", converter = Converters.DurationConverter.class, defaultValue = "3s",
            description = "longest wait for the observer's answer (default: ${DEFAULT-VALUE})")
    Duration timeout;

    static final String CLEAR = "\033[H\033[2J";

    @Override
    public Integer call() throws Exception {
        if (rows < 1) {
            throw new UsageException("--rows must be >= 1, got " + rows);
        }
        if (interval.isNegative() || interval.isZero() || timeout.isNegative() || timeout.isZero()) {
            throw new UsageException("--interval and --timeout must be positive");
        }
        URI uri = statsUri(observer);
        HttpClient http = HttpClient.newBuilder().connectTimeout(timeout).build();
        PrintStream out = System.out;
        if (once) {
            out.print(render(fetch(http, uri), uri, sort, window.toSeconds(), rows));
            out.flush();
            return 0;
        }
        // a screen at once: the first answer can take up to --timeout (and the JVM's start before it)
        out.print(CLEAR + "levee top: connecting to " + uri.getAuthority() + "...\n\n" + footer() + "\n");
        out.flush();
        Thread main = Thread.currentThread();
        Keys keys = Keys.start(() -> main.interrupt());
        try {
            while (!Thread.currentThread().isInterrupted()) {
                long start = SystemTicker.INSTANCE.read();
                String screen;
                try {
                    screen = render(fetch(http, uri), uri, sort, window.toSeconds(), rows);
                } catch (IllegalStateException e) {
                    screen = "levee top: " + e.getMessage() + " (retrying every " + interval.toMillis() + " ms)\n";
                }
                out.print(CLEAR + screen + "\n" + footer() + "\n");
                out.flush();
                long left = interval.toNanos() - (SystemTicker.INSTANCE.read() - start);
                if (left > 0) {
                    Thread.sleep(left / 1_000_000, (int) (left % 1_000_000));
                }
            }
        } catch (InterruptedException e) {
            // q pressed (or the JVM stopping): leave the last screen as it is
        } finally {
            Thread.interrupted(); // q may interrupt outside a wait: stty must still run
            keys.close();
        }
        return 0;
    }

    /** The key hints under every screen. */
    String footer() {
        return fit(String.format(Locale.ROOT, "q quit   sorted by %s (--sort)   window %ds (--window)   every %s (--interval)",
                sort, window.toSeconds(), Converters.formatDuration(interval)), 80);
    }

    /**
     * Reads single keys from the terminal while {@code levee top} runs: {@code q} (or {@code Q}) calls
     * {@code onQuit}. The terminal is put in non-canonical mode without echo with stty(1) (the key arrives
     * without Enter; Ctrl-C still interrupts) and restored on close and when the JVM exits. Without a terminal
     * (output or input redirected) no key is read and nothing is changed.
     */
    static final class Keys implements AutoCloseable {
        private final String saved;
        private final Thread restoreAtExit;

        private Keys(String saved, Thread restoreAtExit) {
            this.saved = saved;
            this.restoreAtExit = restoreAtExit;
        }

        static Keys start(Runnable onQuit) {
            if (System.console() == null || !new java.io.File("/dev/tty").canRead()) {
                return new Keys(null, null);
            }
            String saved = stty("-g");
            if (saved == null || stty("-icanon", "-echo", "min", "1", "time", "0") == null) {
                return new Keys(null, null);
            }
            Thread restore = new Thread(() -> stty(saved), "levee-top-tty");
            Runtime.getRuntime().addShutdownHook(restore);
            Thread.ofPlatform().daemon().name("levee-top-keys").start(() -> {
                try {
                    int c;
                    while ((c = System.in.read()) >= 0) {
                        if (c == 'q' || c == 'Q') {
                            onQuit.run();
                            return;
                        }
                    }
                } catch (java.io.IOException e) {
                    // no more keys: Ctrl-C still stops
                }
            });
            return new Keys(saved, restore);
        }

        /** Runs stty on the controlling terminal; returns its output, or null when it failed. */
        private static String stty(String... args) {
            try {
                List<String> cmd = new ArrayList<>(List.of("stty"));
                cmd.addAll(List.of(args));
                Process p = new ProcessBuilder(cmd).redirectInput(new java.io.File("/dev/tty"))
                        .redirectError(ProcessBuilder.Redirect.DISCARD).start();
                String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).strip();
                return p.waitFor() == 0 ? out : null;
            } catch (java.io.IOException e) {
                return null;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
        }

        @Override
        public void close() {
            if (saved != null) {
                stty(saved);
                try {
                    Runtime.getRuntime().removeShutdownHook(restoreAtExit);
                } catch (IllegalStateException e) {
                    // the JVM is stopping: the hook restores
                }
            }
        }
    }

    /** The observer's {@code /v1/stats} address from {@code host:port} or {@code http://host:port[/]}. */
    static URI statsUri(String observer) {
        String v = observer.trim();
        if (v.startsWith("http://")) {
            v = v.substring(7);
        } else if (v.contains("://")) {
            throw new UsageException("--observer: only http:// is served by the observer, got '" + observer + "'");
        }
        if (v.endsWith("/")) {
            v = v.substring(0, v.length() - 1);
        }
        HostPort hp = HostPort.parse(v, "--observer");
        return URI.create("http://" + hp + "/v1/stats");
    }

    JsonNode fetch(HttpClient http, URI uri) throws InterruptedException {
        try {
            HttpResponse<byte[]> r = http.send(HttpRequest.newBuilder(uri).timeout(timeout).GET().build(),
                    HttpResponse.BodyHandlers.ofByteArray());
            if (r.statusCode() != 200) {
                throw new IllegalStateException("observer " + uri + " answered HTTP " + r.statusCode());
            }
            return Json.MAPPER.readTree(r.body());
        } catch (java.net.http.HttpTimeoutException e) {
            throw new IllegalStateException("observer " + uri + " did not answer within " + timeout.toMillis()
                    + " ms (--timeout)");
        } catch (java.net.ConnectException e) {
            throw new IllegalStateException("observer " + uri + " unreachable: connection refused");
        } catch (java.io.IOException e) {
            throw new IllegalStateException("observer " + uri + " unreachable: "
                    + (e.getMessage() == null ? "I/O error" : e.getMessage()));
        }
    }

    /** One row as shown. */
    record Line(String entry, double offered, double admitted, double refused, double shadow, int limiters) {
        double share() {
            return offered > 0 ? refused / offered : 0;
        }
    }

    /** How an entry is named: {@code bucket "prefix"}, {@code bucket "prefix" Op}, {@code bucket default}… */
    static String entry(JsonNode r) {
        String resource = text(r, "resource");
        String level = String.valueOf(text(r, "level"));
        String prefix = text(r, "prefix");
        String op = text(r, "operation");
        return switch (level) {
            case "prefix" -> resource + " \"" + prefix + "\"";
            case "prefix_method" -> resource + " \"" + prefix + "\" " + op;
            case "resource" -> resource;
            case "methods_default" -> resource + " methods_default" + (op == null ? "" : "." + op);
            default -> resource + " " + level;
        };
    }

    private static String text(JsonNode n, String f) {
        JsonNode v = n.get(f);
        return v == null || v.isNull() ? null : v.asText();
    }

    /**
     * Renders the table of one answer of the observer, at most 80 columns wide: a header line with the
     * membership and configuration revision, the table, and the window's totals.
     */
    static String render(JsonNode stats, URI uri, Sort sort, long windowSeconds, int maxRows) {
        StringBuilder b = new StringBuilder();
        int answered = stats.path("answered").asInt();
        int total = stats.path("limiters").size();
        List<String> revisions = new ArrayList<>();
        stats.path("configRevisions").forEach(v -> revisions.add(v.asText()));
        JsonNode w = null;
        List<Long> windows = new ArrayList<>();
        for (JsonNode x : stats.path("windows")) {
            windows.add(x.path("seconds").asLong());
            if (x.path("seconds").asLong() == windowSeconds) {
                w = x;
            }
        }
        b.append(fit(String.format(Locale.ROOT, "%s  limiters %d/%d answered (rev %d)  config rev %s  window %ds",
                uri.getAuthority(), answered, total, stats.path("membershipRevision").asLong(),
                revisions.isEmpty() ? "-" : String.join(",", revisions), windowSeconds), 80)).append('\n');
        List<String> missing = new ArrayList<>();
        for (JsonNode l : stats.path("limiters")) {
            if (!l.path("answered").asBoolean()) {
                missing.add(l.path("id").asText() + " (" + l.path("error").asText() + ")");
            }
        }
        if (!missing.isEmpty()) {
            b.append(fit("not answering: " + String.join(", ", missing), 80)).append('\n');
        }
        if (w == null) {
            b.append(windows.isEmpty() ? "no statistics (no limiter answered, or statistics are off)\n"
                    : "no " + windowSeconds + "s window; the limiters keep " + windows + " s (--window)\n");
            return b.toString();
        }
        List<Line> lines = new ArrayList<>();
        for (JsonNode r : w.path("rows")) {
            lines.add(new Line(entry(r), r.path("offeredPerS").asDouble(), r.path("admittedPerS").asDouble(),
                    r.path("refusedPerS").asDouble(), r.path("wouldRejectPerS").asDouble(), r.path("limiters").asInt()));
        }
        Comparator<Line> order = switch (sort) {
            case offered -> Comparator.comparingDouble(Line::offered).reversed();
            case admitted -> Comparator.comparingDouble(Line::admitted).reversed();
            case refused -> Comparator.comparingDouble(Line::refused).reversed();
            case share -> Comparator.comparingDouble(Line::share).reversed();
            case shadow -> Comparator.comparingDouble(Line::shadow).reversed();
            case limiters -> Comparator.comparingInt(Line::limiters).reversed();
            case resource -> Comparator.comparing(Line::entry);
        };
        lines.sort(order.thenComparing(Line::entry));
        b.append(String.format(Locale.ROOT, "%-30s %8s %8s %8s %6s %8s %3s%n", "RESOURCE / ENTRY", "OFFER/s",
                "ADMIT/s", "REFUSE/s", "REF%", "SHADOW/s", "LIM"));
        for (Line l : lines.subList(0, Math.min(maxRows, lines.size()))) {
            b.append(String.format(Locale.ROOT, "%-30s %8s %8s %8s %5.1f%% %8s %3d%n", fit(l.entry(), 30),
                    num(l.offered()), num(l.admitted()), num(l.refused()), l.share() * 100, num(l.shadow()), l.limiters()));
        }
        if (lines.size() > maxRows) {
            b.append(String.format(Locale.ROOT, "(%d more rows; --rows)%n", lines.size() - maxRows));
        }
        double covered = Math.max(1, w.path("coveredSeconds").asLong());
        double offered = w.path("offered").asLong() / covered;
        double refused = w.path("refused").asLong() / covered;
        b.append(fit(String.format(Locale.ROOT, "all entries: offered %s/s, refused %s/s (%.1f%%), shadow %s/s,"
                        + " over %ds", num(offered).trim(), num(refused).trim(), offered > 0 ? refused / offered * 100 : 0,
                num(w.path("wouldReject").asLong() / covered).trim(), (long) covered), 80)).append('\n');
        return b.toString();
    }

    static String num(double v) {
        return v < 10_000 ? String.format(Locale.ROOT, "%8.1f", v)
                : v < 100_000_000 ? String.format(Locale.ROOT, "%8.0f", v)
                : String.format(Locale.ROOT, "%7.0fM", v / 1e6);
    }

    /** Cuts {@code s} to {@code width} characters, ending in {@code ~} when cut. */
    static String fit(String s, int width) {
        return s.length() <= width ? s : s.substring(0, width - 1) + "~";
    }
}
