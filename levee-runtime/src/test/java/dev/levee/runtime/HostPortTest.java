package dev.levee.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class HostPortTest {

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            127.0.0.1:7000          | 127.0.0.1 | 7000
            http://127.0.0.1:7000   | 127.0.0.1 | 7000
            HTTP://localhost:7000/  | localhost | 7000
            [::1]:7000              | ::1       | 7000
            http://[::1]:7000       | ::1       | 7000
            """)
    void anAddressOrAnHttpUrlNamesTheSameEndpoint(String text, String host, int port) {
        HostPort hp = HostPort.parse(text, "--observer");
        assertThat(hp.host()).isEqualTo(host);
        assertThat(hp.port()).isEqualTo(port);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            https://127.0.0.1:7000     | only plain HTTP
            127.0.0.1:7000/v1          | no path
            http://127.0.0.1:7000/v1   | no path
            http://127.0.0.1           | expected HOST:PORT
            127.0.0.1:x                | not a number
            127.0.0.1:7000:1           | one colon only
            ::1:7000                   | IPv6 address in brackets
            [::1:7000                  | brackets go around
            """)
    void otherUrlsAndPathsAreRefusedNamingTheOption(String text, String named) {
        assertThatThrownBy(() -> HostPort.parse(text, "--observer"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("--observer: ")
                .hasMessageContaining(named);
    }
}
