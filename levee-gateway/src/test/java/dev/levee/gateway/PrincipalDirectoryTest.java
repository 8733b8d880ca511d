package dev.levee.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

class PrincipalDirectoryTest {

    @Test
    void severalKeysOfOneAccountMapToOnePrincipal() {
        PrincipalDirectory d = PrincipalDirectory.parseYaml("""
                accounts:
                  svc-photos:
                    keys: [AKIAPHOTOS1, AKIAPHOTOS2]
                    upload_rate: 20MiB/s
                    download_rate: 0
                  svc-backup:
                    keys:
                      - AKIABACKUP
                    download_rate: 1048576
                """, "p.yaml");
        assertThat(d.principalOf("AKIAPHOTOS1")).isEqualTo("svc-photos");
        assertThat(d.principalOf("AKIAPHOTOS2")).isEqualTo("svc-photos");
        assertThat(d.principalOf("AKIABACKUP")).isEqualTo("svc-backup");
        assertThat(d.principalOf("AKIAOTHER")).isNull();
        assertThat(d.principalOf(null)).isNull();
        assertThat(d.keyCount()).isEqualTo(3);
        assertThat(d.accounts()).extracting(PrincipalDirectory.Account::id).containsExactly("svc-photos", "svc-backup");
        assertThat(d.accounts().get(0).uploadRate()).isEqualTo(OptionalLong.of(20L << 20));
        assertThat(d.accounts().get(0).downloadRate()).isEqualTo(OptionalLong.of(0));
        assertThat(d.accounts().get(1).uploadRate()).isEmpty();
        assertThat(d.accounts().get(1).downloadRate()).isEqualTo(OptionalLong.of(1048576));
    }

    @Test
    void anEmptyAccountListGovernsEverythingAsAnonymous() {
        assertThat(PrincipalDirectory.parseYaml("accounts: {}\n", "p.yaml").keyCount()).isZero();
        assertThat(PrincipalDirectory.parseYaml("accounts:\n", "p.yaml").keyCount()).isZero();
    }

    @Test
    void everyProblemIsReportedWithItsPath() {
        assertThatThrownBy(() -> PrincipalDirectory.parseYaml("""
                accounts:
                  a:
                    keys: [K1]
                    upload_rate: fast
                  b:
                    keys: []
                  c:
                    keys: [K3]
                    colour: blue
                  d:
                    keys: [K4]
                    download_rate: -5
                extra: 1
                """, "p.yaml"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("p.yaml: unknown field 'extra'")
                .hasMessageContaining("accounts.a.upload_rate: 'fast' is not an amount of bytes")
                .hasMessageContaining("accounts.b.keys: expected a non-empty list")
                .hasMessageContaining("accounts.c: unknown field 'colour'")
                .hasMessageContaining("accounts.d.download_rate: expected bytes per second");
    }

    @Test
    void aKeyBelongsToOneAccountOnly() {
        assertThatThrownBy(() -> PrincipalDirectory.parseYaml("""
                accounts:
                  a: {keys: [K1, K2]}
                  b: {keys: [K2]}
                """, "p.yaml")).hasMessageContaining("access key id 'K2' belongs to both 'a' and 'b'");
    }

    @Test
    void duplicateYamlKeysAreErrors() {
        assertThatThrownBy(() -> PrincipalDirectory.parseYaml("""
                accounts:
                  a: {keys: [K1]}
                  a: {keys: [K2]}
                """, "p.yaml")).hasMessageContaining("p.yaml:").hasMessageContaining("Duplicate field 'a'");
    }

    @Test
    void atMostAThousandKeysAreLoaded() {
        List<PrincipalDirectory.Account> accounts = new ArrayList<>();
        for (int i = 0; i < 500; i++) {
            accounts.add(PrincipalDirectory.Account.of("svc-" + i, "KA" + i, "KB" + i));
        }
        assertThat(new PrincipalDirectory(accounts).keyCount()).isEqualTo(PrincipalDirectory.MAX_KEYS);
        accounts.add(PrincipalDirectory.Account.of("one-more", "KC"));
        assertThatThrownBy(() -> new PrincipalDirectory(accounts))
                .hasMessageContaining("1001 access keys, more than the 1000 a gateway loads");
    }

    @Test
    void keysThatCannotBeReadBackAreRejected() {
        assertThatThrownBy(() -> PrincipalDirectory.Account.of("svc", "has space"))
                .hasMessageContaining("access key id 'has space'");
        assertThatThrownBy(() -> PrincipalDirectory.Account.of("svc", "a/b")).hasMessageContaining("'a/b'");
        assertThatThrownBy(() -> PrincipalDirectory.Account.of(" ", "K")).hasMessageContaining("account id");
    }

    @Test
    void theAnonymousPrincipalMustNotBeAnAccount() {
        PrincipalDirectory d = new PrincipalDirectory(List.of(PrincipalDirectory.Account.of("anonymous", "K")));
        assertThatThrownBy(() -> GovernanceSettings.builder().principals(d).build())
                .hasMessageContaining("the anonymous principal 'anonymous' is also an account id");
        assertThat(GovernanceSettings.builder().principals(d).anonymousPrincipal("guests").build().anonymousPrincipal())
                .isEqualTo("guests");
    }
}
