package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@code --etcd-max-value-size} and {@code --etcd-max-message-size}: sizes in bytes, KiB or MiB. */
class EtcdSizeOptionsTest {

    @ParameterizedTest
    @CsvSource({"65536, 65536", "64KiB, 65536", "64k, 65536", "16MiB, 16777216", "2M, 2097152", "100B, 100"})
    void sizesParseInBinaryUnits(String text, int bytes) {
        assertThat(Converters.parseSize(text)).isEqualTo(bytes);
    }

    @ParameterizedTest
    @CsvSource({"--etcd-max-value-size, 12QB", "--etcd-max-value-size, 0", "--etcd-max-message-size, -1",
            "--etcd-max-message-size, 4GiB"})
    void aBadSizeIsAUsageErrorNamingTheFlag(String flag, String value) {
        MainTest.Run r = MainTest.run("quota", "get", "--etcd", "http://127.0.0.1:1", flag, value);
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err()).contains(flag).contains(value).doesNotContain("Exception");
    }

    @org.junit.jupiter.api.Test
    void aMessageLimitBelow64KiBIsRefusedNamingIt() {
        MainTest.Run r = MainTest.run("quota", "get", "--etcd", "http://127.0.0.1:1", "--etcd-max-message-size", "1KiB");
        assertThat(r.status()).isEqualTo(1);
        assertThat(r.err()).contains("64 KiB").doesNotContain("Exception");
    }

    @org.junit.jupiter.api.Test
    void importTxnOpsBelowOneIsRefused() {
        MainTest.Run r = MainTest.run("quota", "import", "-", "--etcd", "http://127.0.0.1:1", "--txn-ops", "0");
        assertThat(r.status()).as("a usage error").isEqualTo(2);
        assertThat(r.err()).contains("--txn-ops");
    }
}
