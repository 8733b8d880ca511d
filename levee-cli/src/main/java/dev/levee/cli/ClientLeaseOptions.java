package dev.levee.cli;

import dev.levee.client.RequestLeases;
import java.nio.file.Path;
import java.time.Duration;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The request-lease flags of {@code levee client} (issue 23 item 2; docs/quotas.md, "Request leases"), with the
 * quota source the client then reads — the limiter's flags for it, {@code --quotas} and the etcd options, read the
 * same way ({@link Quotas#source}).
 *
 * <p>{@code --leases} (the default) turns on the client's own quota resolution, hot-key detection
 * ({@link RequestLeases}) and the admission of a hot key's checks from leases of GCRA slots its limiters grant
 * (docs/design.md §12). A limiter grants only to a client that resolves the bucket with its own quotas (each ask
 * carries the client's {@code QuotaConfig.resolutionDigest}); a client given another source than its limiters gets
 * {@code quotas_differ}, a WARN, and the per-request path. With {@code --no-leases} nothing of it runs and the quota
 * source is not opened. Not a flag of the gateway's embedded client (docs/decisions.md, "Request leases: the client's
 * flags").
 */
final class ClientLeaseOptions {

    // fallbackValue: a negatable option's bare form sets it (NegatableOptionsTest)
    @Option(names = "--leases", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "request leases for hot keys: resolves each check's quota here, from --quotas or etcd as the"
                    + " limiters do, and admits the checks of keys above --lease-threshold from slots their limiters"
                    + " lease to this client, without asking a limiter per check; limiters lease only to a client whose"
                    + " quotas are theirs. --no-leases: every check asks a limiter and is logged there (default: on)")
    boolean enabled;

    @Option(names = "--lease-threshold", paramLabel = "REQ/S", defaultValue = "" + (long) RequestLeases.Settings.DEFAULT_THRESHOLD,
            description = "with --leases: checks per second on one limit key, as this client sees them, above which"
                    + " the key is hot; a number > 0 (default: ${DEFAULT-VALUE})")
    double threshold;

    @Option(names = "--lease-window", paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            defaultValue = "1s", description = "with --leases: the time constant of each key's rate estimate, up to"
                    + " 24h (default: ${DEFAULT-VALUE})")
    Duration window;

    @Option(names = "--quotas", description = "with --leases: the quota file the limiters read (their --quotas),"
            + " single-file form, reloaded on change (default: embedded default quotas, as a limiter's; ignored with"
            + " --etcd)")
    Path quotas;

    @Mixin
    EtcdOptions etcd = new EtcdOptions();

    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    /**
     * Returns the lease settings, refusing values out of range by the flag's name.
     *
     * @throws ParameterException when {@code --lease-threshold} is not a finite number &gt; 0 or {@code --lease-window}
     *                            is longer than 24 hours
     */
    RequestLeases.Settings settings() {
        if (!(threshold > 0) || Double.isInfinite(threshold)) {
            throw new ParameterException(spec.commandLine(), "--lease-threshold must be a finite number > 0 (requests"
                    + " per second), got " + threshold);
        }
        if (window.compareTo(Duration.ofDays(1)) > 0) {
            throw new ParameterException(spec.commandLine(), "--lease-window must be at most 24h, got "
                    + Converters.formatDuration(window));
        }
        return new RequestLeases.Settings(threshold, window);
    }
}
