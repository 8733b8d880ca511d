package dev.levee.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.runtime.LogTarget;
import dev.levee.runtime.Logging;
import org.junit.jupiter.api.Test;

/**
 * Decision lines are formatted without garbage on the caller's thread (issue 12): with the CLI's class path —
 * which holds the servlet API (S3Proxy's Jetty, for the demo) — Log4j must still not take Levee for a web
 * application, which turns its reusable messages off (a new message and two copies of the text per line).
 */
class GarbageFreeLoggingTest {

    @Test
    void decisionLoggersUseReusableMessagesThoughTheServletApiIsOnTheClassPath() throws Exception {
        assertThat(Class.forName("jakarta.servlet.Servlet", false, getClass().getClassLoader())).isNotNull();
        Logging.configure(LogTarget.parse("stderr"), "levee-test", "INFO");
        var ctx = (org.apache.logging.log4j.core.LoggerContext) org.apache.logging.log4j.LogManager.getContext(false);
        assertThat((Object) ctx.getLogger("levee.limiter.decision").getMessageFactory())
                .isInstanceOf(org.apache.logging.log4j.message.ReusableMessageFactory.class);
    }
}
