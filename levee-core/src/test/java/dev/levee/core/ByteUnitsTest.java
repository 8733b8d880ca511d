package dev.levee.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class ByteUnitsTest {

    @ParameterizedTest
    @CsvSource(textBlock = """
            0,            0
            1048576,      1048576
            4MiB/s,       4194304
            4 MiB / s,    4194304
            4mib,         4194304
            10MB,         10000000
            512KiB,       524288
            1.5GiB/s,     1610612736
            1.5KB,        1500
            2TiB,         2199023255552
            7B,           7
            0.5B,         0
            """)
    void parsesRatesWithUnits(String text, long bytes) {
        assertThat(ByteUnits.parseRate(text)).isEqualTo(bytes);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "-1", "MiB", "1..5MiB", ".5MiB", "5.MiB", "4 mebibytes", "1e6", "0x10", "10000000000TiB"})
    void rejectsWhatIsNotAnAmount(String text) {
        assertThatThrownBy(() -> ByteUnits.parseRate(text)).isInstanceOf(IllegalArgumentException.class);
    }

    @ParameterizedTest
    @CsvSource(textBlock = """
            0,          off
            2097152,    2 MiB/s
            1536,       1536 B/s
            3072,       3 KiB/s
            1500,       1500 B/s
            1073741824, 1 GiB/s
            """)
    void formatsRates(long rate, String text) {
        assertThat(ByteUnits.formatRate(rate)).isEqualTo(text);
    }
}
