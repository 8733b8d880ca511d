package dev.levee.cli;

import dev.levee.client.LeveeClient;
import dev.levee.config.QuotaConfigLoader;
import dev.levee.config.QuotaLayout;
import dev.levee.core.GcraLimit;
import dev.levee.core.Rendezvous;
import dev.levee.quota.QuotaConfig;
import dev.levee.s3.S3Classification;
import dev.levee.s3.S3Classifier;
import dev.levee.s3.S3Operation;
import dev.levee.s3.S3Request;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code levee quota explain}: says which rule a request hits (issue 14, item 6; docs/design.md §11).
 *
 * <h2>Model</h2>
 * Every step is the code the services run, never a copy of it: the request's raw facts go through
 * {@link S3Classifier} (levee-s3, as levee-client classifies) and {@link LeveeClient#clamp} (the cut of
 * over-long names a check carries); the classification through {@link QuotaConfig#resolve} (levee-quota, as
 * the limiter resolves); the group through {@link Rendezvous#top} with {@code g = }{@link
 * Rendezvous#groupSize} (levee-core, as the client routes); the per-limiter rate and capacity through
 * {@link GcraLimit#of} (as the limiter applies the quota). The only code of its own is reading the inputs
 * and printing.
 *
 * <p>Inputs: a request as an operator writes it ({@code GET s3://bucket/key}, the key literal as in
 * {@code aws s3}), as NGINX passes it to levee-client ({@code --method/--host/--uri/--copy-source}), or
 * already classified as a limiter receives it ({@code --resource/--key/--operation}). Quotas from
 * {@code --quotas FILE} or etcd; membership from {@code --limiters}, else {@code --observer}, else etcd.
 *
 * <p>Input that is probably a mistake — a method S3 does not use, an encoding S3 refuses, no bucket — is
 * refused (status 2, one error line and one hint line) unless {@code --raw} asks for exactly what
 * levee-client would count (docs/decisions.md, "quota explain").
 */
@Command(name = "explain", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Explain which quota a request hits: its classification, the matched entry and level, the limit"
                + " key, rate and burst per limiter, and the group of limiters HRW picks.",
                "Examples:",
                "  levee quota explain --quotas q.yaml GET s3://example-bucket/photos/2024/a.jpg",
                "  levee quota explain --quotas q.yaml --base-domain s3.example --method PUT --host bucket.s3.example"
                        + " --uri '/key?uploads' --observer 127.0.0.1:7000",
                "  levee quota explain --etcd http://127.0.0.1:2379 --json --resource b --key k --operation GetObject"})
final class QuotaExplainCommand implements Callable<Integer> {

    /** Status of refused input (as picocli's usage errors). */
    static final int BAD_INPUT = 2;

    @picocli.CommandLine.ParentCommand
    QuotaCommand parent;

    EtcdOptions etcd = new EtcdOptions();

    @Parameters(arity = "0..2", paramLabel = "METHOD s3://BUCKET/KEY",
            description = "the request: an HTTP method and s3://BUCKET/KEY (the key as written, not encoded)")
    List<String> request = new ArrayList<>();

    @Option(names = "--method", description = "HTTP method as NGINX sees it (with --uri)")
    String method;

    @Option(names = "--host", description = "Host header as NGINX sees it (virtual-hosted style with --base-domain)")
    String host;

    @Option(names = "--uri", description = "request URI as NGINX sees it, still percent-encoded: /BUCKET/KEY?QUERY")
    String uri;

    @Option(names = "--copy-source", paramLabel = "VALUE", description = "the x-amz-copy-source header (CopyObject, UploadPartCopy)")
    String copySource;

    @Option(names = "--resource", description = "a request already classified, as a limiter receives it: the bucket")
    String resource;

    @Option(names = "--key", description = "with --resource: the object key (decoded; default: none)")
    String key;

    @Option(names = "--operation", description = "with --resource: the S3 operation (AWS API name, e.g. GetObject)")
    String operation;

    @Option(names = "--base-domain", split = ",", description = "base domains for virtual-hosted style, as levee-client's --base-domain")
    List<String> baseDomains = List.of();

    @Option(names = "--quotas", description = "quota file, single-file form (default: the quotas in etcd with --etcd or LEVEE_ETCD_ENDPOINTS,"
            + " else the embedded defaults levee demo uses)")
    Path quotas;

    @Option(names = "--limiters", split = ",", paramLabel = "ID", description = "the active limiters' ids, by hand")
    List<String> limiters;

    @Option(names = "--observer", paramLabel = "URL", description = "read the active limiters and factor from this"
            + " observer (http://HOST:PORT or HOST:PORT)")
    String observer;

    @Option(names = "--timeout", converter = Converters.DurationConverter.class, defaultValue = "5s",
            description = "longest wait for the observer or etcd (default: ${DEFAULT-VALUE})")
    Duration timeout;

    @Option(names = "--raw", description = "explain any method, encoding or missing bucket exactly as levee-client"
            + " counts it (operation Unknown) instead of refusing it as a probable mistake")
    boolean raw;

    @Option(names = "--json", description = "print one JSON object, for scripts")
    boolean json;

    @Option(names = "--lease-threshold", paramLabel = "REQ/S",
            defaultValue = "" + (long) dev.levee.client.RequestLeases.Settings.DEFAULT_THRESHOLD,
            description = "levee client's --lease-threshold, to say above which rate an eligible key is leased"
                    + " (default: ${DEFAULT-VALUE})")
    double leaseThreshold;

    /** Input refused: one error line and one hint line, status {@value #BAD_INPUT}. */
    static final class BadInput extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final String hint;

        BadInput(String message, String hint) {
            super(message, null, false, false);
            this.hint = hint;
        }
    }

    /** The active limiters, where they came from, and the factor that source gives (null: the quotas'). */
    record Membership(List<LeveeClient.Member> members, String source, Integer factor, String note) {
    }

    private static final String METHODS = "GET, HEAD, PUT, POST or DELETE";

    @Override
    public Integer call() throws Exception {
        if (parent != null) {
            etcd = parent.etcd;
        }
        try {
            return explain(System.out);
        } catch (BadInput e) {
            PrintStream err = System.err;
            err.println("levee quota explain: " + e.getMessage());
            err.println("hint: " + e.hint);
            return BAD_INPUT;
        }
    }

    private int explain(PrintStream out) throws Exception {
        if (!(leaseThreshold > 0) || Double.isInfinite(leaseThreshold)) {
            throw new BadInput("--lease-threshold must be a finite number > 0 (requests per second), got "
                    + leaseThreshold, "give levee client's --lease-threshold, e.g. --lease-threshold 100");
        }
        Input in = input();
        S3Classifier classifier;
        try {
            classifier = baseDomains.isEmpty() ? S3Classifier.pathStyleOnly() : S3Classifier.withBaseDomains(baseDomains);
        } catch (IllegalArgumentException e) {
            throw new BadInput("--base-domain: " + e.getMessage(), "give bare host names, e.g. --base-domain s3.example.com");
        }
        S3Classification c = LeveeClient.clamp(in.request == null ? in.classified : classifier.classify(in.request));
        if (in.request != null && !raw) {
            refuseMistakes(in.request, c);
        }
        if (limiters != null && observer != null) {
            throw new BadInput("--limiters and --observer both give the membership", "give one of them");
        }
        List<String> ids = limiters == null ? null : limiterIds(limiters);
        QuotaConfig cfg;
        String quotaSource;
        Membership membership;
        if (quotas == null && !etcd.enabled()) {
            // neither a file nor etcd: the quotas `levee demo` runs with (issue 26 item 9), said in the answer
            cfg = Quotas.embedded();
            quotaSource = "the embedded default quotas (those of levee demo; --quotas FILE or --etcd ENDPOINTS for yours)";
            membership = ids != null ? byHand(ids) : observer != null ? fromObserver(observer) : null;
        } else if (quotas != null && (ids != null || observer != null || !etcd.enabled())) {
            cfg = QuotaConfigLoader.load(quotas);
            quotaSource = "file " + quotas;
            membership = ids != null ? byHand(ids) : observer != null ? fromObserver(observer) : null;
        } else {
            try (io.etcd.jetcd.Client client = etcd.client()) {
                etcd.probe();
                String prefix = dev.levee.etcd.Etcd.normalisePrefix(etcd.prefix);
                if (quotas != null) {
                    cfg = QuotaConfigLoader.load(quotas);
                    quotaSource = "file " + quotas;
                } else {
                    cfg = QuotaLayout.fromValues(prefix, QuotaCommand.read(client, prefix, etcd.maxValueBytes));
                    quotaSource = "etcd " + etcd.endpoints + " " + prefix;
                }
                membership = ids != null ? byHand(ids) : observer != null ? fromObserver(observer)
                        : fromEtcd(client, prefix, cfg.factor());
            } catch (java.util.concurrent.ExecutionException e) {
                throw new IllegalStateException("etcd at " + etcd.endpoints + ": " + e.getCause().getMessage());
            } catch (java.util.concurrent.TimeoutException e) {
                throw new IllegalStateException("etcd at " + etcd.endpoints + " did not answer in time");
            }
        }
        QuotaExplanation x = QuotaExplanation.of(in, c, cfg, quotaSource, membership, leaseThreshold);
        if (json) {
            out.println(new String(dev.levee.runtime.Json.MAPPER.writerWithDefaultPrettyPrinter()
                    .writeValueAsBytes(x.toMap()), StandardCharsets.UTF_8));
        } else {
            x.print(out);
        }
        return 0;
    }

    /** What was asked: raw request facts, or a classification given by hand. */
    record Input(S3Request request, String shown, S3Classification classified) {
    }

    private Input input() {
        boolean positional = !request.isEmpty();
        boolean nginx = method != null || host != null || uri != null || copySource != null;
        boolean byHand = resource != null || key != null || operation != null;
        int forms = (positional ? 1 : 0) + (nginx ? 1 : 0) + (byHand ? 1 : 0);
        if (forms == 0) {
            throw new BadInput("no request given", "e.g. 'GET s3://BUCKET/KEY', or --method M --host H --uri U as NGINX"
                    + " sees it, or --resource R --key K --operation OP");
        }
        if (forms > 1) {
            throw new BadInput("give the request one way only", "'METHOD s3://BUCKET/KEY', or --method/--host/--uri,"
                    + " or --resource/--key/--operation");
        }
        if (byHand) {
            if (resource == null || operation == null) {
                throw new BadInput("--resource and --operation go together", "e.g. --resource example-bucket --key"
                        + " photos/a.jpg --operation GetObject (--key defaults to none: a bucket-level request)");
            }
            S3Operation op = S3Operation.byName(operation).orElseThrow(() -> new BadInput(
                    "unknown operation '" + operation + "'", "operations use AWS API names such as GetObject, PutObject,"
                            + " ListObjectsV2 or Unknown"));
            return new Input(null, null, new S3Classification(resource, key == null ? "" : key, op));
        }
        if (nginx) {
            if (method == null || uri == null) {
                throw new BadInput("--method and --uri go together", "e.g. --method PUT --host bucket.s3.example --uri"
                        + " '/key?uploads' (--host is optional for path-style requests)");
            }
            checkMethod(method);
            checkUri(uri);
            return new Input(S3Request.fromRequestUri(method, host, uri, copySource),
                    method + " " + (host == null ? "" : host) + uri, null);
        }
        if (request.size() != 2) {
            throw new BadInput("a request is a method and s3://BUCKET/KEY, got '" + String.join(" ", request) + "'",
                    "e.g. GET s3://example-bucket/photos/a.jpg");
        }
        String m = request.get(0);
        String target = request.get(1);
        if (!target.regionMatches(true, 0, "s3://", 0, 5)) {
            throw new BadInput("a request is a method and s3://BUCKET/KEY, got '" + String.join(" ", request) + "'",
                    "e.g. GET s3://example-bucket/photos/a.jpg, or --method/--host/--uri for a request as NGINX sees it");
        }
        checkMethod(m);
        String rest = target.substring(5);
        int slash = rest.indexOf('/');
        String bucket = slash < 0 ? rest : rest.substring(0, slash);
        String k = slash < 0 ? "" : rest.substring(slash + 1);
        if (bucket.isEmpty()) {
            throw new BadInput("missing bucket in '" + target + "'", "write s3://BUCKET/KEY, e.g. s3://example-bucket/a.jpg");
        }
        // the key as written (aws s3 style): encoded here as an SDK sends it, so that the classifier decodes it back
        String path = "/" + encode(bucket) + "/" + encode(k);
        if (k.isEmpty()) {
            path = "/" + encode(bucket);
        }
        return new Input(S3Request.fromRequestUri(m, null, path, null), m + " " + target, null);
    }

    private void checkMethod(String m) {
        if (raw) {
            return;
        }
        switch (m) {
            case "GET", "HEAD", "PUT", "POST", "DELETE" -> {
                return;
            }
            default -> {
            }
        }
        String upper = m.toUpperCase(Locale.ROOT);
        boolean known = List.of("GET", "HEAD", "PUT", "POST", "DELETE").contains(upper);
        throw new BadInput("unknown method '" + m + "'", known
                ? "methods are case-sensitive: did you mean " + upper + "? (--raw explains '" + m + "' as levee-client"
                        + " counts it: operation Unknown)"
                : "S3 requests use " + METHODS + "; --raw explains any method as levee-client counts it (operation Unknown)");
    }

    private void checkUri(String u) {
        if (raw) {
            return;
        }
        String hint = "give the request-target as NGINX sees it ($request_uri): /BUCKET/KEY?QUERY, percent-encoded";
        if (u.isEmpty()) {
            throw new BadInput("malformed URI: empty", hint);
        }
        for (int i = 0; i < u.length(); i++) {
            char ch = u.charAt(i);
            if (Character.isWhitespace(ch) || Character.isISOControl(ch)) {
                throw new BadInput(String.format(Locale.ROOT, "malformed URI '%s': character U+%04X at %d is not allowed"
                        + " in a request line", dev.levee.runtime.LogText.escape(u, 200), (int) ch, i),
                        hint + " (a space is %20)");
            }
        }
        if (u.charAt(0) != '/' && !u.regionMatches(true, 0, "http://", 0, 7) && !u.regionMatches(true, 0, "https://", 0, 8)) {
            throw new BadInput("malformed URI '" + dev.levee.runtime.LogText.escape(u, 200) + "': it must start with '/'"
                    + " (or be absolute, http://HOST/PATH)", hint);
        }
    }

    /** Refuses what is probably a mistake in a request given as raw facts (the classifier accepts anything). */
    private void refuseMistakes(S3Request r, S3Classification c) {
        if (!S3Classifier.wellFormedEncoding(r.path())) {
            throw new BadInput("malformed URI: '" + dev.levee.runtime.LogText.escape(r.path(), 200) + "' has a"
                    + " percent-escape that is truncated, not hexadecimal, or not UTF-8 (S3 answers 400 InvalidURI)",
                    "write a '%' as %25; --raw explains it as levee-client counts it (operation Unknown)");
        }
        if (c.resource().isEmpty() && c.operation() != S3Operation.ListBuckets) {
            throw new BadInput("missing bucket: the request names no bucket (" + c.operation() + " on the service)",
                    baseDomains.isEmpty() ? "path-style: --uri /BUCKET/KEY; virtual-hosted: --host BUCKET.BASE-DOMAIN"
                            + " with --base-domain BASE-DOMAIN" : "path-style: --uri /BUCKET/KEY; virtual-hosted: --host"
                            + " BUCKET." + baseDomains.get(0));
        }
    }

    /** Percent-encodes a bucket or key as an S3 SDK puts it in the path: all but unreserved characters and '/'. */
    static String encode(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 16);
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            int ch = b & 0xff;
            if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
                    || ch == '-' || ch == '.' || ch == '_' || ch == '~' || ch == '/') {
                sb.append((char) ch);
            } else {
                sb.append('%').append(Character.toUpperCase(Character.forDigit(ch >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(ch & 15, 16)));
            }
        }
        return sb.toString();
    }

    private static List<String> limiterIds(List<String> given) {
        LinkedHashSet<String> ids = new LinkedHashSet<>();
        for (String id : given) {
            String t = id.strip();
            if (!t.matches("[A-Za-z0-9._:-]{1,128}")) {
                throw new BadInput("--limiters: '" + dev.levee.runtime.LogText.escape(t, 200) + "' is not a limiter id",
                        "limiter ids are 1-128 characters of A-Z a-z 0-9 . _ : - (as levee limiter --id), comma-separated");
            }
            if (!ids.add(t)) {
                throw new BadInput("--limiters: '" + t + "' is given twice", "list each active limiter once");
            }
        }
        return List.copyOf(ids);
    }

    private static Membership byHand(List<String> ids) {
        List<LeveeClient.Member> members = new ArrayList<>();
        for (String id : ids) {
            members.add(new LeveeClient.Member(id, null));
        }
        return new Membership(members, "--limiters", null, null);
    }

    private Membership fromObserver(String url) throws Exception {
        String base = url.contains("://") ? url : "http://" + url;
        URI u;
        try {
            URI given = URI.create(base);
            if (given.getHost() == null || given.getPort() == 0) {
                throw new IllegalArgumentException("no host");
            }
            u = given.resolve("/v1/limiters");
        } catch (IllegalArgumentException e) {
            throw new BadInput("--observer: '" + url + "' is not an address", "give http://HOST:PORT or HOST:PORT");
        }
        HttpClient http = HttpClient.newBuilder().connectTimeout(timeout).build();
        HttpResponse<String> resp;
        try {
            resp = http.send(HttpRequest.newBuilder(u).timeout(timeout).GET().build(), HttpResponse.BodyHandlers.ofString());
        } catch (java.net.ConnectException e) {
            throw new IllegalStateException("observer " + u.getAuthority() + ": connection refused");
        } catch (java.net.http.HttpTimeoutException e) {
            throw new IllegalStateException("observer " + u.getAuthority() + " did not answer within " + timeout.toMillis() + " ms");
        } catch (java.io.IOException e) {
            throw new IllegalStateException("observer " + u.getAuthority() + ": " + Main.describe(e));
        }
        if (resp.statusCode() != 200) {
            throw new IllegalStateException("observer " + u + " answered " + resp.statusCode());
        }
        com.fasterxml.jackson.databind.JsonNode n;
        try {
            n = dev.levee.runtime.Json.MAPPER.readTree(resp.body());
        } catch (java.io.IOException e) {
            throw new IllegalStateException("observer " + u + " sent no JSON list of limiters");
        }
        List<LeveeClient.Member> members = new ArrayList<>();
        for (var m : n.path("limiters")) {
            members.add(new LeveeClient.Member(m.path("id").asText(), m.path("address").asText(null)));
        }
        Integer factor = n.has("factor") ? n.get("factor").asInt() : null;
        String note = n.path("ready").asBoolean(true) ? null
                : "the observer marks its list not ready (just started, or lost etcd): clients keep their last list";
        return new Membership(members, "observer " + u.getAuthority() + " (revision " + n.path("revision").asLong() + ")",
                factor, note);
    }

    private Membership fromEtcd(io.etcd.jetcd.Client client, String prefix, int factor) {
        try (dev.levee.etcd.EtcdMembership m = dev.levee.etcd.EtcdMembership.start(client, prefix, () -> factor,
                dev.levee.runtime.SystemTicker.INSTANCE)) {
            var view = m.view();
            List<LeveeClient.Member> members = new ArrayList<>();
            for (var member : view.limiters()) {
                members.add(new LeveeClient.Member(member.id(), member.address()));
            }
            return new Membership(members, "etcd " + prefix + QuotaLayout.LIMITERS + " (revision " + view.revision() + ")",
                    view.factor(), null);
        }
    }
}
