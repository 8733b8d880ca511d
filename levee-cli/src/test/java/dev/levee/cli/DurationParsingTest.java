package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/** How duration options read what is typed (Converters.parseDuration): the forms, zero, and what is refused. */
class DurationParsingTest {

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            250ms     | 250
            2s        | 2000
            ' 5s '    | 5000
            5S        | 5000
            1.5m      | 90000
            1h        | 3600000
            PT2S      | 2000
            1e3s      | 1000000
            """)
    void positiveForms(String typed, long ms) {
        assertThat(Converters.parseDuration(typed)).isEqualTo(Duration.ofMillis(ms));
    }

    @ParameterizedTest
    @CsvSource(textBlock = """
            0
            00
            0.0
            0s
            0ms
            0m
            0h
            PT0S
            pt0s
            -0
            """)
    void zeroInAnySpellingWhereZeroIsAllowed(String typed) {
        assertThat(Converters.parseDuration(typed, true)).isZero();
        assertThatThrownBy(() -> Converters.parseDuration(typed)).isInstanceOf(CommandLine.TypeConversionException.class)
                .hasMessageContaining("must be positive");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            -1s         | must not be negative
            -PT5S       | must not be negative
            1e400s      | longer than 365 days
            1e12s       | longer than 365 days
            366d        | not a duration
            9000h       | longer than 365 days
            0.0001s     | below a millisecond
            1.5ms       | milliseconds are whole
            5           | not a duration
            NaNs        | not a duration
            Infinitys   | not a duration
            0x1p3s      | not a duration
            ''          | not a duration
            """)
    void refusedNamingWhy(String typed, String why) {
        for (boolean zeroAllowed : new boolean[] {false, true}) {
            assertThatThrownBy(() -> Converters.parseDuration(typed, zeroAllowed))
                    .isInstanceOf(CommandLine.TypeConversionException.class).hasMessageContaining(why);
        }
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(longs = {1, 250, 1000, 1500, 60_000, 90_000, 3_600_000, 90_000_000,
            5_400_000, 86_400_000L * 365})
    void aFormattedDurationReadsBackAsTheSame(long ms) {
        java.time.Duration d = java.time.Duration.ofMillis(ms);
        String typed = Converters.formatDuration(d);
        org.assertj.core.api.Assertions.assertThat(typed).doesNotStartWith("PT");
        org.assertj.core.api.Assertions.assertThat(Converters.parseDuration(typed)).as(typed).isEqualTo(d);
    }
}
