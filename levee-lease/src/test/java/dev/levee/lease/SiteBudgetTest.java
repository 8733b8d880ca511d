package dev.levee.lease;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.levee.governor.Direction;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/** The site budget document (docs/design.md §10): forms, units, strict validation, round trip. */
class SiteBudgetTest {

    private static final String KEY = "etcd key /levee/bandwidth/budget";
    private static final long MIB = 1024 * 1024;

    @Test
    void yamlWithUnitsAndPrincipalCeilings() {
        SiteBudget b = SiteBudget.parse(KEY, """
                download: 30MiB/s
                upload: 1.5GB
                principal:
                  download: 10MiB/s
                principals:
                  svc-backup: {download: 50MiB/s}
                  svc-free: {download: 0, upload: 2MiB}
                """);
        assertThat(b.download()).isEqualTo(30 * MIB);
        assertThat(b.upload()).isEqualTo(1_500_000_000L);
        assertThat(b.principalDownload()).isEqualTo(10 * MIB);
        assertThat(b.principalUpload()).isZero();
        assertThat(b.ceiling(Direction.DOWNLOAD, "svc-backup")).isEqualTo(50 * MIB);
        assertThat(b.ceiling(Direction.DOWNLOAD, "svc-free")).isZero();
        assertThat(b.ceiling(Direction.UPLOAD, "svc-free")).isEqualTo(2 * MIB);
        assertThat(b.ceiling(Direction.DOWNLOAD, "anyone")).isEqualTo(10 * MIB);
        assertThat(b.budget(Resource.of(Direction.DOWNLOAD, "svc-backup"))).isEqualTo(50 * MIB);
        assertThat(b.budget(Resource.of(Direction.UPLOAD))).isEqualTo(1_500_000_000L);
        assertThat(b.principalCeilings(Direction.DOWNLOAD)).isTrue();
        assertThat(b.principalCeilings(Direction.UPLOAD)).isTrue();
        assertThat(b.none()).isFalse();
    }

    @Test
    void jsonWithPlainNumbers() {
        SiteBudget b = SiteBudget.parse(KEY, "{\"download\": 31457280, \"upload\": 0}");
        assertThat(b).isEqualTo(new SiteBudget(30 * MIB, 0, 0, 0, Map.of()));
        assertThat(b.principalCeilings(Direction.DOWNLOAD)).isFalse();
    }

    @Test
    void anEmptyDocumentIsRefusedNotReadAsNoBudget() {
        // no budget is the absent key (levee bandwidth delete); an empty value must not lift every budget
        for (String empty : new String[] {"", "\n", "# only a comment\n", null}) {
            assertThatThrownBy(() -> SiteBudget.parse(KEY, empty)).isInstanceOf(SiteBudget.InvalidBudgetException.class)
                    .hasMessageContaining(KEY).hasMessageContaining("empty").hasMessageContaining("levee bandwidth delete");
        }
        assertThat(SiteBudget.NONE.none()).isTrue();
    }

    @Test
    void aKeyTwiceAndASecondDocumentAreRefused() {
        assertThatThrownBy(() -> SiteBudget.parse(KEY, "download: 4MiB/s\ndownload: 8MiB/s\n"))
                .isInstanceOf(SiteBudget.InvalidBudgetException.class).hasMessageContaining(KEY)
                .hasMessageContaining("download");
        assertThatThrownBy(() -> SiteBudget.parse(KEY, "download: 8MiB/s\n---\nupload: 1MiB/s\n"))
                .isInstanceOf(SiteBudget.InvalidBudgetException.class).hasMessageContaining(KEY)
                .hasMessageContaining("second document");
        assertThatThrownBy(() -> SiteBudget.parse(KEY, "{\"download\": 1, \"download\": 2}"))
                .isInstanceOf(SiteBudget.InvalidBudgetException.class);
    }

    @Test
    void unknownFieldsRefusedNamingTheField() {
        assertThatThrownBy(() -> SiteBudget.parse(KEY, "download: 30MiB/s\ndownlaod: 1MiB/s\n"))
                .isInstanceOf(SiteBudget.InvalidBudgetException.class)
                .hasMessageContaining(KEY).hasMessageContaining("unknown field 'downlaod'");
        assertThatThrownBy(() -> SiteBudget.parse(KEY, "principal: {dowload: 1MiB/s}"))
                .hasMessageContaining(KEY).hasMessageContaining("unknown field 'principal.dowload'");
        assertThatThrownBy(() -> SiteBudget.parse(KEY, "principals: {svc-a: {rate: 1MiB/s}}"))
                .hasMessageContaining(KEY).hasMessageContaining("unknown field 'principals.svc-a.rate'");
    }

    @Test
    void negativeRefusedNamingKeyAndField() {
        assertThatThrownBy(() -> SiteBudget.parse(KEY, "download: -5"))
                .isInstanceOf(SiteBudget.InvalidBudgetException.class)
                .hasMessageContaining(KEY).hasMessageContaining("field 'download'").hasMessageContaining("negative");
        assertThatThrownBy(() -> SiteBudget.parse(KEY, "principals: {svc-a: {upload: -1MiB/s}}"))
                .hasMessageContaining(KEY).hasMessageContaining("field 'principals.svc-a.upload'");
    }

    @Test
    void notASizeRefusedNamingKeyAndField() {
        assertThatThrownBy(() -> SiteBudget.parse(KEY, "upload: lots"))
                .isInstanceOf(SiteBudget.InvalidBudgetException.class)
                .hasMessageContaining(KEY).hasMessageContaining("field 'upload'").hasMessageContaining("'lots'");
        assertThatThrownBy(() -> SiteBudget.parse(KEY, "download: [1, 2]"))
                .hasMessageContaining("field 'download'").hasMessageContaining("a list");
        assertThatThrownBy(() -> SiteBudget.parse(KEY, "download: 1.5"))
                .hasMessageContaining("field 'download'");
        assertThatThrownBy(() -> SiteBudget.parse(KEY, "principal: 5"))
                .hasMessageContaining("field 'principal'");
        assertThatThrownBy(() -> SiteBudget.parse(KEY, "- download: 1MiB"))
                .hasMessageContaining(KEY).hasMessageContaining("a list");
        assertThatThrownBy(() -> SiteBudget.parse(KEY, "download: [unclosed"))
                .hasMessageContaining(KEY).hasMessageContaining("not YAML or JSON");
    }

    @Test
    void everyProblemIsListed() {
        assertThatThrownBy(() -> SiteBudget.parse(KEY, "download: -1\nupload: x\nspeed: 3"))
                .isInstanceOfSatisfying(SiteBudget.InvalidBudgetException.class, e -> assertThat(e.problems())
                        .hasSize(3).allSatisfy(p -> assertThat(p).startsWith(KEY + ": ")));
    }

    @Test
    void belowOneQuantumPerSecondRefused() {
        assertThatThrownBy(() -> SiteBudget.parse(KEY, "download: 1000"))
                .hasMessageContaining(KEY).hasMessageContaining("field 'download'").hasMessageContaining("64 KiB/s");
        assertThat(SiteBudget.parse(KEY, "download: 64KiB").download()).isEqualTo(SiteBudget.MIN_RATE);
    }

    @Test
    void belowOneQuantumPerGatewayRefusedNamingKeyAndField() {
        SiteBudget b = SiteBudget.parse(KEY, "download: 128KiB/s\nupload: 1MiB/s");
        assertThat(b.checkGateways(KEY, 2)).isEmpty();
        assertThat(b.checkGateways(KEY, 3)).singleElement().asString()
                .contains(KEY).contains("field 'download'").contains("3 gateways");
        assertThat(b.checkGateways(KEY, 17)).hasSize(2);
        assertThat(SiteBudget.NONE.checkGateways(KEY, 1000)).isEmpty();
    }

    @Test
    void toYamlRoundTripsAnExample() {
        SiteBudget b = SiteBudget.parse(KEY, """
                download: 30MiB/s
                principal: {upload: 3MiB/s}
                principals:
                  svc-a: {download: 5MiB/s}
                  svc-b: {upload: 0}
                """);
        assertThat(SiteBudget.parse(KEY, b.toYaml())).isEqualTo(b);
    }

    @Property(tries = 200)
    void toYamlRoundTrips(@ForAll("budgets") SiteBudget b) {
        assertThat(SiteBudget.parse("x", b.toYaml())).isEqualTo(b);
    }

    @Provide
    Arbitrary<SiteBudget> budgets() {
        Arbitrary<Long> rate = Arbitraries.oneOf(Arbitraries.just(0L),
                Arbitraries.longs().between(SiteBudget.MIN_RATE, 1L << 40));
        Arbitrary<Long> optional = Arbitraries.oneOf(Arbitraries.just((Long) null), rate);
        Arbitrary<SiteBudget.Ceilings> ceilings = Combinators.combine(optional, optional).as(SiteBudget.Ceilings::new);
        Arbitrary<Map<String, SiteBudget.Ceilings>> principals = Arbitraries.maps(
                Arbitraries.strings().withCharRange('a', 'z').ofMinLength(1).ofMaxLength(8).map(s -> "svc-" + s), ceilings)
                .ofMaxSize(3);
        return Combinators.combine(rate, rate, rate, rate, principals).as(SiteBudget::new);
    }
}
