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
    void aKeyMayCarryItsSecretBesideKeysWithout() {
        PrincipalDirectory d = PrincipalDirectory.parseYaml("""
                accounts:
                  svc-photos:
                    keys:
                      - AKIAPHOTOS1
                      - id: AKIAPHOTOS2
                        secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
                  svc-backup:
                    keys: [{id: AKIABACKUP, secret: 'sec ret with inner spaces'}]
                """, "p.yaml");
        assertThat(d.principalOf("AKIAPHOTOS1")).isEqualTo("svc-photos");
        assertThat(d.principalOf("AKIAPHOTOS2")).isEqualTo("svc-photos");
        assertThat(d.principalOf("AKIABACKUP")).isEqualTo("svc-backup");
        assertThat(d.secretOf("AKIAPHOTOS1")).isNull();
        assertThat(d.secretOf("AKIAPHOTOS2")).isNotNull();
        assertThat(d.secretOf("AKIABACKUP")).isNotNull();
        assertThat(d.secretOf(null)).isNull();
        assertThat(d.keyCount()).isEqualTo(3);
        assertThat(d.verifiedKeyCount()).isEqualTo(2);
        assertThat(d.accounts().get(0).keys()).containsExactly("AKIAPHOTOS1", "AKIAPHOTOS2");
        assertThat(d.accounts().toString()).doesNotContain("EXAMPLEKEY", "inner spaces");
    }

    @Test
    void badSecretsAreNamedByTheirFieldAndNeverQuoted() {
        assertThatThrownBy(() -> PrincipalDirectory.parseYaml("""
                accounts:
                  a:
                    keys:
                      - {id: K1, secret: ""}
                      - {id: K2, secret: "   "}
                      - {id: K3, secret: " padded-secret-value "}
                      - {id: K4, secret: 12345}
                      - {id: K5, secret: }
                      - {id: K6}
                      - {secret: orphan-secret-value}
                      - {id: K8, secret: ok-secret-value, colour: blue}
                      - [K9]
                      - {id: [K10], secret: list-id-secret-value}
                """, "p.yaml"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("p.yaml: accounts.a.keys[0].secret: is empty")
                .hasMessageContaining("accounts.a.keys[1].secret: is blank")
                .hasMessageContaining("accounts.a.keys[2].secret: starts or ends with white space")
                .hasMessageContaining("accounts.a.keys[3].secret: expected a string (quote it)")
                .hasMessageContaining("accounts.a.keys[4].secret: expected a non-empty string")
                .hasMessageContaining("accounts.a.keys[5]: 'secret' is missing")
                .hasMessageContaining("accounts.a.keys[6]: 'id' is missing")
                .hasMessageContaining("accounts.a.keys[7]: unknown field 'colour' (expected id, secret)")
                .hasMessageContaining("accounts.a.keys[8]: expected an access key id, or a mapping with 'id' and 'secret'")
                .hasMessageContaining("accounts.a.keys[9].id: expected a string")
                .message().doesNotContain("padded-secret-value", "orphan-secret-value", "ok-secret-value", "list-id-secret-value",
                        "12345");
    }

    @Test
    void malformedYamlDoesNotEchoASecret() {
        assertThatThrownBy(() -> PrincipalDirectory.parseYaml("""
                accounts:
                  a:
                    keys:
                      - {id: K1, secret: "unterminated-secret-value}
                """, "p.yaml")).hasMessageStartingWith("p.yaml:").hasMessageContaining("malformed YAML")
                .message().doesNotContain("unterminated-secret-value");
        assertThatThrownBy(() -> PrincipalDirectory.parseYaml("""
                accounts:
                  a:
                    keys:
                      - id: K1
                        secret: first-secret-value
                        secret: second-secret-value
                """, "p.yaml")).hasMessageContaining("Duplicate field 'secret'")
                .message().doesNotContain("first-secret-value", "second-secret-value");
    }

    @Test
    void aSecretBelongsToOneOfTheAccountsKeys() {
        assertThatThrownBy(() -> new PrincipalDirectory.Account("svc", List.of("K1"), OptionalLong.empty(), OptionalLong.empty(),
                java.util.Map.of("K2", SigningSecret.of("s3cr3t-value"))))
                .hasMessageContaining("a secret is given for access key id 'K2', which is not one of its keys")
                .message().doesNotContain("s3cr3t-value");
        assertThatThrownBy(() -> SigningSecret.of("")).hasMessage("the secret is empty");
        assertThatThrownBy(() -> SigningSecret.of("a\u0000b")).hasMessage("the secret has control characters");
        assertThatThrownBy(() -> SigningSecret.of("x".repeat(SigningSecret.MAX_LENGTH + 1)))
                .hasMessage("the secret is longer than 1024 characters");
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
    void aSecondYamlDocumentIsAnErrorNotDropped() {
        // its accounts were dropped, and their keys silently anonymous
        assertThatThrownBy(() -> PrincipalDirectory.parseYaml("""
                accounts:
                  a: {keys: [K1]}
                ---
                accounts:
                  b: {keys: [K2], download_rate: 1MiB/s}
                """, "p.yaml")).hasMessageContaining("p.yaml:").hasMessageContaining("second document");
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
