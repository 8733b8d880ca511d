package dev.levee.it;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;

/**
 * The whole site of issue 11's acceptance tests: an {@link EtcdCluster}, one {@link S3Backend}, and
 * {@code n} {@link SiteGateway} processes, each with its own {@link EtcdLinks} to the cluster (to be
 * partitioned alone) and its egress proxy. The gateways' extra arguments come from the caller, who is
 * given each gateway's index and links (for example {@code List.of("--etcd", links.endpoints(), …)}).
 * Everything starts at once (etcd members, then the gateway JVMs in parallel) and closes in reverse.
 */
final class Site implements AutoCloseable {

    private final EtcdCluster etcd;
    private final S3Backend backend;
    private final List<EtcdLinks> links;
    private final List<SiteGateway> gateways;

    private Site(EtcdCluster etcd, S3Backend backend, List<EtcdLinks> links, List<SiteGateway> gateways) {
        this.etcd = etcd;
        this.backend = backend;
        this.links = links;
        this.gateways = gateways;
    }

    /**
     * Starts a site and waits until every gateway listens.
     *
     * @param dir          directory of the gateways' output, logs, principals and token files
     * @param etcdMembers  members of the etcd cluster (3 in the issue), ≥ 1
     * @param gateways     number of gateways (3 in the issue), ≥ 1
     * @param accounts     account name → access key id (the principals file)
     * @param secrets      access key id → secret key (what the backend accepts)
     * @param gatewayArgs  extra arguments of gateway {@code i} (named {@code g<i>}), given its links to etcd
     * @return the running site (close it)
     */
    static Site start(Path dir, int etcdMembers, int gateways, Map<String, String> accounts, Map<String, String> secrets,
            BiFunction<Integer, EtcdLinks, List<String>> gatewayArgs) {
        if (gateways < 1) {
            throw new IllegalArgumentException("a site needs at least one gateway, got " + gateways);
        }
        List<AutoCloseable> started = new ArrayList<>();
        try {
            EtcdCluster etcd = EtcdCluster.start(etcdMembers);
            started.add(etcd);
            S3Backend backend = S3Backend.start(secrets);
            started.add(backend);
            Path principals = SiteGateway.writePrincipals(dir.resolve("principals.yaml"), accounts);
            List<EtcdLinks> links = new ArrayList<>();
            List<SiteGateway> gs = new ArrayList<>();
            for (int i = 0; i < gateways; i++) {
                EtcdLinks l = EtcdLinks.to(etcd);
                started.add(l);
                links.add(l);
                SiteGateway g = SiteGateway.start(dir, "g" + i, backend.address(), principals, gatewayArgs.apply(i, l));
                started.add(g);
                gs.add(g);
            }
            gs.forEach(SiteGateway::awaitListening);
            return new Site(etcd, backend, List.copyOf(links), List.copyOf(gs));
        } catch (RuntimeException | Error e) {
            closeAll(started);
            throw e;
        }
    }

    /** Returns the etcd cluster. */
    EtcdCluster etcd() {
        return etcd;
    }

    /** Returns the S3 backend. */
    S3Backend backend() {
        return backend;
    }

    /** Returns gateway {@code i}. */
    SiteGateway gateway(int i) {
        return gateways.get(i);
    }

    /** Returns the gateways in order. */
    List<SiteGateway> gateways() {
        return gateways;
    }

    /** Returns gateway {@code i}'s links to etcd (partition it with {@code links(i).partition(true)}). */
    EtcdLinks links(int i) {
        return links.get(i);
    }

    /**
     * Returns a {@link ByteWindows} (1 s windows, not started) with one counter per gateway's egress,
     * named {@code g<i>}.
     */
    ByteWindows egressWindows() {
        ByteWindows w = ByteWindows.perSecond();
        for (SiteGateway g : gateways) {
            w.counter(g.name(), g::egressBytes);
        }
        return w;
    }

    /** Kills the gateways, stops their proxies and links, the backend and etcd (in reverse order of start). */
    @Override
    public void close() {
        List<AutoCloseable> all = new ArrayList<>();
        all.add(etcd);
        all.add(backend);
        for (int i = 0; i < gateways.size(); i++) {
            all.add(links.get(i));
            all.add(gateways.get(i));
        }
        closeAll(all);
    }

    private static void closeAll(List<AutoCloseable> started) {
        for (int i = started.size() - 1; i >= 0; i--) {
            try {
                started.get(i).close();
            } catch (Exception e) {
                // closing the rest anyway
            }
        }
    }
}
