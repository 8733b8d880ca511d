package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.levee.runtime.HostPort;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/**
 * {@code --observer a,b} of {@code levee client} and {@code levee gateway} as a user types it, down to the client
 * library's settings (issue 22, item 9); {@code LEVEE_OBSERVERS} is tested through a real process (ObserverFailoverIT).
 */
class ObserverOptionTest {

    static Object parse(String... args) {
        CommandLine root = new CommandLine(Main.class);
        return root.parseArgs(args).subcommand().commandSpec().userObject();
    }

    static final HostPort A = new HostPort("127.0.0.1", 7001);
    static final HostPort B = new HostPort("127.0.0.1", 7002);

    @Test
    void severalObserversCommaSeparatedInTheOrderGiven() {
        assertThat(((ClientCommand) parse("client", "--observer", "127.0.0.1:7001,127.0.0.1:7002")).options().observers())
                .containsExactly(A, B);
        assertThat(((ClientCommand) parse("client", "--observer", " 127.0.0.1:7002 , http://127.0.0.1:7001/"))
                .options().observers()).containsExactly(B, A);
        assertThat(((GatewayCommand) parse("gateway", "--backend", "127.0.0.1:9", "--observer",
                "127.0.0.1:7001,127.0.0.1:7002")).clientOptions().observers()).containsExactly(A, B);
    }

    @Test
    void oneObserverAsBefore() {
        assertThat(((ClientCommand) parse("client", "--observer", "127.0.0.1:7001")).options().observers())
                .containsExactly(A);
        assertThat(((GatewayCommand) parse("gateway", "--backend", "127.0.0.1:9", "--observer=127.0.0.1:7002"))
                .clientOptions().observers()).containsExactly(B);
    }

    @Test
    void withoutFlagOrVariableTheDefaultObserver() {
        Assumptions.assumeTrue(System.getenv(ObserverOptions.ENV) == null, "LEVEE_OBSERVERS is set here");
        assertThat(((ClientCommand) parse("client")).options().observers())
                .containsExactly(new HostPort("127.0.0.1", 7000));
    }

    @Test
    void aBadEntryOfTheVariableIsNamedAsTheVariable() {
        assertThatThrownBy(() -> ObserverOptions.parse("127.0.0.1:7001,127.0.0.1", "LEVEE_OBSERVERS"))
                .isInstanceOf(UsageException.class)
                .hasMessageContaining("LEVEE_OBSERVERS '127.0.0.1:7001,127.0.0.1'").hasMessageContaining("HOST:PORT");
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource(delimiter = '|', quoteCharacter = '"', textBlock = """
            client  | 127.0.0.1:7001,,127.0.0.1:7002         | "--observer '127.0.0.1:7001,,127.0.0.1:7002': entry 2 is empty"
            client  | "127.0.0.1:7001,"                      | "--observer '127.0.0.1:7001,': entry 2 is empty"
            client  | 127.0.0.1:7001,nonsense                | "'nonsense'"
            client  | 127.0.0.1:7001,127.0.0.1:7001          | "127.0.0.1:7001 is given twice"
            client  | 127.0.0.1:7001,127.0.0.1:0             | "'127.0.0.1:0' has port 0"
            client  | 127.0.0.1:7001,https://127.0.0.1:7002  | "only plain HTTP"
            client  | "1:1,2:1,3:1,4:1,5:1,6:1,7:1,8:1,9:1,10:1,11:1,12:1,13:1,14:1,15:1,16:1,17:1" | "at most 16 observers, got 17"
            gateway | 127.0.0.1:7001,,127.0.0.1:7002         | "--observer '127.0.0.1:7001,,127.0.0.1:7002': entry 2 is empty"
            gateway | 127.0.0.1:7001,127.0.0.1:70000         | "out of range"
            """)
    void aBadEntryIsAUsageErrorNamingTheValue(String role, String value, String named) {
        MainTest.Run r = role.equals("client") ? MainTest.run("client", "--observer", value)
                : MainTest.run("gateway", "--backend", "127.0.0.1:9", "--observer", value);
        assertThat(r.status()).as(r.err()).isEqualTo(2);
        assertThat(r.err()).contains(named).contains("--help' for more information").doesNotContain("\tat ")
                .doesNotContain("Exception");
    }

    @Test
    void theHelpShowsTheListFormAndTheVariable() {
        for (String role : List.of("client", "gateway")) {
            MainTest.Run r = MainTest.run(role, "--help");
            assertThat(r.out()).contains("--observer=HOST:PORT[,HOST:PORT...]").contains("$LEVEE_OBSERVERS")
                    .contains("the flag wins over the variable");
        }
    }
}
