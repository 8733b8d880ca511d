package dev.levee.quota;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.s3.S3Operation;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/** The allocation-free fast path of {@link QuotaRules#checkResource} never hides a problem the full check finds. */
class QuotaRulesFastPathProperties {

    @Property(tries = 3000)
    void fastPathAgreesWithTheFullCheck(@ForAll("names") String name, @ForAll("resources") ResourceQuotas resource) {
        assertThat(QuotaRules.checkResource(name, resource, "resources.x"))
                .isEqualTo(QuotaRules.checkResourceFully(name, resource, "resources.x"));
    }

    @Provide
    Arbitrary<String> names() {
        return Arbitraries.oneOf(Arbitraries.strings().withChars("ab/\u0001\ud800\udc00-").ofMaxLength(4),
                Arbitraries.strings().withChars("ab").ofLength(256), Arbitraries.of("bucket-1"));
    }

    @Provide
    Arbitrary<ResourceQuotas> resources() {
        Arbitrary<Quota> quotas = Arbitraries.integers().between(0, 5).map(r -> new Quota(r, 1));
        Arbitrary<Map<S3Operation, Quota>> methods = Arbitraries.maps(
                Arbitraries.of(S3Operation.GetObject, S3Operation.PutObject, S3Operation.Unknown), quotas).ofMaxSize(2);
        Arbitrary<String> prefixes = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(3, Arbitraries.strings().withChars("ab*#/\ud800\udc00é").ofMaxLength(5)),
                net.jqwik.api.Tuple.of(1, Arbitraries.strings().withChars("aé€").ofMinLength(340).ofMaxLength(1030)),
                net.jqwik.api.Tuple.of(4, Arbitraries.of("a#PutObject", "a#GetObject", "a", "a*", "")));
        Arbitrary<PrefixRule> rules = Combinators.combine(prefixes, quotas.injectNull(0.3), methods).as(PrefixRule::new);
        return Combinators.combine(quotas.injectNull(0.5), rules.list().ofMaxSize(6))
                .as((q, list) -> new ResourceQuotas(q, List.copyOf(list)));
    }
}
