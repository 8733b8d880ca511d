package dev.levee.it;

import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.levee.runtime.Json;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A headless Chromium (Debian's package) driven over the Chrome DevTools Protocol with the JDK's own
 * WebSocket client: one page, navigated, evaluated in ({@code Runtime.evaluate}) and photographed
 * ({@code Page.captureScreenshot}). No Selenium, no chromedriver: the protocol calls needed are four.
 */
final class Chromium implements AutoCloseable {

    /** Where the browser is looked for: {@code $LEVEE_CHROMIUM}, then Debian's and other usual paths. */
    static Optional<Path> find() {
        List<String> candidates = new ArrayList<>();
        String env = System.getenv("LEVEE_CHROMIUM");
        if (env != null && !env.isBlank()) {
            candidates.add(env);
        }
        candidates.addAll(List.of("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"));
        return candidates.stream().map(Path::of).filter(Files::isExecutable).findFirst();
    }

    private final Process process;
    private final WebSocket socket;
    private final AtomicInteger ids = new AtomicInteger();
    private final Map<Integer, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();

    private Chromium(Process process, WebSocket socket) {
        this.process = process;
        this.socket = socket;
    }

    /**
     * Starts the browser headless with a fresh profile in {@code profile} and connects to its first page.
     *
     * @param binary  the browser
     * @param profile an empty directory for its profile ({@code DevToolsActivePort} is read from it)
     * @param log     file of the browser's output
     * @param width   window width in CSS pixels
     * @param height  window height in CSS pixels
     */
    static Chromium start(Path binary, Path profile, Path log, int width, int height) throws Exception {
        Files.createDirectories(profile);
        Files.createDirectories(log.getParent());
        Process p = new ProcessBuilder(binary.toString(), "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-sync", "--hide-scrollbars", "--mute-audio",
                "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--remote-allow-origins=*",
                "--user-data-dir=" + profile.toAbsolutePath(), "--window-size=" + width + "," + height, "about:blank")
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.to(log.toFile())).start();
        try {
            Path active = profile.resolve("DevToolsActivePort");
            await("chromium writes " + active).atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
                    .until(() -> {
                        if (!p.isAlive()) {
                            throw new IllegalStateException("chromium exited with " + p.exitValue() + ": "
                                    + Files.readString(log));
                        }
                        return Files.isRegularFile(active) && Files.readAllLines(active).size() >= 2;
                    });
            int port = Integer.parseInt(Files.readAllLines(active).get(0).trim());
            HttpClient http = HttpClient.newHttpClient();
            String[] page = {null};
            await("chromium lists its page").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
                    .until(() -> {
                        JsonNode list = Json.MAPPER.readTree(http.send(HttpRequest.newBuilder(
                                        URI.create("http://127.0.0.1:" + port + "/json/list")).build(),
                                HttpResponse.BodyHandlers.ofByteArray()).body());
                        for (JsonNode t : list) {
                            if (t.path("type").asText().equals("page")) {
                                page[0] = t.path("webSocketDebuggerUrl").asText();
                                return true;
                            }
                        }
                        return false;
                    });
            Chromium[] self = {null};
            Listener listener = new Listener(() -> self[0]);
            WebSocket ws = http.newWebSocketBuilder().connectTimeout(Duration.ofSeconds(10))
                    .buildAsync(URI.create(page[0]), listener).get(30, TimeUnit.SECONDS);
            self[0] = new Chromium(p, ws);
            return self[0];
        } catch (Exception | Error e) {
            p.destroyForcibly();
            throw e;
        }
    }

    private static final class Listener implements WebSocket.Listener {
        private final java.util.function.Supplier<Chromium> owner;
        private final StringBuilder text = new StringBuilder();

        Listener(java.util.function.Supplier<Chromium> owner) {
            this.owner = owner;
        }

        @Override
        public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
            text.append(data);
            if (last) {
                String message = text.toString();
                text.setLength(0);
                try {
                    JsonNode m = Json.MAPPER.readTree(message);
                    Chromium c = owner.get();
                    if (m.has("id") && c != null) {
                        CompletableFuture<JsonNode> f = c.pending.remove(m.path("id").asInt());
                        if (f != null) {
                            if (m.has("error")) {
                                f.completeExceptionally(new IllegalStateException("DevTools: " + m.path("error")));
                            } else {
                                f.complete(m.path("result"));
                            }
                        }
                    } // events are not used
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
            ws.request(1);
            return null;
        }
    }

    /** Sends one protocol command and waits for its result. */
    JsonNode call(String method, Map<String, ?> params) throws Exception {
        int id = ids.incrementAndGet();
        CompletableFuture<JsonNode> f = new CompletableFuture<>();
        pending.put(id, f);
        ObjectNode m = Json.MAPPER.createObjectNode().put("id", id).put("method", method);
        m.set("params", Json.MAPPER.valueToTree(params));
        socket.sendText(Json.MAPPER.writeValueAsString(m), true).get(10, TimeUnit.SECONDS);
        return f.get(60, TimeUnit.SECONDS);
    }

    /** Runs {@code script} in every new document before its own scripts (e.g. to listen for CSP reports). */
    void beforeEachDocument(String script) throws Exception {
        call("Page.enable", Map.of());
        call("Page.addScriptToEvaluateOnNewDocument", Map.of("source", script));
    }

    /** Navigates to {@code url} and waits until the document has loaded. */
    void open(String url) throws Exception {
        JsonNode r = call("Page.navigate", Map.of("url", url));
        if (r.hasNonNull("errorText")) {
            throw new IllegalStateException("chromium could not open " + url + ": " + r.path("errorText").asText());
        }
        await("document of " + url + " loaded").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
                .until(() -> "complete".equals(eval("document.readyState").asText()));
    }

    /**
     * Evaluates {@code expression} in the page (promises awaited) and returns its value as JSON.
     *
     * @throws IllegalStateException when the expression throws in the page
     */
    JsonNode eval(String expression) throws Exception {
        JsonNode r = call("Runtime.evaluate", Map.of("expression", expression, "returnByValue", true,
                "awaitPromise", true));
        if (r.has("exceptionDetails")) {
            throw new IllegalStateException("page script failed: " + r.path("exceptionDetails"));
        }
        return r.path("result").path("value");
    }

    /** Writes a PNG of the whole page to {@code file}. */
    void screenshot(Path file) throws Exception {
        JsonNode r = call("Page.captureScreenshot", Map.of("format", "png", "captureBeyondViewport", true));
        Files.createDirectories(file.getParent());
        Files.write(file, Base64.getDecoder().decode(r.path("data").asText()));
    }

    @Override
    public void close() {
        try {
            int id = ids.incrementAndGet();
            pending.put(id, new CompletableFuture<>());
            socket.sendText("{\"id\":" + id + ",\"method\":\"Browser.close\"}", true).get(5, TimeUnit.SECONDS);
        } catch (Exception e) {
            // closed below by a signal
        }
        socket.abort();
        List<ProcessHandle> children = process.descendants().toList();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroy();
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
        children.forEach(ProcessHandle::destroyForcibly); // renderers left behind by a forced stop
    }
}
