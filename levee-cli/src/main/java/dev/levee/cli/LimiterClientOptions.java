package dev.levee.cli;

import dev.levee.client.LeveeClient;
import dev.levee.runtime.HostPort;
import java.time.Duration;
import java.util.List;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The flags of the limiter client library ({@link LeveeClient.Options}, docs/design.md §6): declared once, for
 * {@code levee client} and the client embedded in an enforcing {@code levee gateway}, so that both take the same
 * flags with the same defaults and help (issue 25: the gateway's copy had drifted and hard-coded refresh and back-off).
 *
 * <p>Not here: {@code --observer} ({@link ObserverOptions}, a mixin of its own) and {@code --warn-interval}, a flag of
 * every role whose help says which degraded states that role warns about; both are passed to {@link #options}.
 */
final class LimiterClientOptions {

    @Option(names = "--refresh", converter = Converters.DurationConverter.class, defaultValue = "1s",
            description = "limiter list refresh interval (default: ${DEFAULT-VALUE})")
    Duration refresh;

    @Option(names = "--check-timeout", converter = Converters.DurationConverter.class, defaultValue = "250ms",
            description = "time one limiter may take (default: ${DEFAULT-VALUE})")
    Duration checkTimeout;

    @Option(names = "--check-deadline", converter = Converters.DurationConverter.class, defaultValue = "900ms",
            description = "longest a check may take with its spill-over attempts (the limiters beyond the group, asked"
                    + " when every group member failed): one is started only if --check-timeout still fits; keep it"
                    + " below what waits for the answer, for levee client NGINX's check --timeout (default: ${DEFAULT-VALUE})")
    Duration checkDeadline;

    @Option(names = "--backoff", converter = Converters.DurationConverter.class, defaultValue = "2s",
            description = "how long a failed limiter is skipped (default: ${DEFAULT-VALUE})")
    Duration backoff;

    @Option(names = "--base-domain", split = ",", description = "base domains for virtual-hosted style requests")
    List<String> baseDomains = List.of();

    @Option(names = "--limiter-in-flight", defaultValue = "" + LeveeClient.Options.DEFAULT_MAX_IN_FLIGHT,
            description = "HTTP requests one limiter may have outstanding before further checks for it are sent together"
                    + " as one batch, 1-1024; not used on the check wire (default: ${DEFAULT-VALUE})")
    int maxInFlight;

    @Option(names = "--batch-max", defaultValue = "" + LeveeClient.Options.DEFAULT_MAX_BATCH,
            description = "most checks in one batch or wire frame to a limiter, 1-1024 (default: ${DEFAULT-VALUE})")
    int maxBatch;

    // fallbackValue: without it picocli toggles a default-true negatable option (issue 10, NegatableOptionsTest)
    @Option(names = "--limiter-wire", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "send checks to the limiters over the check wire (one upgraded connection per limiter, the checks"
                    + " of one event-loop turn in one frame) where they take it; --no-limiter-wire sends each check or batch"
                    + " as an HTTP request, as to limiters older than the wire (default: on)")
    boolean wire;

    @Option(names = "--list-grace", converter = LimiterCommand.OptionalDurationConverter.class, defaultValue = "3s",
            description = "how long a limiter list that is empty or lost more than half its members is not believed"
                    + " (the last list is kept meanwhile), 0 to believe it at once (default: ${DEFAULT-VALUE})")
    Duration listGrace;

    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    /**
     * Refuses values out of range, naming the flag.
     *
     * @throws ParameterException when {@code --limiter-in-flight} or {@code --batch-max} is outside 1-1024
     */
    void validate() {
        if (maxInFlight < 1 || maxInFlight > 1024) {
            throw new ParameterException(spec.commandLine(), "--limiter-in-flight must be between 1 and 1024, got "
                    + maxInFlight);
        }
        if (maxBatch < 1 || maxBatch > 1024) {
            throw new ParameterException(spec.commandLine(), "--batch-max must be between 1 and 1024, got " + maxBatch);
        }
    }

    /**
     * The client library's settings from these flags.
     *
     * @param observers    the observers to poll ({@link ObserverOptions#list()})
     * @param warnInterval the role's {@code --warn-interval}
     * @return the settings
     * @throws ParameterException as {@link #validate()}
     */
    LeveeClient.Options options(List<HostPort> observers, Duration warnInterval) {
        validate();
        return LeveeClient.Options.builder(observers).refresh(refresh).checkTimeout(checkTimeout).backoff(backoff)
                .baseDomains(baseDomains).maxInFlight(maxInFlight).maxBatch(maxBatch).listGrace(listGrace)
                .checkDeadline(checkDeadline).warnInterval(warnInterval).wire(wire).build();
    }
}
