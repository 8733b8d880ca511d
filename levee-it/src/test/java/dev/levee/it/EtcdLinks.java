package dev.levee.it;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * One process's network path to an {@link EtcdCluster}: a {@link TcpProxy} in front of each member's
 * client port, so that a test can partition that process (a gateway) from etcd while the members and
 * every other process still reach each other. Give the process {@link #endpoints()} instead of the
 * cluster's own.
 *
 * <p>jetcd (through {@code Etcd.client}) connects only to the endpoints it is given (it does not learn
 * the members' advertised URLs), so all its traffic passes through these proxies.
 */
final class EtcdLinks implements AutoCloseable {

    private final List<TcpProxy> proxies;

    private EtcdLinks(List<TcpProxy> proxies) {
        this.proxies = List.copyOf(proxies);
    }

    /**
     * Starts one proxy per member of {@code etcd}, on free loopback ports.
     *
     * @return the links (close them)
     */
    static EtcdLinks to(EtcdCluster etcd) {
        List<TcpProxy> ps = new ArrayList<>();
        for (int i = 0; i < etcd.size(); i++) {
            ps.add(TcpProxy.start(etcd.clientPort(i)));
        }
        return new EtcdLinks(ps);
    }

    /** Returns the proxied endpoints, comma-separated, in member order (for {@code --etcd}). */
    String endpoints() {
        return endpointList().stream().collect(Collectors.joining(","));
    }

    /** Returns the proxied endpoints in member order. */
    List<String> endpointList() {
        return proxies.stream().map(TcpProxy::endpoint).toList();
    }

    /** Returns the proxy in front of member {@code i}. */
    TcpProxy link(int i) {
        return proxies.get(i);
    }

    /** Partitions (true) or heals (false) the path to every member at once ({@link TcpProxy#blackhole(boolean)}). */
    void partition(boolean on) {
        proxies.forEach(p -> p.blackhole(on));
    }

    /** Resets every connection to every member ({@link TcpProxy#cut()}). */
    void cut() {
        proxies.forEach(TcpProxy::cut);
    }

    /** Returns the bytes sent to etcd through all links. */
    long bytesToEtcd() {
        return proxies.stream().mapToLong(TcpProxy::bytesToTarget).sum();
    }

    /** Returns the bytes received from etcd through all links. */
    long bytesFromEtcd() {
        return proxies.stream().mapToLong(TcpProxy::bytesToClient).sum();
    }

    @Override
    public void close() {
        proxies.forEach(TcpProxy::close);
    }
}
