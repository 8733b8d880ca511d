package dev.levee.config;

import dev.levee.quota.QuotaConfig;
import dev.levee.quota.QuotaConfigException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link QuotaSource} over a quota file in the single-file form (docs/design.md §4), reloaded when its
 * content changes.
 *
 * <p>The file is read every {@code pollMillis} (default 1000 ms); when its bytes differ from the last
 * ones read, they are parsed and validated whole: a valid file replaces the configuration
 * atomically, an invalid one is logged with every error, counted, and the last good configuration
 * stays in force. Polling (rather than a file-system watch) also follows editors that replace the
 * file and symlink swaps as configuration managers do them.
 */
public final class FileQuotaSource extends AbstractQuotaSource {

    private static final Logger LOG = LoggerFactory.getLogger("levee.config");

    private final Path file;
    private final ScheduledExecutorService timer;
    private volatile boolean readable = true;
    private byte[] lastBytes;

    private FileQuotaSource(Path file, QuotaConfig initial, byte[] bytes, long pollMillis) {
        super(initial, 0);
        this.file = file;
        this.lastBytes = bytes;
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "levee-quota-file");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleWithFixedDelay(this::poll, pollMillis, pollMillis, TimeUnit.MILLISECONDS);
    }

    /**
     * Loads {@code file} and starts watching it.
     *
     * @param file       the quota file
     * @param pollMillis how often to look for changes, ≥ 10 ms
     * @return the source
     * @throws QuotaConfigException when the file cannot be read or is invalid at start
     * @throws IllegalArgumentException when {@code pollMillis < 10}
     */
    public static FileQuotaSource open(Path file, long pollMillis) {
        if (pollMillis < 10) {
            throw new IllegalArgumentException("poll interval must be >= 10 ms");
        }
        QuotaConfig cfg = QuotaConfigLoader.load(file);
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (IOException e) {
            bytes = new byte[0];
        }
        return new FileQuotaSource(file, cfg, bytes, pollMillis);
    }

    private void poll() {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
            readable = true;
        } catch (IOException e) {
            if (readable) {
                LOG.warn("quota file {} unreadable, keeping the last good configuration: {}", file, e.toString());
            }
            readable = false;
            return;
        }
        if (Arrays.equals(bytes, lastBytes)) {
            return;
        }
        lastBytes = bytes;
        try {
            QuotaConfig next = QuotaConfigLoader.parse(new String(bytes, java.nio.charset.StandardCharsets.UTF_8),
                    file.toString());
            swap(next, revision() + 1);
            LOG.info("quota file {} reloaded (revision {})", file, revision());
            notifyListeners(next);
        } catch (QuotaConfigException e) {
            countRejected();
            LOG.error("quota file {} refused, keeping the last good configuration: {}", file,
                    String.join("; ", e.errors()));
        } catch (RuntimeException e) {
            countRejected();
            LOG.error("quota file {} refused: {}", file, e.toString());
        }
    }

    @Override
    public boolean ready() {
        return readable;
    }

    @Override
    public void close() {
        super.close();
        timer.shutdownNow();
    }
}
