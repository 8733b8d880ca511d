package dev.levee.cli;

import dev.levee.core.ByteUnits;
import dev.levee.etcd.EtcdShareStore;
import dev.levee.governor.Direction;
import dev.levee.lease.Claim;
import dev.levee.lease.GatewayEntry;
import dev.levee.lease.Resource;
import dev.levee.lease.ShareStore;
import dev.levee.lease.SiteBudget;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code levee bandwidth}: reads and edits the site-wide bandwidth budgets that gateways share
 * through etcd leases, and shows the site's shares (docs/design.md §10, docs/site-bandwidth.md). Every
 * write is validated before it reaches etcd.
 */
@Command(name = "bandwidth", mixinStandardHelpOptions = true,
        description = "Read and edit the site-wide bandwidth budgets in etcd, and show the gateways' shares"
                + " (endpoints: --etcd or LEVEE_ETCD_ENDPOINTS). See docs/site-bandwidth.md.",
        subcommands = {BandwidthCommand.Get.class, BandwidthCommand.Set.class, BandwidthCommand.Import.class,
                BandwidthCommand.Delete.class, BandwidthCommand.Status.class})
final class BandwidthCommand {

    private static final long TIMEOUT_S = 10;

    /** etcd options, inherited by the subcommands (either position works). */
    @picocli.CommandLine.Mixin
    EtcdOptions etcd = new EtcdOptions();

    static String budgetKey(String prefix) {
        return EtcdShareStore.budgetKey(prefix);
    }

    static String guardKey(String prefix) {
        return dev.levee.etcd.Etcd.normalisePrefix(prefix) + "bandwidth/guard";
    }

    static ShareStore.View view(Client c, String prefix) throws Exception {
        return new EtcdShareStore(c, prefix).read().toCompletableFuture().get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    /** Validates {@code budget} for the live gateways and writes it; returns the exit code. */
    static int write(Client c, String prefix, SiteBudget budget, String where, int maxValueBytes) throws Exception {
        write(c, prefix, budget, where, -1, maxValueBytes);
        return 0;
    }

    /**
     * Writes {@code budget}, when {@code expectedModRevision} ≥ 0 only if the budget key was not changed since that
     * revision (0: it did not exist): a compare-and-swap in one etcd transaction.
     *
     * @return whether it was written (false: another writer changed the key first)
     */
    static boolean write(Client c, String prefix, SiteBudget budget, String where, long expectedModRevision,
                         int maxValueBytes) throws Exception {
        int size = budget.toYaml().getBytes(StandardCharsets.UTF_8).length;
        if (size > maxValueBytes) { // every gateway reads the whole value every round
            throw new IllegalArgumentException(where + ": the budget document is " + size + " bytes, over the"
                    + " largest value of --etcd-max-value-size (" + maxValueBytes + " bytes): nothing written");
        }
        ShareStore.View v = view(c, prefix);
        java.util.Set<String> ids = new HashSet<>();
        v.entries().forEach(e -> ids.add(e.gatewayId()));
        List<String> problems = budget.checkGateways(where, Math.max(1, ids.size()));
        if (!problems.isEmpty()) {
            throw new SiteBudget.InvalidBudgetException(problems);
        }
        String key = budgetKey(prefix);
        // the guard moves with the budget: a raise computed under the old budget then conflicts
        io.etcd.jetcd.kv.TxnResponse done = (expectedModRevision < 0 ? c.getKVClient().txn()
                : c.getKVClient().txn().If(new io.etcd.jetcd.op.Cmp(bytes(key), io.etcd.jetcd.op.Cmp.Op.EQUAL,
                        io.etcd.jetcd.op.CmpTarget.modRevision(expectedModRevision))))
                .Then(io.etcd.jetcd.op.Op.put(bytes(key), bytes(budget.toYaml()), io.etcd.jetcd.options.PutOption.DEFAULT),
                        io.etcd.jetcd.op.Op.put(bytes(guardKey(prefix)), bytes("budget"), io.etcd.jetcd.options.PutOption.DEFAULT))
                .commit().get(TIMEOUT_S, TimeUnit.SECONDS);
        if (!done.isSucceeded()) {
            return false;
        }
        System.out.println("wrote " + key + ": download " + ByteUnits.formatRate(budget.download()) + ", upload "
                + ByteUnits.formatRate(budget.upload()) + (budget.principals().isEmpty() ? ""
                : ", " + budget.principals().size() + " principal override(s)"));
        return true;
    }

    private static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    /** Prints the budget document. */
    @Command(name = "get", mixinStandardHelpOptions = true, description = "Print the site budget document.")
    static final class Get extends QuotaCommand.EtcdCall {
        @Override
        int run(Client c, String prefix) throws Exception {
            ShareStore.View v = view(c, prefix);
            if (v.budgetText() == null) {
                System.err.println("no site bandwidth budget at " + budgetKey(prefix)
                        + " (set one with 'levee bandwidth set --download RATE')");
                return 1;
            }
            String t = v.budgetText();
            System.out.print(t.endsWith("\n") ? t : t + "\n");
            return 0;
        }
    }

    /** Changes fields of the budget. */
    @Command(name = "set", mixinStandardHelpOptions = true,
            description = "Change fields of the site budget (the others keep their values); rates are bytes/s with"
                    + " units, 0 = none.")
    static final class Set extends QuotaCommand.EtcdCall {
        @Option(names = "--download", paramLabel = "RATE", description = "site budget of all downloads")
        String download;
        @Option(names = "--upload", paramLabel = "RATE", description = "site budget of all uploads")
        String upload;
        @Option(names = "--principal-download", paramLabel = "RATE",
                description = "every principal's site-wide download ceiling, unless overridden")
        String principalDownload;
        @Option(names = "--principal-upload", paramLabel = "RATE",
                description = "every principal's site-wide upload ceiling, unless overridden")
        String principalUpload;
        @Option(names = "--principal", paramLabel = "ID:DIRECTION=RATE",
                description = "one principal's site-wide ceiling, e.g. svc-backup:download=50MiB/s; RATE 'default'"
                        + " removes the override")
        List<String> overrides = new ArrayList<>();

        /** One {@code --principal ID:DIRECTION=RATE}: {@code rate} null for {@code default}. */
        private record PrincipalCeiling(String id, boolean download, Long rate) {
        }

        /** The {@code --principal} values, parsed by {@link #validate} before etcd is contacted. */
        private final List<PrincipalCeiling> parsed = new ArrayList<>();

        @Override
        void validate() {
            if (download == null && upload == null && principalDownload == null && principalUpload == null
                    && overrides.isEmpty()) {
                throw new UsageException("nothing to set: give --download, --upload, --principal-download,"
                        + " --principal-upload or --principal");
            }
            // a rate that cannot be read is named by its option before etcd is contacted
            for (String[] f : new String[][] {{"--download", download}, {"--upload", upload},
                    {"--principal-download", principalDownload}, {"--principal-upload", principalUpload}}) {
                if (f[1] != null) {
                    rate(f[0], f[1]);
                }
            }
            parsed.clear();
            for (String o : overrides) {
                int colon = o.lastIndexOf(':', o.indexOf('=') < 0 ? o.length() : o.indexOf('='));
                int eq = o.indexOf('=');
                if (colon <= 0 || eq < colon) {
                    throw new UsageException("--principal '" + o + "': expected ID:DIRECTION=RATE, e.g."
                            + " svc-backup:download=50MiB/s");
                }
                String id = o.substring(0, colon);
                String dir = o.substring(colon + 1, eq).strip().toLowerCase(Locale.ROOT);
                String rate = o.substring(eq + 1).strip();
                if (!dir.equals("download") && !dir.equals("upload")) {
                    throw new UsageException("--principal '" + o + "': direction is download or upload");
                }
                parsed.add(new PrincipalCeiling(id, dir.equals("download"),
                        rate.equals("default") ? null : rate("--principal " + id + ":" + dir, rate)));
            }
        }

        /** Most attempts when other writers keep changing the budget between the read and the write: 10. */
        static final int ATTEMPTS = 10;

        /**
         * Reads the budget, changes the fields given and writes it back only if nobody changed it meanwhile (etcd's
         * mod revision compared in the write's transaction), reading again otherwise: two {@code bandwidth set} at once
         * both take effect (until 12-02 the later write silently undid the earlier one's fields; found by breaking it).
         */
        @Override
        int run(Client c, String prefix) throws Exception {
            String key = budgetKey(prefix);
            boolean warned = false;
            for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
                var got = c.getKVClient().get(bytes(key)).get(TIMEOUT_S, TimeUnit.SECONDS);
                long modRevision = got.getKvs().isEmpty() ? 0 : got.getKvs().get(0).getModRevision();
                String text = got.getKvs().isEmpty() ? null : got.getKvs().get(0).getValue().toString(StandardCharsets.UTF_8);
                SiteBudget b;
                try {
                    b = text == null ? SiteBudget.NONE : SiteBudget.parse("etcd key " + key, text);
                } catch (SiteBudget.InvalidBudgetException e) {
                    if (!warned) {
                        System.err.println("the stored budget is invalid (gateways keep their last good one); fields"
                                + " not given now are set to 0:\n" + e.getMessage());
                        warned = true;
                    }
                    b = SiteBudget.NONE;
                }
                if (write(c, prefix, next(b), "the new budget", modRevision, etcd.maxValueBytes)) {
                    return 0;
                }
            }
            throw new IllegalStateException("the budget at " + key + " changed under each of " + ATTEMPTS + " attempts"
                    + " (other writers at work): nothing written; run the command again");
        }

        /** The budget {@code b} with the fields of this command line. */
        private SiteBudget next(SiteBudget b) throws Exception {
            Map<String, SiteBudget.Ceilings> ps = new TreeMap<>(b.principals());
            for (PrincipalCeiling o : parsed) {
                SiteBudget.Ceilings was = ps.getOrDefault(o.id(), new SiteBudget.Ceilings(null, null));
                SiteBudget.Ceilings now = o.download() ? new SiteBudget.Ceilings(o.rate(), was.upload())
                        : new SiteBudget.Ceilings(was.download(), o.rate());
                if (now.download() == null && now.upload() == null) {
                    ps.remove(o.id());
                } else {
                    ps.put(o.id(), now);
                }
            }
            // build the document and let the parser validate it as a gateway will
            Map<String, Object> doc = new TreeMap<>();
            doc.put("download", download != null ? download : Long.toString(b.download()));
            doc.put("upload", upload != null ? upload : Long.toString(b.upload()));
            Map<String, Object> p = new TreeMap<>();
            p.put("download", principalDownload != null ? principalDownload : Long.toString(b.principalDownload()));
            p.put("upload", principalUpload != null ? principalUpload : Long.toString(b.principalUpload()));
            doc.put("principal", p);
            Map<String, Object> po = new TreeMap<>();
            ps.forEach((id, ce) -> {
                Map<String, Object> one = new TreeMap<>();
                if (ce.download() != null) {
                    one.put("download", ce.download());
                }
                if (ce.upload() != null) {
                    one.put("upload", ce.upload());
                }
                po.put(id, one);
            });
            doc.put("principals", po);
            String json = new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(doc);
            return SiteBudget.parse("the new budget", json);
        }

        private static long rate(String what, String text) {
            try {
                return ByteUnits.parseRate(text);
            } catch (IllegalArgumentException e) {
                throw new UsageException(what + ": " + e.getMessage());
            }
        }
    }

    /** Replaces the budget with a file's. */
    @Command(name = "import", mixinStandardHelpOptions = true,
            description = "Replace the site budget with FILE's (YAML or JSON; see docs/site-bandwidth.md).")
    static final class Import extends QuotaCommand.EtcdCall {
        @Parameters(paramLabel = "FILE")
        Path file;

        @Override
        int run(Client c, String prefix) throws Exception {
            String text;
            try {
                text = Files.readString(file, StandardCharsets.UTF_8);
            } catch (java.io.IOException e) {
                throw new IllegalArgumentException(Main.unreadable(file, e));
            }
            return write(c, prefix, SiteBudget.parse(file.toString(), text), file.toString(), etcd.maxValueBytes);
        }
    }

    /** Deletes the budget. */
    @Command(name = "delete", mixinStandardHelpOptions = true,
            description = "Delete the site budget: gateways then shape with their own ceilings only.")
    static final class Delete extends QuotaCommand.EtcdCall {
        @Override
        int run(Client c, String prefix) throws Exception {
            String key = budgetKey(prefix);
            long n = c.getKVClient().delete(bytes(key)).get(TIMEOUT_S, TimeUnit.SECONDS).getDeleted();
            System.out.println(n == 0 ? "no site budget at " + key : "deleted " + key);
            return 0;
        }
    }

    /** Prints the site view. */
    @Command(name = "status", mixinStandardHelpOptions = true,
            description = "Print the site view from etcd: budgets, each gateway's shares and demands, sum vs budget.")
    static final class Status extends QuotaCommand.EtcdCall {
        @Override
        int run(Client c, String prefix) throws Exception {
            ShareStore.View v = view(c, prefix);
            SiteBudget b;
            boolean invalid = false;
            try {
                b = v.budgetText() == null ? SiteBudget.NONE : SiteBudget.parse("etcd key " + budgetKey(prefix), v.budgetText());
            } catch (SiteBudget.InvalidBudgetException e) {
                // not "off": the gateways enforce the last good budget they read, which etcd no longer holds
                System.out.println("budget: INVALID — the gateways keep enforcing the last good budget they read (not"
                        + " shown: etcd holds only the invalid one); write a good one with levee bandwidth set|import\n"
                        + e.getMessage());
                b = SiteBudget.NONE;
                invalid = true;
            }
            if (!invalid) {
                System.out.println("budget: download " + ByteUnits.formatRate(b.download()) + ", upload "
                        + ByteUnits.formatRate(b.upload()) + (v.budgetText() == null ? " (no budget document)" : ""));
            }
            System.out.println("gateways: " + v.entries().size() + " entr" + (v.entries().size() == 1 ? "y" : "ies")
                    + " under " + EtcdShareStore.gatewaysPrefix(prefix) + " (each held by its gateway's lease)");
            java.util.Set<Resource> resources = new TreeSet<>();
            v.entries().forEach(e -> resources.addAll(e.claims().keySet()));
            for (Direction d : Direction.values()) {
                if (b.budget(d) > 0) {
                    resources.add(Resource.of(d));
                }
            }
            System.out.printf(Locale.ROOT, "%-24s %-28s %14s %14s%n", "resource", "gateway/incarnation", "share", "demand");
            for (Resource r : resources) {
                long sum = 0;
                for (GatewayEntry e : v.entries()) {
                    Claim cl = e.claims().get(r);
                    if (cl == null) {
                        continue;
                    }
                    sum += cl.share();
                    System.out.printf(Locale.ROOT, "%-24s %-28s %14s %14s%n", r, e.gatewayId() + "/"
                                    + e.incarnation().substring(0, Math.min(8, e.incarnation().length())),
                            ByteUnits.formatRate(cl.share()), ByteUnits.formatRate(cl.demand()));
                }
                long budget = b.budget(r);
                System.out.printf(Locale.ROOT, "%-24s %-28s %14s %14s%n", r, "Σ (budget " + (invalid ? "?"
                                : ByteUnits.formatRate(budget)) + ")",
                        ByteUnits.formatRate(sum), budget > 0 && sum > budget ? "OVER" : "");
            }
            return 0;
        }
    }
}
