package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code levee observer}'s live page (issue 14 item 3) is off unless {@code --ui} is given. */
class ObserverUiOptionTest {

    static boolean ui(String... args) {
        CommandLine.ParseResult parsed = new CommandLine(Main.class).parseArgs(args);
        return (Boolean) parsed.subcommand().commandSpec().findOption("--ui").getValue();
    }

    @Test
    void thePageIsOffByDefaultAndOnWithUi() {
        assertThat(ui("observer")).isFalse();
        assertThat(ui("observer", "--ui")).isTrue();
        assertThat(ui("observer", "--no-ui")).isFalse();
    }

    @Test
    void theHelpNamesTheFlagAndItsDefault() {
        java.io.StringWriter out = new java.io.StringWriter();
        new CommandLine(Main.class).getSubcommands().get("observer").usage(new java.io.PrintWriter(out));
        assertThat(out.toString()).contains("--[no-]ui").contains("/ui/").contains("(default: off)");
    }
}
