package dev.levee.cli;

import dev.levee.config.QuotaConfigLoader;
import dev.levee.config.QuotaLayout;
import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaConfigException;
import dev.levee.quota.ResourceQuotas;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
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
 * {@code levee quota}: reads and edits the quotas in etcd (SPEC.md §4). Every write is validated
 * before it reaches etcd; the whole configuration that would result is validated too.
 */
@Command(name = "quota", mixinStandardHelpOptions = true,
        description = "Read and edit quotas in etcd (endpoints: --etcd or LEVEE_ETCD_ENDPOINTS).",
        subcommands = {QuotaCommand.Get.class, QuotaCommand.Set.class, QuotaCommand.Delete.class,
                QuotaCommand.Import.class, QuotaCommand.Export.class, QuotaCommand.Validate.class,
                QuotaCommand.Factor.class, QuotaCommand.Calc.class})
final class QuotaCommand {

    private static final long TIMEOUT_S = 10;

    /** Reads every quota value under the prefix: relative key → YAML. */
    static Map<String, String> read(Client c, String prefix) throws Exception {
        String p = dev.levee.etcd.Etcd.normalisePrefix(prefix);
        Map<String, String> out = new TreeMap<>();
        for (KeyValue kv : c.getKVClient().get(bytes(p), GetOption.builder().isPrefix(true).build())
                .get(TIMEOUT_S, TimeUnit.SECONDS).getKvs()) {
            String rel = kv.getKey().toString(StandardCharsets.UTF_8).substring(p.length());
            if (QuotaLayout.isQuotaKey(rel)) {
                out.put(rel, kv.getValue().toString(StandardCharsets.UTF_8));
            }
        }
        return out;
    }

    static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    static String readInput(String fileOrDash) throws IOException {
        if (fileOrDash.equals("-")) {
            return new String(System.in.readAllBytes(), StandardCharsets.UTF_8);
        }
        return Files.readString(Path.of(fileOrDash), StandardCharsets.UTF_8);
    }

    /** Shared connection handling: opens the client, runs, closes. */
    abstract static class EtcdCall implements Callable<Integer> {
        @Mixin
        EtcdOptions etcd = new EtcdOptions();

        @Override
        public Integer call() throws Exception {
            if (!etcd.enabled()) {
                throw new IllegalArgumentException("no etcd endpoint: pass --etcd http://HOST:PORT or set LEVEE_ETCD_ENDPOINTS");
            }
            try (Client c = etcd.client()) {
                return run(c, dev.levee.etcd.Etcd.normalisePrefix(etcd.prefix));
            } catch (java.util.concurrent.TimeoutException e) {
                throw new IllegalStateException("etcd at " + etcd.endpoints + " did not answer within " + TIMEOUT_S + " s");
            } catch (java.util.concurrent.ExecutionException e) {
                throw new IllegalStateException("etcd at " + etcd.endpoints + ": " + e.getCause().getMessage());
            }
        }

        abstract int run(Client c, String prefix) throws Exception;
    }

    /** Prints one bucket's quotas, or the whole configuration. */
    @Command(name = "get", mixinStandardHelpOptions = true, description = "Print a bucket's quotas, or every quota value.")
    static final class Get extends EtcdCall {
        @Parameters(arity = "0..1", paramLabel = "BUCKET")
        String bucket;

        @Override
        int run(Client c, String prefix) throws Exception {
            Map<String, String> values = read(c, prefix);
            if (bucket != null) {
                String v = values.get(QuotaLayout.RESOURCES + bucket);
                if (v == null) {
                    System.err.println("no quotas for bucket '" + bucket + "' (it falls to methods_default/default)");
                    return 1;
                }
                System.out.print(v.endsWith("\n") ? v : v + "\n");
                return 0;
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

        @Override
        int run(Client c, String prefix) throws Exception {
            String yaml = readInput(file);
            String key = prefix + QuotaLayout.RESOURCES + bucket;
            ResourceQuotas r = QuotaConfigLoader.parseResource(bucket, yaml, key);
            Map<String, String> values = read(c, prefix);
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

        @Override
        int run(Client c, String prefix) throws Exception {
            String key = prefix + QuotaLayout.RESOURCES + bucket;
            long n = c.getKVClient().delete(bytes(key)).get(TIMEOUT_S, TimeUnit.SECONDS).getDeleted();
            System.out.println(n == 0 ? "no quotas for bucket '" + bucket + "'" : "deleted " + key);
            return n == 0 ? 1 : 0;
        }
    }

    /** Replaces every quota value with those of a single-file form, in one transaction. */
    @Command(name = "import", mixinStandardHelpOptions = true,
            description = "Replace all quotas with a single-file form (one etcd transaction).")
    static final class Import extends EtcdCall {
        @Parameters(paramLabel = "FILE|-")
        String file;

        @Override
        int run(Client c, String prefix) throws Exception {
            QuotaConfig cfg = QuotaConfigLoader.parse(readInput(file), file);
            Map<String, String> next = QuotaLayout.toValues(cfg);
            Map<String, String> now = read(c, prefix);
            List<Op> ops = new ArrayList<>();
            for (String k : now.keySet()) {
                if (!next.containsKey(k)) {
                    ops.add(Op.delete(bytes(prefix + k), DeleteOption.DEFAULT));
                }
            }
            next.forEach((k, v) -> ops.add(Op.put(bytes(prefix + k), bytes(v), PutOption.DEFAULT)));
            long rev = c.getKVClient().txn().Then(ops.toArray(Op[]::new)).commit()
                    .get(TIMEOUT_S, TimeUnit.SECONDS).getHeader().getRevision();
            System.out.println("imported " + next.size() + " keys (" + cfg.resources().size() + " buckets) at revision " + rev);
            return 0;
        }
    }

    /** Prints etcd's quotas in the single-file form. */
    @Command(name = "export", mixinStandardHelpOptions = true, description = "Print all quotas in the single-file form.")
    static final class Export extends EtcdCall {
        @Override
        int run(Client c, String prefix) throws Exception {
            System.out.print(QuotaConfigLoader.toYaml(QuotaLayout.fromValues(prefix, read(c, prefix))));
            return 0;
        }
    }

    /** Sets the group factor DF. */
    @Command(name = "factor", mixinStandardHelpOptions = true, description = "Set the group factor DF (integer >= 1).")
    static final class Factor extends EtcdCall {
        @Parameters(paramLabel = "DF")
        String factor;

        @Override
        int run(Client c, String prefix) throws Exception {
            int df = QuotaConfigLoader.parseFactor(factor, "factor");
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

    /** Prints rate = RPS × 1.1 and burst = rate / DF × 0.1 (SPEC.md §4). */
    @Command(name = "calc", mixinStandardHelpOptions = true,
            description = "Compute a quota from the desired RPS: rate = RPS x 1.1, burst = rate / DF x 0.1.")
    static final class Calc implements Callable<Integer> {
        @Option(names = "--rps", required = true, description = "desired requests per second, > 0")
        double rps;

        @Option(names = "--factor", description = "group factor DF (default: read from etcd)")
        Integer factor;

        @Mixin
        EtcdOptions etcd = new EtcdOptions();

        @Override
        public Integer call() throws Exception {
            if (!(rps > 0) || rps > 1e12) {
                throw new IllegalArgumentException("--rps must be a number in (0, 1e12], got " + rps);
            }
            int df;
            if (factor != null) {
                if (factor < 1) {
                    throw new IllegalArgumentException("--factor must be >= 1, got " + factor);
                }
                df = factor;
            } else if (etcd.enabled()) {
                try (Client c = etcd.client()) {
                    String p = dev.levee.etcd.Etcd.normalisePrefix(etcd.prefix);
                    var kvs = c.getKVClient().get(bytes(p + QuotaLayout.FACTOR)).get(TIMEOUT_S, TimeUnit.SECONDS).getKvs();
                    df = kvs.isEmpty() ? 1 : QuotaConfigLoader.parseFactor(
                            kvs.get(0).getValue().toString(StandardCharsets.UTF_8), p + QuotaLayout.FACTOR);
                }
            } else {
                throw new IllegalArgumentException("give --factor DF, or --etcd / LEVEE_ETCD_ENDPOINTS to read it");
            }
            double rate = rps * 1.1;
            double exactBurst = rate / df * 0.1;
            long burst = Math.max(1, Math.round(exactBurst));
            System.out.printf(Locale.ROOT, "# rps %s, factor %d: rate = %s x 1.1, burst = rate / %d x 0.1 = %.2f%n",
                    strip(rps), df, strip(rps), df, exactBurst);
            String shown = new java.math.BigDecimal(rate).round(new java.math.MathContext(9)).stripTrailingZeros()
                    .toPlainString();
            System.out.printf(Locale.ROOT, "rate: %s%nburst: %d%n", shown, burst);
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
