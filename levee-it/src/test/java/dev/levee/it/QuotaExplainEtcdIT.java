package dev.levee.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.levee.etcd.EtcdRegistration;
import dev.levee.runtime.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code levee quota explain} against etcd (issue 14, item 6): quotas, factor and membership read with the etcd
 * options, as a limiter and the observer read them, give the same answer as the same quota file with the same
 * limiters given by hand; an etcd that is not there is named, with no stack trace.
 */
class QuotaExplainEtcdIT {

    @RegisterExtension
    static final ItFixtures IT = ItFixtures.withVertxAndEtcd();

    @TempDir
    Path dir;

    @Test
    void quotasFactorAndMembershipFromEtcdGiveTheAnswerOfTheFileAndTheListByHand() throws Exception {
        String endpoint = IT.etcd().endpoint();
        String prefix = "/explain-it";
        Path quotas = dir.resolve("q.yaml");
        Files.writeString(quotas, """
                factor: 3
                default: {rate: 1000, burst: 500}
                methods_default:
                  ListObjectsV2: {rate: 30, burst: 3}
                resources:
                  example-bucket:
                    prefixes:
                      - {prefix: "uploads/*", quota: {rate: 1700, burst: 300}}
                      - {prefix: "", methods: {PutObject: {rate: 100, burst: 25}}}
                """);
        assertThat(QuotaExplainIT.run("quota", "import", quotas.toString(), "--etcd", endpoint, "--etcd-prefix", prefix)
                .status()).isZero();
        List<String> ids = List.of("e1", "e2", "e3", "e4", "e5");
        List<EtcdRegistration> regs = new ArrayList<>();
        try {
            for (int i = 0; i < ids.size(); i++) {
                regs.add(EtcdRegistration.start(IT.client(), prefix, ids.get(i), "127.0.0.1:" + (22000 + i), 5));
            }
            for (List<String> request : List.of(List.of("PUT", "s3://example-bucket/uploads/a.bin"),
                    List.of("--method=PUT", "--uri=/example-bucket/k"), List.of("--method=GET", "--uri=/other?list-type=2"),
                    List.of("--resource=example-bucket", "--key=", "--operation=PutObject"))) {
                List<String> etcd = new ArrayList<>(List.of("quota", "explain", "--json", "--etcd", endpoint,
                        "--etcd-prefix", prefix));
                etcd.addAll(request);
                QuotaExplainIT.Run fromEtcd = QuotaExplainIT.run(etcd);
                List<String> file = new ArrayList<>(List.of("quota", "explain", "--json", "--quotas", quotas.toString(),
                        "--limiters", String.join(",", ids)));
                file.addAll(request);
                QuotaExplainIT.Run fromFile = QuotaExplainIT.run(file);
                assertThat(fromEtcd.status()).as("%s: %s", request, fromEtcd.err()).isZero();
                assertThat(fromFile.status()).as("%s: %s", request, fromFile.err()).isZero();
                JsonNode e = Json.MAPPER.readTree(fromEtcd.out());
                JsonNode f = Json.MAPPER.readTree(fromFile.out());
                assertThat(e.at("/quotas").asText()).startsWith("etcd " + endpoint);
                assertThat(e.at("/group/membership").asText()).startsWith("etcd " + prefix + "/limiters/");
                assertThat(e.at("/factor").asInt()).isEqualTo(3);
                assertThat(e.at("/group/active").asInt()).isEqualTo(ids.size());
                for (String field : List.of("/classification", "/match", "/limitKey", "/quota", "/g", "/perLimiter")) {
                    assertThat(e.at(field)).as("%s %s", request, field).isEqualTo(f.at(field));
                }
                assertThat(QuotaExplainIT.groupIds(e)).as("%s", request).hasSize(3).isEqualTo(QuotaExplainIT.groupIds(f));
                e.at("/group/limiters").forEach(m -> assertThat(m.path("address").asText()).startsWith("127.0.0.1:220"));
            }
        } finally {
            regs.forEach(EtcdRegistration::close);
        }
    }

    @Test
    void anEtcdThatIsNotThereIsNamed() {
        QuotaExplainIT.Run r = QuotaExplainIT.run("quota", "explain", "--etcd", "http://127.0.0.1:1", "GET", "s3://b/k");

        assertThat(r.status()).isEqualTo(1);
        assertThat(r.err()).contains("127.0.0.1:1").contains("connection refused").doesNotContain("Exception")
                .doesNotContain("\tat ");
    }
}
