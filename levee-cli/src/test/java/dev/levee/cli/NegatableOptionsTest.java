package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * Regression for issue 10, item 1: {@code levee gateway --no-enforce} enforced and {@code --enforce} did
 * not, because picocli toggles a negatable option whose default is {@code true} unless it has a fallback
 * value. Every negatable boolean option of every command is parsed here as a user types it: the
 * positive name must give {@code true}, the {@code --no-} name {@code false}, whatever the default.
 */
class NegatableOptionsTest {

    record Negatable(String command, String positive, String negative) {
        @Override
        public String toString() {
            return command + " " + positive + " / " + negative;
        }
    }

    static Stream<Negatable> negatableOptions() {
        List<Negatable> found = new ArrayList<>();
        collect(new CommandLine(Main.class).getCommandSpec(), found);
        assertThat(found).as("the gateway's --enforce is negatable; the scan must see it")
                .contains(new Negatable("levee gateway", "--enforce", "--no-enforce"));
        return found.stream();
    }

    private static void collect(CommandSpec spec, List<Negatable> found) {
        for (OptionSpec o : spec.options()) {
            if (o.negatable()) {
                String positive = o.longestName();
                String negative = positive.replaceFirst("^--", "--no-");
                found.add(new Negatable(spec.qualifiedName(), positive, negative));
            }
        }
        spec.subcommands().values().forEach(sub -> collect(sub.getCommandSpec(), found));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("negatableOptions")
    void positiveNameMeansTrueAndNegatedNameMeansFalse(Negatable n) {
        assertThat(valueAfter(n, n.positive())).as(n.positive()).isTrue();
        assertThat(valueAfter(n, n.negative())).as(n.negative()).isFalse();
    }

    /** Parses {@code levee <sub> <flag>} (plus the sub-command's required options) and reads the option back. */
    private static boolean valueAfter(Negatable n, String flag) {
        CommandLine root = new CommandLine(Main.class);
        root.setCaseInsensitiveEnumValuesAllowed(true); // as Main.run: levee nginx-config's --transport defaults to 'subrequest'
        List<String> args = new ArrayList<>(List.of(n.command().replaceFirst("^levee ?", "").split(" ")));
        args.removeIf(String::isEmpty);
        if (n.command().equals("levee gateway")) {
            args.addAll(List.of("--backend", "127.0.0.1:9"));
        }
        if (n.command().equals("levee limiter")) {
            args.addAll(List.of("--id", "l1"));
        }
        args.add(flag);
        CommandLine.ParseResult parsed = root.parseArgs(args.toArray(String[]::new));
        while (parsed.hasSubcommand()) {
            parsed = parsed.subcommand();
        }
        OptionSpec option = parsed.commandSpec().findOption(n.positive());
        Object value = option.getValue();
        assertThat(value).as(flag).isInstanceOf(Boolean.class);
        return (Boolean) value;
    }
}
