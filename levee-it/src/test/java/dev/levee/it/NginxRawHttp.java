package dev.levee.it;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;

/**
 * HTTP/1.1 on raw sockets for the NGINX tests: a recording server (stands in for levee-client or
 * the S3 backend, so a test sees the exact request NGINX sent) and a client connection that reads
 * responses byte by byte (so a test sees every status line, interim ones included).
 */
final class NginxRawHttp {

    private NginxRawHttp() {
    }

    /**
     * Returns an extra S3 server block for {@code EmbeddedNginx}'s extra http text: the check part,
     * the access log of the main server and one location that checks, then proxies to {@code upstream}.
     *
     * @param listen    listen argument, e.g. {@code 127.0.0.1:{{port:deny}}}
     * @param upstream  upstream name or address to proxy_pass to, e.g. {@code s3_backend}
     * @param attempt   the Lua call, e.g. {@code require("rate").attempt("/.levee", { on_failure = "deny" })}
     * @param check     the rendered check part ({@code NginxConfig.Part.CHECK})
     */
    static String server(String listen, String upstream, String attempt, String check) {
        return "server {\n    listen " + listen + ";\n" + check + "\n    access_log logs/access.log levee;\n"
                + "    client_max_body_size 0;\n"
                + "    location / {\n        access_by_lua_block { " + attempt + " }\n"
                + "        proxy_pass http://" + upstream + ";\n        proxy_http_version 1.1;\n"
                + "        proxy_set_header Host $http_host;\n        proxy_set_header Connection \"\";\n"
                + "        proxy_request_buffering off;\n    }\n}\n";
    }

    /** One request as received: request line, headers in order, body (chunked framing removed). */
    record Request(String method, String target, List<Map.Entry<String, String>> headers, byte[] body, boolean chunked) {

        /** Returns the first value of a header (case-insensitive), or null. */
        String header(String name) {
            for (Map.Entry<String, String> h : headers) {
                if (h.getKey().equalsIgnoreCase(name)) {
                    return h.getValue();
                }
            }
            return null;
        }

        /** Returns the header names in lower case, in order. */
        List<String> headerNames() {
            return headers.stream().map(h -> h.getKey().toLowerCase(Locale.ROOT)).toList();
        }
    }

    /** One response as read by {@link Conn}. */
    record Response(String statusLine, int status, List<Map.Entry<String, String>> headers, byte[] body) {

        String header(String name) {
            for (Map.Entry<String, String> h : headers) {
                if (h.getKey().equalsIgnoreCase(name)) {
                    return h.getValue();
                }
            }
            return null;
        }

        String bodyText() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    /** A canned answer of {@link Server}. */
    record Answer(int status, List<Map.Entry<String, String>> headers, byte[] body) {
        static Answer of(int status, String body, String... headerPairs) {
            List<Map.Entry<String, String>> h = new ArrayList<>();
            for (int i = 0; i + 1 < headerPairs.length; i += 2) {
                h.add(Map.entry(headerPairs[i], headerPairs[i + 1]));
            }
            return new Answer(status, h, body.getBytes(StandardCharsets.UTF_8));
        }
    }

    /** A stand-in levee-client that records the checks it gets. */
    interface Recording extends AutoCloseable {
        int port();

        /** Returns every check received so far, oldest first. */
        List<Request> requests();

        /** Returns the checks whose target contains {@code marker}, or whose X-Levee-Uri does. */
        default List<Request> requestsFor(String marker) {
            return requests().stream().filter(r -> r.target().contains(marker)
                    || (r.header("X-Levee-Uri") != null && r.header("X-Levee-Uri").contains(marker))).toList();
        }

        @Override
        void close() throws IOException;
    }

    /** A keep-alive HTTP/1.1 server on a free loopback port that records every request. */
    static final class Server implements Recording {
        private final ServerSocket socket;
        private final Function<Request, Answer> handler;
        private final List<Request> requests = new CopyOnWriteArrayList<>();
        private final List<Socket> open = new CopyOnWriteArrayList<>();
        private volatile boolean closed;

        Server(Function<Request, Answer> handler) throws IOException {
            this.handler = handler;
            this.socket = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
            Thread.ofVirtual().name("raw-http-accept").start(this::acceptLoop);
        }

        @Override
        public int port() {
            return socket.getLocalPort();
        }

        @Override
        public List<Request> requests() {
            return List.copyOf(requests);
        }

        private void acceptLoop() {
            while (!closed) {
                try {
                    Socket s = socket.accept();
                    open.add(s);
                    Thread.ofVirtual().name("raw-http-conn").start(() -> serve(s));
                } catch (IOException e) {
                    return;
                }
            }
        }

        private void serve(Socket s) {
            try (s) {
                InputStream in = s.getInputStream();
                OutputStream out = s.getOutputStream();
                while (!closed) {
                    String line = readLine(in);
                    if (line == null) {
                        return;
                    }
                    String[] parts = line.split(" ", 3);
                    List<Map.Entry<String, String>> headers = readHeaders(in);
                    Request probe = new Request(parts[0], parts[1], headers, new byte[0], false);
                    String te = probe.header("Transfer-Encoding");
                    String cl = probe.header("Content-Length");
                    byte[] body;
                    boolean chunked = te != null && te.toLowerCase(Locale.ROOT).contains("chunked");
                    if (chunked) {
                        body = readChunked(in);
                    } else if (cl != null) {
                        body = in.readNBytes(Integer.parseInt(cl.trim()));
                    } else {
                        body = new byte[0];
                    }
                    Request r = new Request(parts[0], parts[1], headers, body, chunked);
                    requests.add(r);
                    Answer a = handler.apply(r);
                    StringBuilder head = new StringBuilder("HTTP/1.1 " + a.status() + " X\r\n");
                    for (Map.Entry<String, String> h : a.headers()) {
                        head.append(h.getKey()).append(": ").append(h.getValue()).append("\r\n");
                    }
                    head.append("Content-Length: ").append(a.body().length).append("\r\n\r\n");
                    out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
                    if (!r.method().equals("HEAD")) {
                        out.write(a.body());
                    }
                    out.flush();
                }
            } catch (IOException | RuntimeException e) {
                // the peer went away
            } finally {
                open.remove(s);
            }
        }

        @Override
        public void close() throws IOException {
            closed = true;
            socket.close();
            for (Socket s : open) {
                s.close();
            }
        }
    }

    /**
     * A stand-in for levee-client's line endpoint (levee-line/1, docs/nginx.md), parsing strictly on its own:
     * each request is recorded as the HTTP check it stands for ({@code GET /v1/s3check}, {@code ?ratelimit=1}
     * for flags 1, the fields as {@code X-Levee-*} headers, an empty host or copy source left out as NGINX
     * does), so that a test reads both transports alike. The handler gives the answer line without its LF, or
     * null to close the connection without answering. Malformed input is answered {@code error} and closed.
     */
    static final class LineServer implements Recording {
        private final ServerSocket socket;
        private final Function<Request, String> handler;
        private final List<Request> requests = new CopyOnWriteArrayList<>();
        private final List<Socket> open = new CopyOnWriteArrayList<>();
        private final java.util.concurrent.atomic.AtomicInteger connections = new java.util.concurrent.atomic.AtomicInteger();
        private final List<String> errors = new CopyOnWriteArrayList<>();
        private volatile boolean closed;

        LineServer(Function<Request, String> handler) throws IOException {
            this.handler = handler;
            this.socket = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
            Thread.ofVirtual().name("raw-line-accept").start(this::acceptLoop);
        }

        @Override
        public int port() {
            return socket.getLocalPort();
        }

        @Override
        public List<Request> requests() {
            return List.copyOf(requests);
        }

        /** Returns how many connections were accepted so far. */
        int connections() {
            return connections.get();
        }

        /** Returns the malformed requests seen, as the reasons answered. */
        List<String> errors() {
            return List.copyOf(errors);
        }

        private void acceptLoop() {
            while (!closed) {
                try {
                    Socket s = socket.accept();
                    connections.incrementAndGet();
                    open.add(s);
                    Thread.ofVirtual().name("raw-line-conn").start(() -> serve(s));
                } catch (IOException e) {
                    return;
                }
            }
        }

        private static String field(InputStream in, String name, int limit) throws IOException {
            int n = 0;
            int digits = 0;
            for (int c; (c = in.read()) != ':'; ) {
                if (c < '0' || c > '9' || ++digits > 5) {
                    throw new IllegalArgumentException(name + " length");
                }
                n = n * 10 + (c - '0');
            }
            if (digits == 0 || n > limit) {
                throw new IllegalArgumentException(name + " length");
            }
            byte[] b = in.readNBytes(n);
            if (b.length != n) {
                throw new EOFException(name);
            }
            return new String(b, StandardCharsets.ISO_8859_1);
        }

        private void serve(Socket s) {
            try (s) {
                InputStream in = s.getInputStream();
                OutputStream out = s.getOutputStream();
                while (!closed) {
                    int first = in.read();
                    if (first < 0) {
                        return;
                    }
                    Request r;
                    try {
                        if (first != 'C' || in.read() != ' ') {
                            throw new IllegalArgumentException("request must start with 'C'");
                        }
                        int flags = in.read();
                        if ((flags != '0' && flags != '1') || in.read() != ' ') {
                            throw new IllegalArgumentException("flags");
                        }
                        String method = field(in, "method", 32);
                        String host = field(in, "host", 1024);
                        String uri = field(in, "uri", 16384);
                        String copy = field(in, "copy-source", 8192);
                        if (in.read() != '\n' || method.isEmpty() || uri.isEmpty()) {
                            throw new IllegalArgumentException("end of request");
                        }
                        List<Map.Entry<String, String>> h = new ArrayList<>();
                        h.add(Map.entry("X-Levee-Method", method));
                        if (!host.isEmpty()) {
                            h.add(Map.entry("X-Levee-Host", host));
                        }
                        h.add(Map.entry("X-Levee-Uri", uri));
                        if (!copy.isEmpty()) {
                            h.add(Map.entry("X-Levee-Copy-Source", copy));
                        }
                        r = new Request("GET", "/v1/s3check" + (flags == '1' ? "?ratelimit=1" : ""), h, new byte[0], false);
                    } catch (IllegalArgumentException e) {
                        errors.add(e.getMessage());
                        out.write(("error\t" + e.getMessage() + "\n").getBytes(StandardCharsets.ISO_8859_1));
                        out.flush();
                        return;
                    }
                    requests.add(r);
                    String answer = handler.apply(r);
                    if (answer == null) {
                        return; // closes without answering
                    }
                    out.write((answer + "\n").getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                }
            } catch (IOException | RuntimeException e) {
                // the peer went away
            } finally {
                open.remove(s);
            }
        }

        @Override
        public void close() throws IOException {
            closed = true;
            socket.close();
            for (Socket s : open) {
                s.close();
            }
        }
    }

    /** A client connection: writes raw bytes, reads responses exactly as sent. */
    static final class Conn implements AutoCloseable {
        private final Socket socket;
        private final InputStream in;
        private final OutputStream out;

        Conn(int port) throws IOException {
            socket = new Socket(InetAddress.getLoopbackAddress(), port);
            socket.setSoTimeout(10_000);
            in = socket.getInputStream();
            out = socket.getOutputStream();
        }

        Conn send(String text) throws IOException {
            return send(text.getBytes(StandardCharsets.ISO_8859_1));
        }

        Conn send(byte[] bytes) throws IOException {
            out.write(bytes);
            out.flush();
            return this;
        }

        /** Reads one response; {@code head} when it answers a HEAD request (no body). */
        Response read(boolean head) throws IOException {
            String status = readLine(in);
            if (status == null) {
                throw new EOFException("connection closed before a status line");
            }
            List<Map.Entry<String, String>> headers = readHeaders(in);
            int code = Integer.parseInt(status.substring(9, 12));
            Response probe = new Response(status, code, headers, new byte[0]);
            byte[] body;
            if (head || code < 200 || code == 204 || code == 304) {
                body = new byte[0];
            } else if (probe.header("Transfer-Encoding") != null) {
                body = readChunked(in);
            } else if (probe.header("Content-Length") != null) {
                body = in.readNBytes(Integer.parseInt(probe.header("Content-Length").trim()));
            } else {
                body = in.readAllBytes();
            }
            return new Response(status, code, headers, body);
        }

        /** Reads whatever comes until the peer closes (or {@code millis} pass without a byte). */
        byte[] readRest(int millis) throws IOException {
            socket.setSoTimeout(millis);
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            try {
                for (int n; (n = in.read(buf)) >= 0; ) {
                    b.write(buf, 0, n);
                }
            } catch (SocketTimeoutException e) {
                b.write("<still open>".getBytes(StandardCharsets.ISO_8859_1));
            } finally {
                socket.setSoTimeout(10_000);
            }
            return b.toByteArray();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) >= 0) {
            if (c == '\n') {
                String s = b.toString(StandardCharsets.ISO_8859_1);
                return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
            }
            b.write(c);
        }
        return b.size() == 0 ? null : b.toString(StandardCharsets.ISO_8859_1);
    }

    static List<Map.Entry<String, String>> readHeaders(InputStream in) throws IOException {
        List<Map.Entry<String, String>> headers = new ArrayList<>();
        for (String h; (h = readLine(in)) != null && !h.isEmpty(); ) {
            int colon = h.indexOf(':');
            headers.add(Map.entry(h.substring(0, colon).trim(), h.substring(colon + 1).trim()));
        }
        return headers;
    }

    static byte[] readChunked(InputStream in) throws IOException {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        while (true) {
            String size = readLine(in);
            if (size == null) {
                throw new EOFException("chunked body cut short");
            }
            int semi = size.indexOf(';');
            int n = Integer.parseInt((semi >= 0 ? size.substring(0, semi) : size).trim(), 16);
            if (n == 0) {
                readHeaders(in); // trailers
                return body.toByteArray();
            }
            body.write(in.readNBytes(n));
            readLine(in);
        }
    }
}
