package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * {@code levee client --[no-]limiter-wire} as a user types it, down to the client library's settings: the check wire
 * is on by default and with {@code --limiter-wire}, off with {@code --no-limiter-wire}.
 */
class ClientWireOptionTest {

    static ClientCommand parse(String... args) {
        CommandLine root = new CommandLine(Main.class);
        CommandLine.ParseResult parsed = root.parseArgs(args);
        return (ClientCommand) parsed.subcommand().commandSpec().userObject();
    }

    @Test
    void theWireIsOnByDefaultAndOffWithNoLimiterWire() {
        assertThat(parse("client").options().wire()).isTrue();
        assertThat(parse("client", "--limiter-wire").options().wire()).isTrue();
        assertThat(parse("client", "--no-limiter-wire").options().wire()).isFalse();
        assertThat(parse("client", "--no-limiter-wire", "--batch-max", "7").options().maxBatch()).isEqualTo(7);
    }
}
