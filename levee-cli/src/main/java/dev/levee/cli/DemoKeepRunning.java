package dev.levee.cli;

import dev.levee.stack.EmbeddedS3;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@code levee demo --keep-running} (issue 13): after the summary the stack stays up, its endpoints are
 * printed with commands to paste, and SIGTERM or Ctrl-C stops it gracefully — the demo closes every
 * component (gateway, limiters, observer, NGINX, S3 backend, etcd) before the JVM exits.
 */
final class DemoKeepRunning {

    /** How long the JVM's shutdown waits for the demo to close its stack, at most. */
    static final Duration STOP_BUDGET = Duration.ofSeconds(30);

    private final CountDownLatch requested = new CountDownLatch(1);
    private final CountDownLatch stopped = new CountDownLatch(1);

    private DemoKeepRunning() {
    }

    /** What the demo is running, for the commands it prints. */
    record Endpoints(int s3Endpoint, boolean viaNginx, int backend, int observer, int gatewayAdmin,
                     List<String> limiters, String etcd, Path nginxLog, String quotaSource, String bucket, String key) {
    }

    /**
     * Installs the shutdown hook: from then on SIGTERM/SIGINT asks the demo to stop and waits (at most
     * {@link #STOP_BUDGET}) until it has.
     */
    static DemoKeepRunning install() {
        DemoKeepRunning k = new DemoKeepRunning();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            k.requested.countDown();
            try {
                k.stopped.await(STOP_BUDGET.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "levee-demo-stop"));
        return k;
    }

    /** Blocks until SIGTERM/SIGINT. */
    void awaitStopRequest() throws InterruptedException {
        requested.await();
    }

    /** Tells the shutdown hook that the stack is closed. */
    void stopped() {
        stopped.countDown();
    }

    /**
     * Prints the observer's live page (when served) and the {@code levee top} command for this demo's observer
     * (issue 26 item 3): at start, for another terminal while the demo runs, and again with --keep-running.
     */
    static void printLive(PrintStream out, int observer, boolean ui) {
        if (ui) {
            out.printf(Locale.ROOT, "  live page    http://127.0.0.1:%d/ui/ (hot resources and their last minute; --no-ui:"
                    + " off)%n", observer);
        }
        out.printf(Locale.ROOT, "  levee top    ./levee top --observer 127.0.0.1:%d   (the same table in a terminal)%n",
                observer);
    }

    /** Prints the endpoints and ready-to-paste commands, without the live page. */
    static void print(PrintStream out, Endpoints e) {
        print(out, e, false);
    }

    /** Prints the endpoints and ready-to-paste commands; the live page's address when {@code ui}. */
    static void print(PrintStream out, Endpoints e, boolean ui) {
        String s3 = "http://127.0.0.1:" + e.s3Endpoint();
        out.println();
        out.println("The stack keeps running (--keep-running): try it.");
        out.printf(Locale.ROOT, "  S3 endpoint  %s (%s; the quotas above apply)%n", s3,
                e.viaNginx() ? "NGINX, which checks each request, in front of the gateway" : "the gateway");
        out.printf(Locale.ROOT, "    export AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_DEFAULT_REGION=us-east-1%n",
                EmbeddedS3.ACCESS_KEY, EmbeddedS3.SECRET_KEY);
        out.printf(Locale.ROOT, "    aws --endpoint-url %s s3 ls s3://%s/%n", s3, e.bucket());
        if (!e.key().isEmpty()) {
            out.printf(Locale.ROOT, "    aws --endpoint-url %s s3 cp s3://%s/%s -%n", s3, e.bucket(), e.key());
            // 20 at once with curl's own signing: the AWS CLI one call at a time (a second each to start) stays
            // under the quota, and it retries a 503 SlowDown until it passes
            out.printf(Locale.ROOT, "    seq 40 | xargs -P 20 -I{} curl -s -o /dev/null -w '%%{http_code}\\n' --aws-sigv4"
                    + " aws:amz:us-east-1:s3 --user %s:%s -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' %s/%s/%s"
                    + " | sort | uniq -c     # 200 passed, 503 SlowDown%n", EmbeddedS3.ACCESS_KEY, EmbeddedS3.SECRET_KEY,
                    s3, e.bucket(), e.key());
        }
        out.printf(Locale.ROOT, "  S3 backend   http://127.0.0.1:%d (S3Proxy behind the gateway, no quotas; same keys)%n",
                e.backend());
        out.printf(Locale.ROOT, "  observer     curl -s http://127.0.0.1:%d/v1/limiters%n", e.observer());
        printLive(out, e.observer(), ui);
        out.printf(Locale.ROOT, "  gateway      curl -s http://127.0.0.1:%d/metrics | grep levee_gateway_requests_total%n",
                e.gatewayAdmin());
        out.printf(Locale.ROOT, "               curl -s -H 'Authorization: Bearer %s' http://127.0.0.1:%d/health/ready%n",
                dev.levee.stack.LocalStack.HEALTH_TOKEN, e.gatewayAdmin());
        if (!e.limiters().isEmpty()) {
            out.printf(Locale.ROOT, "  limiters     curl -s http://%s/metrics | grep levee_limiter_decisions_total   (%s)%n",
                    e.limiters().getFirst(), String.join(" ", e.limiters()));
        }
        if (e.etcd() != null) {
            out.printf(Locale.ROOT, "  etcd         %s (quotas under /levee; the limiters follow changes at once)%n", e.etcd());
            out.printf(Locale.ROOT, "    ./levee quota --etcd %s get %s%n", e.etcd(), e.bucket());
            out.printf(Locale.ROOT, "    echo 'quota: {rate: 2, burst: 2}' | ./levee quota --etcd %s set %s -%n", e.etcd(),
                    e.bucket());
        } else {
            out.printf(Locale.ROOT, "  quotas       fixed for this run (%s); with --etcd they live in etcd and"
                    + " `./levee quota --etcd URL set` changes them%n", e.quotaSource());
        }
        if (e.nginxLog() != null) {
            out.printf(Locale.ROOT, "  nginx log    tail -f %s%n", e.nginxLog());
        }
        out.println("levee demo: running until Ctrl-C or SIGTERM");
        out.flush();
    }
}
