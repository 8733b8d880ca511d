package dev.levee.nginx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.levee.runtime.HostPort;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The renderer in its own module (issue 25 item 4, moved from levee-stack): the templates and rate.lua come from this
 * module's jar, every part renders with no placeholder left, and a builder's copy changes nothing of the original
 * (levee-stack's EmbeddedNginx copies the settings it is given). The command's own tests are levee-cli's
 * NginxConfigCommandTest.
 */
class NginxConfigTest {

    @ParameterizedTest
    @EnumSource(NginxConfig.Part.class)
    void everyPartRendersFromThisModulesTemplates(NginxConfig.Part part) {
        String text = NginxConfig.builder().build().render(part);
        assertThat(text).isNotBlank().doesNotContain("{{");
    }

    @Test
    void rateLuaIsPackagedWithTheRenderer() {
        assertThat(NginxConfig.class.getResource(NginxConfig.RESOURCES + "rate.lua")).isNotNull();
        assertThat(NginxConfig.rateLua()).contains("function _M.attempt(location, opts)");
    }

    @Test
    void aCopyIsIndependentOfItsOriginal() {
        NginxConfig.Builder original = NginxConfig.builder().listen(new HostPort("127.0.0.1", 8080)).extraHttp("# x");
        NginxConfig.Builder copy = original.copy().listen(new HostPort("127.0.0.1", 9090)).extraHttp("# y");
        assertThat(original.build().render(NginxConfig.Part.SITE)).contains("listen 127.0.0.1:8080;");
        assertThat(copy.build().render(NginxConfig.Part.SITE)).contains("listen 127.0.0.1:9090;");
        assertThat(original.extraHttpText()).isEqualTo("# x");
        assertThat(copy.extraHttpText()).isEqualTo("# y");
    }

    @Test
    void aValueThatWouldChangeTheFilesMeaningIsRefused() {
        assertThatThrownBy(() -> NginxConfig.builder().checkLocation("/a;b").build())
                .isInstanceOf(IllegalArgumentException.class);
    }
}
