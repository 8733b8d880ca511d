package dev.levee.cli;

import dev.levee.config.QuotaConfigLoader;
import dev.levee.config.QuotaLayout;
import dev.levee.etcd.EtcdSnapshot;
import dev.levee.quota.ConfigProblem;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaConfigException;
import dev.levee.quota.ResourceQuotas;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.PutOption;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code levee quota}: reads and edits the quotas in etcd (docs/design.md §4). Every write is validated
 * before it reaches etcd; the whole configuration that would result is validated too.
 */
@Command(name = "quota", mixinStandardHelpOptions = true,
        description = "Read and edit quotas in etcd (endpoints: --etcd or LEVEE_ETCD_ENDPOINTS).",
        subcommands = {QuotaCommand.Get.class, QuotaCommand.Set.class, QuotaCommand.Delete.class,
                QuotaCommand.Import.class, QuotaCommand.Export.class, QuotaCommand.Validate.class,
                QuotaCommand.Factor.class, QuotaCommand.Calc.class, QuotaExplainCommand.class})
final class QuotaCommand {

    /** The etcd options, given before or after the subcommand (inherited by every subcommand). */
    @Mixin
    EtcdOptions etcd = new EtcdOptions();

    private static final long TIMEOUT_S = 10;

    /** Keys per import transaction by default: below etcd's {@code --max-txn-ops} default of 128. */
    static final int DEFAULT_TXN_OPS = 100;

    /** Reads every key under the prefix, in pages at one revision (any number of buckets). */
    static EtcdSnapshot snapshot(Client c, String prefix, int maxValueBytes) throws Exception {
        return EtcdSnapshot.read(c, dev.levee.etcd.Etcd.normalisePrefix(prefix), maxValueBytes,
                EtcdSnapshot.DEFAULT_PAGE_KEYS, TimeUnit.SECONDS.toMillis(TIMEOUT_S * 6), dev.levee.runtime.SystemTicker.INSTANCE);
    }

    /**
     * Reads every quota value under the prefix: relative key → YAML.
     *
     * @throws QuotaConfigException naming each value above {@code maxValueBytes}
     */
    static Map<String, String> read(Client c, String prefix, int maxValueBytes) throws Exception {
        String p = dev.levee.etcd.Etcd.normalisePrefix(prefix);
        EtcdSnapshot snap = snapshot(c, p, maxValueBytes);
        List<ConfigProblem> big = new ArrayList<>();
        snap.oversized().forEach((k, size) -> {
            if (QuotaLayout.isQuotaKey(k)) {
                big.add(dev.levee.etcd.Etcd.oversized(p + k, size, maxValueBytes));
            }
        });
        snap.tooLarge().forEach(k -> big.add(new ConfigProblem(p + k, "", null,
                "value exceeds the etcd client's message limit (--etcd-max-message-size)")));
        if (!big.isEmpty()) {
            throw new QuotaConfigException(big);
        }
        Map<String, String> out = new TreeMap<>();
        snap.values().forEach((k, v) -> {
            if (QuotaLayout.isQuotaKey(k)) {
                out.put(k, v);
            }
        });
        return out;
    }

    /** Refuses a value above the limit, naming its key and both sizes. */
    static void checkSize(String fullKey, String value, int maxValueBytes) {
        int size = value.getBytes(StandardCharsets.UTF_8).length;
        if (size > maxValueBytes) {
            throw new QuotaConfigException(List.of(dev.levee.etcd.Etcd.oversized(fullKey, size, maxValueBytes)));
        }
    }

    /** Refuses to write while {@code levee quota import} runs (its marker key exists). */
    static void refuseDuringImport(Client c, String prefix) throws Exception {
        var kvs = c.getKVClient().get(bytes(prefix + QuotaLayout.IMPORT)).get(TIMEOUT_S, TimeUnit.SECONDS).getKvs();
        if (!kvs.isEmpty()) {
            throw new IllegalStateException("an import is in progress (" + prefix + QuotaLayout.IMPORT + " = "
                    + kvs.get(0).getValue().toString(StandardCharsets.UTF_8) + "); try again when it has ended");
        }
    }

    static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    /**
     * Reads a file, or standard input for {@code -}, as UTF-8 text.
     *
     * @throws IllegalArgumentException naming the file when it cannot be read or is not UTF-8 (standard input was
     *         decoded leniently before: a binary input became U+FFFD characters without a word)
     */
    static String readInput(String fileOrDash) throws IOException {
        if (fileOrDash.equals("-")) {
            try {
                return StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(System.in.readAllBytes()))
                        .toString();
            } catch (java.nio.charset.CharacterCodingException e) {
                throw new IllegalArgumentException("standard input is not UTF-8 text (a binary file?)");
            }
        }
        try {
            return Files.readString(Path.of(fileOrDash), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalArgumentException(Main.unreadable(Path.of(fileOrDash), e));
        }
    }

    /** Shared connection handling: opens the client, runs, closes. */
    abstract static class EtcdCall implements Callable<Integer> {
        /** {@code levee quota} or {@code levee bandwidth}, whose etcd options are inherited. */
        @picocli.CommandLine.ParentCommand
        Object parent;

        /** The parent's etcd options (set before {@link #run}); a subcommand built alone gets its own. */
        EtcdOptions etcd = new EtcdOptions();

        @Override
        public Integer call() throws Exception {
            if (parent instanceof QuotaCommand q) {
                etcd = q.etcd;
            } else if (parent instanceof BandwidthCommand b) {
                etcd = b.etcd;
            }
            if (!etcd.enabled()) {
                throw new UsageException("no etcd endpoint: pass --etcd http://HOST:PORT or set LEVEE_ETCD_ENDPOINTS");
            }
            validate();
            try (Client c = etcd.client()) { // refuses bad client settings; connects only when asked
                etcd.probe();
                return run(c, dev.levee.etcd.Etcd.normalisePrefix(etcd.prefix));
            } catch (java.util.concurrent.TimeoutException e) {
                throw new IllegalStateException("etcd at " + etcd.endpoints + " did not answer within " + TIMEOUT_S + " s");
            } catch (java.util.concurrent.ExecutionException e) {
                throw new IllegalStateException("etcd at " + etcd.endpoints + ": " + e.getCause().getMessage());
            }
        }

        abstract int run(Client c, String prefix) throws Exception;

        /** Refuses bad option values before etcd is contacted. */
        void validate() {
        }
    }

    /** Prints one bucket's quotas, or the whole configuration. */
    @Command(name = "get", mixinStandardHelpOptions = true, description = "Print a bucket's quotas, or every quota value.")
    static final class Get extends EtcdCall {
        @Parameters(arity = "0..1", paramLabel = "BUCKET")
        String bucket;

        @Override
        int run(Client c, String prefix) throws Exception {
            if (bucket != null) {
                // one bucket: another key's oversized value does not hide this one
                EtcdSnapshot snap = snapshot(c, prefix, etcd.maxValueBytes);
                String rel = QuotaLayout.RESOURCES + bucket;
                if (snap.oversized().containsKey(rel)) {
                    throw new QuotaConfigException(List.of(dev.levee.etcd.Etcd.oversized(prefix + rel,
                            snap.oversized().get(rel), etcd.maxValueBytes)));
                }
                String v = snap.values().get(rel);
                if (v == null) {
                    System.err.println("no quotas for bucket '" + bucket + "' (it falls to methods_default/default)");
                    return 1;
                }
                System.out.print(v.endsWith("\n") ? v : v + "\n");
                return 0;
            }
            Map<String, String> values = read(c, prefix, etcd.maxValueBytes);
            if (values.isEmpty()) {
                System.err.println("no quotas under " + prefix + " (import some with 'levee quota import FILE')");
                return 1;
            }
            values.forEach((k, v) -> System.out.println("# " + prefix + k + "\n" + (v.endsWith("\n") ? v : v + "\n")));
            return 0;
        }
    }

    /** Writes one bucket's quotas after validating them. */
    @Command(name = "set", mixinStandardHelpOptions = true,
            description = "Set a bucket's quotas from FILE (or - for standard input), YAML {quota, prefixes}.")
    static final class Set extends EtcdCall {
        @Parameters(index = "0", paramLabel = "BUCKET")
        String bucket;
        @Parameters(index = "1", paramLabel = "FILE|-")
        String file;

        @Option(names = "--allow-legacy-bucket-name", description = "accept a bucket name that breaks S3's naming rules"
                + " (uppercase, '_', up to 255 characters: Ceph RGW's legacy names), as the quota format does")
        boolean allowLegacy;

        @picocli.CommandLine.Spec
        picocli.CommandLine.Model.CommandSpec spec;

        /** The bucket's quotas, read and validated before etcd is contacted. */
        private ResourceQuotas parsed;

        @Override
        public Integer call() throws Exception {
            BucketNames.check(spec.commandLine(), bucket, allowLegacy);
            parsed = parse(bucket, readInput(file), file);
            return super.call();
        }

        /** Top-level fields of the single-file form that a bucket's YAML never has. */
        static final java.util.Set<String> SINGLE_FILE_FIELDS = java.util.Set.of("resources", "factor", "default",
                "methods_default", "mode");

        /**
         * Reads one bucket's quotas; errors name the file ({@code -}: standard input). A whole quota file (the
         * single-file form, with {@code resources:} and the like) is refused with the command that takes it,
         * {@code levee quota import} (issue 26 item 9).
         *
         * @throws QuotaConfigException naming the file and every problem
         */
        static ResourceQuotas parse(String bucket, String yaml, String file) {
            String source = file.equals("-") ? "standard input" : file;
            try {
                return QuotaConfigLoader.parseResource(bucket, yaml, source);
            } catch (QuotaConfigException e) {
                List<String> whole = e.problems().stream().map(ConfigProblem::path)
                        .filter(path -> path != null && SINGLE_FILE_FIELDS.contains(path)).distinct().sorted().toList();
                if (whole.isEmpty()) {
                    throw e;
                }
                throw new IllegalArgumentException(source + " is a whole quota file (it has " + String.join(", ",
                        whole.stream().map(f -> f + ":").toList()) + "), not one bucket's quotas: load a whole file"
                        + " with 'levee quota import " + file + "' (it replaces every quota in etcd), or give 'quota set "
                        + bucket + "' the bucket's own YAML, the part under resources." + bucket + " (quota, prefixes,"
                        + " methods)");
            }
        }

        @Override
        int run(Client c, String prefix) throws Exception {
            String key = prefix + QuotaLayout.RESOURCES + bucket;
            ResourceQuotas r = parsed;
            checkSize(key, QuotaLayout.resourceYaml(r), etcd.maxValueBytes);
            refuseDuringImport(c, prefix);
            Map<String, String> values = read(c, prefix, etcd.maxValueBytes);
            values.put(QuotaLayout.RESOURCES + bucket, QuotaLayout.resourceYaml(r));
            QuotaLayout.fromValues(prefix, values); // the whole result must be valid
            long rev = c.getKVClient().put(bytes(key), bytes(QuotaLayout.resourceYaml(r)))
                    .get(TIMEOUT_S, TimeUnit.SECONDS).getHeader().getRevision();
            System.out.println("set " + key + " at revision " + rev);
            return 0;
        }
    }

    /** Removes one bucket's quotas (it then falls to methods_default/default). */
    @Command(name = "delete", mixinStandardHelpOptions = true, description = "Delete a bucket's quotas.")
    static final class Delete extends EtcdCall {
        @Parameters(paramLabel = "BUCKET")
        String bucket;

        @Option(names = "--allow-legacy-bucket-name", description = "accept a bucket name that breaks S3's naming rules"
                + " (to delete the quotas of a legacy name)")
        boolean allowLegacy;

        @picocli.CommandLine.Spec
        picocli.CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            BucketNames.check(spec.commandLine(), bucket, allowLegacy);
            return super.call();
        }

        @Override
        int run(Client c, String prefix) throws Exception {
            String key = prefix + QuotaLayout.RESOURCES + bucket;
            refuseDuringImport(c, prefix);
            long n = c.getKVClient().delete(bytes(key)).get(TIMEOUT_S, TimeUnit.SECONDS).getDeleted();
            System.out.println(n == 0 ? "no quotas for bucket '" + bucket + "'" : "deleted " + key);
            return n == 0 ? 1 : 0;
        }
    }

    /**
     * Replaces every quota value with those of a single-file form. Up to {@code --txn-ops} changes go in
     * one transaction; more are written in transactions of {@code --txn-ops} while the import marker
     * {@code <prefix>import} exists (under a lease kept alive by this command), and quota sources hold
     * every update until the marker is deleted, so limiters go from the old configuration to the new
     * one at once (docs/decisions.md, "Import").
     */
    @Command(name = "import", mixinStandardHelpOptions = true,
            description = "Replace all quotas with a single-file form; limiters apply it whole, at once.")
    static final class Import extends EtcdCall {
        @Parameters(paramLabel = "FILE|-")
        String file;

        @Option(names = "--txn-ops", defaultValue = "100",
                description = "most keys per etcd transaction, below etcd's --max-txn-ops (default: ${DEFAULT-VALUE})")
        int txnOps;

        @Option(names = "--lease-ttl", paramLabel = "DURATION", converter = Converters.DurationConverter.class, defaultValue = "10s",
                description = "TTL of the import marker's lease: how long limiters hold updates after this command"
                        + " dies in the middle of an import (default: ${DEFAULT-VALUE})")
        java.time.Duration leaseTtl;

        @Override
        void validate() {
            if (txnOps < 1) {
                throw new UsageException("--txn-ops must be >= 1, got " + txnOps);
            }
        }

        @Override
        int run(Client c, String prefix) throws Exception {
            QuotaConfig cfg = QuotaConfigLoader.parse(readInput(file), file);
            Map<String, String> next = QuotaLayout.toValues(cfg);
            List<ConfigProblem> big = new ArrayList<>();
            next.forEach((k, v) -> {
                int size = v.getBytes(StandardCharsets.UTF_8).length;
                if (size > etcd.maxValueBytes) {
                    big.add(dev.levee.etcd.Etcd.oversized(prefix + k, size, etcd.maxValueBytes));
                }
            });
            if (!big.isEmpty()) {
                throw new QuotaConfigException(big);
            }
            EtcdSnapshot now = snapshot(c, prefix, Integer.MAX_VALUE);
            if (now.values().containsKey(QuotaLayout.IMPORT)) {
                throw new IllegalStateException("another import is in progress (" + prefix + QuotaLayout.IMPORT + " = "
                        + now.values().get(QuotaLayout.IMPORT) + "); try again when it has ended");
            }
            List<Op> ops = new ArrayList<>();
            java.util.Set<String> present = new java.util.TreeSet<>(now.values().keySet());
            present.addAll(now.tooLarge());
            for (String k : present) {
                if (QuotaLayout.isQuotaKey(k) && !next.containsKey(k)) {
                    ops.add(Op.delete(bytes(prefix + k), DeleteOption.DEFAULT));
                }
            }
            next.forEach((k, v) -> {
                if (!v.equals(now.values().get(k))) {
                    ops.add(Op.put(bytes(prefix + k), bytes(v), PutOption.DEFAULT));
                }
            });
            ByteSequence marker = bytes(prefix + QuotaLayout.IMPORT);
            Cmp noImport = new Cmp(marker, Cmp.Op.EQUAL, CmpTarget.version(0));
            long rev;
            int txns;
            if (ops.size() <= txnOps) {
                TxnResponse r = c.getKVClient().txn().If(noImport).Then(ops.toArray(Op[]::new)).commit()
                        .get(TIMEOUT_S, TimeUnit.SECONDS);
                if (!r.isSucceeded()) {
                    throw new IllegalStateException("another import started meanwhile (" + prefix + QuotaLayout.IMPORT
                            + " exists); nothing was written");
                }
                rev = r.getHeader().getRevision();
                txns = 1;
            } else {
                long[] result = chunked(c, prefix, marker, noImport, ops);
                rev = result[0];
                txns = (int) result[1];
            }
            System.out.println("imported " + next.size() + " keys (" + cfg.resources().size() + " buckets, " + ops.size()
                    + " changed) in " + txns + " transaction" + (txns == 1 ? "" : "s") + " at revision " + rev);
            return 0;
        }

        /** Writes the ops in chunks while the marker exists; returns {revision, transactions}. */
        @SuppressWarnings("try") // the keep-alive is held open for the writes, never read
        private long[] chunked(Client c, String prefix, ByteSequence marker, Cmp noImport, List<Op> ops) throws Exception {
            String id = java.util.UUID.randomUUID().toString();
            String value = "{\"id\": \"" + id + "\", \"started\": \"" + java.time.Instant.now() + "\", \"changes\": "
                    + ops.size() + "}";
            long lease = c.getLeaseClient().grant(Math.max(1, leaseTtl.toSeconds())).get(TIMEOUT_S, TimeUnit.SECONDS).getID();
            try (var keepAlive = c.getLeaseClient().keepAlive(lease, new io.grpc.stub.StreamObserver<>() {
                @Override
                public void onNext(io.etcd.jetcd.lease.LeaseKeepAliveResponse r) {
                }

                @Override
                public void onError(Throwable t) {
                }

                @Override
                public void onCompleted() {
                }
            })) {
                TxnResponse begin = c.getKVClient().txn().If(noImport)
                        .Then(Op.put(marker, bytes(value), PutOption.builder().withLeaseId(lease).build()))
                        .commit().get(TIMEOUT_S, TimeUnit.SECONDS);
                if (!begin.isSucceeded()) {
                    throw new IllegalStateException("another import started meanwhile (" + prefix + QuotaLayout.IMPORT
                            + " exists); nothing was written");
                }
                Cmp ours = new Cmp(marker, Cmp.Op.EQUAL, CmpTarget.value(bytes(value)));
                int txns = 1;
                int done = 0;
                try {
                    for (int from = 0; from < ops.size(); from += txnOps) {
                        List<Op> chunk = ops.subList(from, Math.min(ops.size(), from + txnOps));
                        TxnResponse r = c.getKVClient().txn().If(ours).Then(chunk.toArray(Op[]::new)).commit()
                                .get(TIMEOUT_S, TimeUnit.SECONDS);
                        if (!r.isSucceeded()) {
                            throw new IllegalStateException("the import marker's lease ended");
                        }
                        done += chunk.size();
                        txns++;
                    }
                    TxnResponse end = c.getKVClient().txn().If(ours).Then(Op.delete(marker, DeleteOption.DEFAULT))
                            .commit().get(TIMEOUT_S, TimeUnit.SECONDS);
                    if (!end.isSucceeded()) {
                        throw new IllegalStateException("the import marker's lease ended");
                    }
                    revoke(c, lease);
                    return new long[] {end.getHeader().getRevision(), txns + 1};
                } catch (Exception e) {
                    boolean removed = revoke(c, lease);
                    String why = e instanceof java.util.concurrent.ExecutionException && e.getCause() != null
                            ? e.getCause().getMessage() : e instanceof java.util.concurrent.TimeoutException
                            ? "etcd did not answer within " + TIMEOUT_S + " s" : e.getMessage();
                    throw incomplete(prefix, done, ops.size(), why, removed);
                }
            }
        }

        /** Revokes the marker's lease (deleting the marker); returns whether etcd confirmed it. */
        private static boolean revoke(Client c, long lease) {
            try {
                c.getLeaseClient().revoke(lease).get(TIMEOUT_S, TimeUnit.SECONDS);
                return true;
            } catch (Exception e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                return false;
            }
        }

        private IllegalStateException incomplete(String prefix, int done, int total, String why, boolean removed) {
            return new IllegalStateException("import incomplete (" + why + "): " + done + " of " + total
                    + " changes written. Limiters kept the configuration from before the import while " + prefix
                    + QuotaLayout.IMPORT + " existed; it " + (removed ? "is removed" : "goes when its lease ends (within "
                    + leaseTtl.toSeconds() + " s)") + ", and they then apply what etcd holds, a mix of old and new"
                    + " quotas: run the import again (it writes only what still differs)");
        }
    }

    /** Prints etcd's quotas in the single-file form. */
    @Command(name = "export", mixinStandardHelpOptions = true, description = "Print all quotas in the single-file form.")
    static final class Export extends EtcdCall {
        @Override
        int run(Client c, String prefix) throws Exception {
            System.out.print(QuotaConfigLoader.toYaml(QuotaLayout.fromValues(prefix, read(c, prefix, etcd.maxValueBytes))));
            return 0;
        }
    }

    /** Sets the group factor DF. */
    @Command(name = "factor", mixinStandardHelpOptions = true,
            description = "Set the group factor DF (integer >= 1); without DF, print the factor in force.")
    static final class Factor extends EtcdCall {
        @Parameters(paramLabel = "DF", arity = "0..1")
        String factor;

        @Override
        int run(Client c, String prefix) throws Exception {
            if (factor == null) {
                var kvs = c.getKVClient().get(bytes(prefix + QuotaLayout.FACTOR)).get(TIMEOUT_S, TimeUnit.SECONDS).getKvs();
                if (kvs.isEmpty()) {
                    System.out.println("factor 1 (" + prefix + QuotaLayout.FACTOR + " is not set: the default)");
                } else {
                    System.out.println("factor " + kvs.getFirst().getValue().toString(StandardCharsets.UTF_8).strip()
                            + " (" + prefix + QuotaLayout.FACTOR + " at revision " + kvs.getFirst().getModRevision() + ")");
                }
                return 0;
            }
            int df = QuotaConfigLoader.parseFactor(factor, "factor");
            refuseDuringImport(c, prefix);
            c.getKVClient().put(bytes(prefix + QuotaLayout.FACTOR), bytes(Integer.toString(df))).get(TIMEOUT_S, TimeUnit.SECONDS);
            System.out.println("factor set to " + df);
            return 0;
        }
    }

    /** Validates a single-file form offline (same as {@code levee config validate}). */
    @Command(name = "validate", mixinStandardHelpOptions = true, description = "Validate a quota file offline.")
    static final class Validate implements Callable<Integer> {
        @Parameters(paramLabel = "FILE")
        Path file;

        @Override
        public Integer call() {
            ConfigCommand.Validate v = new ConfigCommand.Validate();
            v.file = file;
            return v.call();
        }
    }

    /**
     * Prints rate = RPS × 1.1 and burst = rate / DF × 0.1 (docs/design.md §4), and, where that burst rounds below the
     * minimum that holds the rate over DF limiters, a comment line saying so and naming the minimum.
     */
    @Command(name = "calc", mixinStandardHelpOptions = true,
            description = "Compute a quota from the desired RPS: rate = RPS x 1.1, burst = rate / DF x 0.1.")
    static final class Calc implements Callable<Integer> {
        @Option(names = "--rps", required = true, description = "desired requests per second, > 0")
        double rps;

        @Option(names = "--factor", description = "group factor DF (default: read from etcd)")
        Integer factor;

        @picocli.CommandLine.ParentCommand
        QuotaCommand parent;

        EtcdOptions etcd = new EtcdOptions();

        @Override
        public Integer call() throws Exception {
            if (parent != null) {
                etcd = parent.etcd;
            }
            if (!(rps > 0) || rps > 1e12) {
                throw new UsageException("--rps must be a number in (0, 1e12], got " + rps);
            }
            int df;
            if (factor != null) {
                if (factor < 1) {
                    throw new UsageException("--factor must be >= 1, got " + factor);
                }
                df = factor;
            } else if (etcd.enabled()) {
                try (Client c = etcd.client()) {
                    etcd.probe();
                    String p = dev.levee.etcd.Etcd.normalisePrefix(etcd.prefix);
                    var kvs = c.getKVClient().get(bytes(p + QuotaLayout.FACTOR)).get(TIMEOUT_S, TimeUnit.SECONDS).getKvs();
                    df = kvs.isEmpty() ? 1 : QuotaConfigLoader.parseFactor(
                            kvs.get(0).getValue().toString(StandardCharsets.UTF_8), p + QuotaLayout.FACTOR);
                }
            } else {
                throw new UsageException("give --factor DF, or --etcd / LEVEE_ETCD_ENDPOINTS to read it");
            }
            double rate = rps * 1.1;
            double exactBurst = rate / df * 0.1;
            long burst = dev.levee.quota.BurstAdvice.formulaBurst(rate, df);
            System.out.printf(Locale.ROOT, "# rps %s, factor %d: rate = %s x 1.1, burst = rate / %d x 0.1 = %.2f%n",
                    strip(rps), df, strip(rps), df, exactBurst);
            String shown = new java.math.BigDecimal(rate).round(new java.math.MathContext(9)).stripTrailingZeros()
                    .toPlainString();
            System.out.printf(Locale.ROOT, "rate: %s%nburst: %d%n", shown, burst);
            // the formula's value is kept (docs/design.md §4); where it rounds to a burst that cannot hold the rate, say so
            // in the words config validate and the demo use (docs/decisions.md, "Bursts that hold the rate")
            if (burst < Integer.MAX_VALUE && !dev.levee.quota.BurstAdvice.holds(rate, (int) burst, df)) {
                System.out.println("# " + dev.levee.quota.BurstAdvice.sentence(rate, (int) burst, df));
            }
            return 0;
        }

        private static String strip(double d) {
            return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
        }
    }

    static String describe(QuotaConfigException e) {
        return String.join("\n  ", e.errors());
    }
}
