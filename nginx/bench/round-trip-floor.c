/*
 * The kernel's floor under a check: CPU per loopback round trip, measured at each end, with nothing else in the
 * process (docs/BENCHMARKS.md, "The kernel's share of a check"). A client process writes a request and reads the
 * answer; a server process waits in epoll_wait, reads the request and writes the answer, as an event loop does.
 * Each end prints its CPU (user + system, getrusage) per round trip. Loopback only.
 *
 * Usage: round-trip-floor tcp|unix ROUND_TRIPS [REQUEST_BYTES [ANSWER_BYTES]]   (defaults 120 and 40)
 * Build: cc -O2 -o round-trip-floor round-trip-floor.c      (nginx/bench/round-trip-floor.sh does both)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static double cpu_seconds(double *sys) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    *sys = r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6;
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + *sys;
}

static void die(const char *what) {
    perror(what);
    exit(2);
}

/* reads exactly n bytes */
static void read_all(int fd, char *buf, int n) {
    for (int got = 0; got < n;) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0) die("read");
        got += (int) r;
    }
}

int main(int argc, char **argv) {
    if (argc < 3 || (strcmp(argv[1], "tcp") && strcmp(argv[1], "unix")) || atol(argv[2]) < 1) {
        fprintf(stderr, "usage: round-trip-floor tcp|unix ROUND_TRIPS [REQUEST_BYTES [ANSWER_BYTES]]\n");
        return 2;
    }
    int unix_socket = !strcmp(argv[1], "unix");
    long n = atol(argv[2]);
    int req = argc > 3 ? atoi(argv[3]) : 120, ans = argc > 4 ? atoi(argv[4]) : 40;
    if (req < 1 || req > 4096 || ans < 1 || ans > 4096) {
        fprintf(stderr, "round-trip-floor: message sizes are 1-4096 bytes\n");
        return 2;
    }
    static char buf[4096];
    memset(buf, 'x', sizeof buf);
    int one = 1, ls;
    struct sockaddr_un ua = {0};
    struct sockaddr_in ia = {0};
    struct sockaddr *addr;
    socklen_t len;
    if (unix_socket) {
        ua.sun_family = AF_UNIX;
        snprintf(ua.sun_path, sizeof ua.sun_path, "/tmp/round-trip-floor.%d.sock", (int) getpid());
        addr = (struct sockaddr *) &ua;
        len = sizeof ua;
    } else {
        ia.sin_family = AF_INET;
        ia.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* port 0: the kernel picks one */
        addr = (struct sockaddr *) &ia;
        len = sizeof ia;
    }
    if ((ls = socket(addr->sa_family, SOCK_STREAM, 0)) < 0) die("socket");
    if (bind(ls, addr, len) < 0) die("bind");
    if (listen(ls, 1) < 0) die("listen");
    if (!unix_socket && getsockname(ls, addr, &len) < 0) die("getsockname");
    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) { /* the client end */
        int c = socket(addr->sa_family, SOCK_STREAM, 0);
        if (c < 0 || connect(c, addr, len) < 0) die("connect");
        if (!unix_socket) setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        double sys0, sys1, t0 = cpu_seconds(&sys0);
        for (long i = 0; i < n; i++) {
            if (write(c, buf, req) != req) die("write");
            read_all(c, buf, ans);
        }
        double t1 = cpu_seconds(&sys1);
        printf("%s client: %.2f us CPU per round trip (system %.2f)\n", argv[1], (t1 - t0) * 1e6 / n,
               (sys1 - sys0) * 1e6 / n);
        return 0;
    }
    int fd = accept(ls, NULL, NULL);
    if (fd < 0) die("accept");
    if (!unix_socket) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll");
    double sys0, sys1, t0 = cpu_seconds(&sys0);
    for (long i = 0; i < n; i++) {
        if (epoll_wait(ep, &ev, 1, -1) != 1) die("epoll_wait");
        read_all(fd, buf, req);
        if (write(fd, buf, ans) != ans) die("write");
    }
    double t1 = cpu_seconds(&sys1);
    int status;
    waitpid(child, &status, 0);
    fflush(stdout);
    printf("%s server: %.2f us CPU per round trip (system %.2f)\n", argv[1], (t1 - t0) * 1e6 / n,
           (sys1 - sys0) * 1e6 / n);
    if (unix_socket) unlink(ua.sun_path);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
