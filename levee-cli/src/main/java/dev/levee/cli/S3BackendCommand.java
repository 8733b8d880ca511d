package dev.levee.cli;

import dev.levee.runtime.HostPort;
import dev.levee.stack.EmbeddedS3;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code levee s3-backend}: the demo's in-memory S3 backend (S3Proxy over a transient store) as a
 * role of its own, for trying {@code levee gateway} alone (issue 13). Not for production: the data
 * lives in memory and is gone when it stops.
 */
@Command(name = "s3-backend", mixinStandardHelpOptions = true,
        description = "Run an in-memory S3 backend (S3Proxy, the demo's) to try the gateway against; data is lost"
                + " when it stops. Not for production.")
final class S3BackendCommand implements Callable<Integer> {

    @Mixin
    CommonOptions common = new CommonOptions();

    @Option(names = "--listen", converter = Converters.HostPortConverter.class, defaultValue = "127.0.0.1:9080",
            description = "S3 listener (default: ${DEFAULT-VALUE})")
    HostPort listen;

    @Option(names = "--access-key", defaultValue = EmbeddedS3.ACCESS_KEY,
            description = "the access key id it accepts (default: ${DEFAULT-VALUE})")
    String accessKey;

    @Option(names = "--secret-key", defaultValue = EmbeddedS3.SECRET_KEY,
            description = "the secret key of --access-key (default: ${DEFAULT-VALUE}; a test key, not a secret)")
    String secretKey;

    @Override
    public Integer call() throws Exception {
        common.apply("levee-s3-backend");
        EmbeddedS3 s3 = EmbeddedS3.start(listen.host(), listen.port(), accessKey, secretKey, Map.of());
        common.announce("levee s3-backend listening on http://" + listen.host() + ":" + s3.port()
                + " (S3Proxy, in memory; access key " + accessKey + "); try: AWS_ACCESS_KEY_ID=" + accessKey
                + " AWS_SECRET_ACCESS_KEY=" + secretKey + " aws --endpoint-url http://" + listen.host() + ":" + s3.port()
                + " s3 mb s3://demo");
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            s3.close();
            stopped.countDown();
        }, "levee-s3-backend-stop"));
        stopped.await();
        return 0;
    }
}
