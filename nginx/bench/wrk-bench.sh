#!/usr/bin/env bash
# Benchmark of Levee's NGINX enforcement point (docs/BENCHMARKS.md, "NGINX enforcement point").
#
# One NGINX on loopback serves small GETs from a tiny upstream (a second server of the same NGINX
# answering `return 200`, reached by proxy_pass over keep-alive, so the access phase runs before
# it) through three locations, measured one after the other with wrk in one run:
#   /none/      no limiting
#   /limitreq/  nginx limit_req with a generous zone (1M r/s, never refuses)
#   /levee/     rate.lua asking levee-client --no-leases, with a generous Levee quota (never refuses): the
#               per-request path, every check decided by a limiter
#   /cosocket/  the same with rate.lua's cosocket transport: levee-line/1 over pooled connections to the
#               same levee-client's --line-listen, no subrequest (docs/nginx.md, "Transports")
#   /ideal/     rate.lua with the same check location answered by NGINX itself: the bound for any levee-client
#   /lease/     rate.lua asking a second levee-client, with leases (its default, given the limiters' --quotas): the hot bucket's checks are
#               admitted from request leases, without a limiter per check (docs/design.md §12)
#   /batch/     the same with rate.lua's batches = true: the levee-client --leases hands NGINX batches of leased
#               slots, and NGINX admits the hot bucket's requests from them without a check each
#               (docs/design.md §12, "Batches in NGINX")
# (No /ideal-cosocket/ row: a null line server inside NGINX would need the stream module, which Debian ships
# apart (libnginx-mod-stream), and stream's `return` closes the connection after each answer, so it would
# measure a connect per check rather than a pooled check.)
# Levee runs as in production: observer, two limiters and levee-client as separate processes (and the second
# levee-client of /lease/).
# Each location gets a closed-loop run at --conns connections (throughput) and one at a single
# connection (latency of one request at a time). A fourth row sends the check alone, straight to
# levee-client, to split Levee's cost between NGINX's subrequest and levee-client + limiter.
#
# Usage: nginx/bench/wrk-bench.sh [DURATION] [CONNS]      (defaults: 15s 32)
# Environment: WORKERS (NGINX worker_processes, default 1), LOG_LEVEL (levee roles, default INFO),
# CLIENT_OPTS (extra levee client flags, e.g. "--limiter-in-flight 1"),
# WARMUP (default 20s), KEEP=1 keeps the work directory with every log and wrk output,
# ROWS (locations measured, default "none limitreq levee cosocket ideal lease batch client"),
# OPEN_LOOP=1 adds open-loop rows at OPEN_LOOP_FRACTION (default 0.5) of /levee/'s rate (OPEN_LOOP_DURATION, default 15s, after 15 s of warm-up each;
# OPEN_LOOP_ROUNDS, default 2) through `levee bench http` on Epsilon, or through wrk2 (a C generator, open loop,
# latency from the scheduled send time, its first 10 s of calibration discarded) when WRK2 names its binary,
# e.g. WRK2=/tmp/wrk2/wrk after `git clone https://github.com/giltene/wrk2 /tmp/wrk2 && make -C /tmp/wrk2`,
# ROW_TIMES=FILE appends "location conns start-ns end-ns requests" per row (to cut a JFR recording by row),
# CLIENT_JAVA_OPTS / LIMITER_JAVA_OPTS (extra JVM options of levee-client / each limiter; "%r" in them
# becomes the role's name, e.g. LIMITER_JAVA_OPTS='-XX:StartFlightRecording=filename=/tmp/%r.jfr,settings=profile').
# Needs: nginx + libnginx-mod-http-lua (or OpenResty), wrk, a JDK >= 21.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DURATION="${1:-15s}"
CONNS="${2:-32}"
WARMUP="${WARMUP:-20s}"
CLIENT_JAVA_OPTS="${CLIENT_JAVA_OPTS:-}"   # set -u: "${X//%r/...}" of an unset X is an error
LIMITER_JAVA_OPTS="${LIMITER_JAVA_OPTS:-}"
NGINX="${LEVEE_NGINX:-$(command -v nginx || command -v openresty || echo /usr/sbin/nginx)}"
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 1; }
[ -x "$NGINX" ] || { echo "nginx is not installed (apt-get install nginx libnginx-mod-http-lua)" >&2; exit 1; }

WORK="$(mktemp -d /tmp/levee-wrk.XXXXXX)"
chmod 755 "$WORK"
mkdir -p "$WORK/lua" "$WORK/logs" "$WORK/tmp"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -z "${KEEP:-}" ]; then rm -rf "$WORK"; else echo "kept $WORK" >&2; fi
}
trap cleanup EXIT

free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  echo "no free port" >&2; return 1
}
# status code of GET http://127.0.0.1:$1$2 (000 when nothing answers)
http_status() {
  local line
  if { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null; then
    printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
    read -r -t 2 line <&3 || true
    exec 3>&-
    echo "${line:9:3}"
  else
    echo 000
  fi
}
wait_for() { # port path what
  for _ in $(seq 1 300); do
    [ "$(http_status "$1" "$2")" = 200 ] && return 0
    sleep 0.1 # polling a process started above for readiness; bounded to 30 s
  done
  echo "$3 did not come up; logs in $WORK/logs" >&2; KEEP=1; exit 1
}

LEVEE=("$ROOT/levee")
LIMITER_PIDS=()
OBS=$(free_port); L1=$(free_port); L2=$(free_port); CLIENT=$(free_port); S3=$(free_port); TINY=$(free_port)
LINE=$(free_port); LEASE_CLIENT=$(free_port)
# a generous quota that never refuses; a burst of 50 000 keeps τ + T at 100 ms, within the 200 ms a request lease
# may last (a key with a longer τ + T is never leased, docs/design.md §12)
cat > "$WORK/quotas.yaml" <<EOF
factor: 2
default: {rate: 1000000, burst: 50000}
EOF

"${LEVEE[@]}" --version >/dev/null # builds the jar once if needed
LEVEL="${LOG_LEVEL:-INFO}" # INFO: every decision is logged, as in production
"${LEVEE[@]}" observer --listen "127.0.0.1:$OBS" --quotas "$WORK/quotas.yaml" --log-target "file:$WORK/logs/observer.log" &
PIDS+=($!)
wait_for "$OBS" /v1/limiters observer
for i in 1 2; do
  port=$L1; [ "$i" = 2 ] && port=$L2
  LEVEE_JAVA_OPTS="${LEVEE_JAVA_OPTS:-} ${LIMITER_JAVA_OPTS//%r/limiter-$i}" "${LEVEE[@]}" limiter --id "limiter-$i" --listen "127.0.0.1:$port" --observer "127.0.0.1:$OBS" \
    --quotas "$WORK/quotas.yaml" --log-target "file:$WORK/logs/limiter-$i.log" --log-level "$LEVEL" &
  PIDS+=($!)
  LIMITER_PIDS+=($!)
done
LEVEE_JAVA_OPTS="${LEVEE_JAVA_OPTS:-} ${CLIENT_JAVA_OPTS//%r/client}" "${LEVEE[@]}" client --listen "127.0.0.1:$CLIENT" --line-listen "127.0.0.1:$LINE" --observer "127.0.0.1:$OBS" --no-leases --log-target "file:$WORK/logs/client.log" \
  --log-level "$LEVEL" ${CLIENT_OPTS:-} &
PIDS+=($!)
CLIENT_PID=$!
LEVEE_JAVA_OPTS="${LEVEE_JAVA_OPTS:-} ${CLIENT_JAVA_OPTS//%r/lease-client}" "${LEVEE[@]}" client --listen "127.0.0.1:$LEASE_CLIENT" --observer "127.0.0.1:$OBS" \
  --leases --quotas "$WORK/quotas.yaml" --log-target "file:$WORK/logs/lease-client.log" --log-level "$LEVEL" ${CLIENT_OPTS:-} &
PIDS+=($!)
LEASE_CLIENT_PID=$!
wait_for "$CLIENT" /health levee-client
wait_for "$LEASE_CLIENT" /health "levee-client --leases"

"${LEVEE[@]}" nginx-config --part lua > "$WORK/lua/rate.lua"
{
  "${LEVEE[@]}" nginx-config --part full | grep '^load_module' || true
  cat <<EOF
worker_processes ${WORKERS:-1};
pid logs/nginx.pid;
error_log logs/error.log warn;
events { worker_connections 4096; }
http {
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    access_log off;
$("${LEVEE[@]}" nginx-config --part http --client "127.0.0.1:$CLIENT" --lua-dir "$WORK/lua")
    limit_req_zone \$binary_remote_addr zone=bench:1m rate=1000000r/s;
    upstream levee_lease {
        server 127.0.0.1:$LEASE_CLIENT;
        keepalive 32;
    }
    upstream tiny {
        server 127.0.0.1:$TINY;
        keepalive 64;
    }
    server {
        listen 127.0.0.1:$TINY;
        location / { return 200 "ok\n"; }
        # the check answered by NGINX itself: what rate.lua + the subrequest cost with a free levee-client
        location = /check { add_header X-Levee-Result accepted; return 200; }
        location = /levee/stats {
            content_by_lua_block {
                local s = require("rate").stats()
                ngx.say(s.accepted, " accepted (", s.batched, " of them from batches), ", s.rejected, " rejected, ", s.failed, " failed")
            }
        }
    }
    server {
        listen 127.0.0.1:$S3;
$("${LEVEE[@]}" nginx-config --part check)
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        location /none/ { proxy_pass http://tiny; }
        location /limitreq/ { limit_req zone=bench burst=1000 nodelay; proxy_pass http://tiny; }
        location /levee/ {
            access_by_lua_block { require("rate").attempt("/.levee") }
            proxy_pass http://tiny;
        }
        location /cosocket/ {
            access_by_lua_block { require("rate").attempt("/.levee", { transport = "cosocket", host = "127.0.0.1", port = $LINE }) }
            proxy_pass http://tiny;
        }
        # the generated check location, pointed at NGINX's own /check instead of levee-client
$("${LEVEE[@]}" nginx-config --part check | awk '/^location = /,/^}/' | sed -e 's|^location = /.levee|location = /.ideal|' -e 's|http://levee_client/v1/s3check|http://tiny/check|')
        location /ideal/ {
            access_by_lua_block { require("rate").attempt("/.ideal") }
            proxy_pass http://tiny;
        }
        # the generated check location, pointed at the levee-client with --leases
$("${LEVEE[@]}" nginx-config --part check | awk '/^location = /,/^}/' | sed -e 's|^location = /.levee|location = /.lease|' -e 's|http://levee_client/v1/s3check|http://levee_lease/v1/s3check|')
        location /lease/ {
            access_by_lua_block { require("rate").attempt("/.lease") }
            proxy_pass http://tiny;
        }
        location /batch/ {
            access_by_lua_block { require("rate").attempt("/.lease", { batches = true }) }
            proxy_pass http://tiny;
        }
    }
}
EOF
} > "$WORK/nginx.conf"
"$NGINX" -p "$WORK/" -c "$WORK/nginx.conf" -g 'daemon off;' 2>"$WORK/logs/nginx.stderr" &
PIDS+=($!)
NGINX_PID=$!
wait_for "$S3" /none/x nginx
for loc in none limitreq levee cosocket ideal lease batch; do
  [ "$(http_status "$S3" "/$loc/x")" = 200 ] || { echo "/$loc/ does not answer 200" >&2; KEEP=1; exit 1; }
done

LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "warming up the JVMs for $WARMUP through each transport..." >&2
wrk -t1 -c"$CONNS" -d"$WARMUP" "http://127.0.0.1:$S3/levee/warm" >/dev/null
wrk -t1 -c"$CONNS" -d"$WARMUP" "http://127.0.0.1:$S3/cosocket/warm" >/dev/null
wrk -t1 -c"$CONNS" -d"$WARMUP" "http://127.0.0.1:$S3/lease/warm" >/dev/null
wrk -t1 -c"$CONNS" -d"$WARMUP" "http://127.0.0.1:$S3/batch/warm" >/dev/null

to_ms() { # wrk latency such as 812.00us, 1.23ms, 2.00s
  awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n *= 1; else if (v ~ /s$/) n *= 1000; printf "%.3f", n }'
}
# the check alone, as rate.lua's subrequest sends it, straight to levee-client (no NGINX)
cat > "$WORK/check.lua" <<'EOF'
wrk.method = "GET"
wrk.path = "/v1/s3check"
wrk.headers["X-Levee-Method"] = "GET"
wrk.headers["X-Levee-Host"] = "127.0.0.1"
wrk.headers["X-Levee-Uri"] = "/levee/obj"
EOF
# CPU time in clock ticks of processes and their children (the launcher execs the JVM; NGINX's
# workers are children of its master), and of the whole machine (busy ticks from /proc/stat)
ticks() {
  local t=0 pid child
  for pid in "$@"; do
    for child in "$pid" $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
      t=$((t + $(awk '{print $14 + $15}' /proc/"$child"/stat 2>/dev/null || echo 0)))
    done
  done
  echo "$t"
}
busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
HZ="$(getconf CLK_TCK)"
LOCS="${ROWS:-none limitreq levee cosocket ideal lease batch client}"
declare -A RPS P50 P99 ERR CPU_NGINX CPU_CLIENT CPU_LIMITERS CPU_ALL
run() { # name conns
  local out n0 c0 l0 a0 n1 c1 l1 a1 t0 t1 cpid="$CLIENT_PID"
  { [ "$1" = lease ] || [ "$1" = batch ]; } && cpid="$LEASE_CLIENT_PID" # the row's own levee-client
  n0=$(ticks "$NGINX_PID"); c0=$(ticks "$cpid"); l0=$(ticks "${LIMITER_PIDS[@]}"); a0=$(busy); t0=$(date +%s%N)
  if [ "$1" = client ]; then
    out="$(wrk -t1 -c"$2" -d"$DURATION" --latency -s "$WORK/check.lua" "http://127.0.0.1:$CLIENT")"
  else
    out="$(wrk -t1 -c"$2" -d"$DURATION" --latency "http://127.0.0.1:$S3/$1/obj")"
  fi
  t1=$(date +%s%N); n1=$(ticks "$NGINX_PID"); c1=$(ticks "$cpid"); l1=$(ticks "${LIMITER_PIDS[@]}"); a1=$(busy)
  echo "$out" > "$WORK/logs/wrk-$1-c$2.txt"
  local reqs
  reqs="$(awk '/requests in/ {print $1}' <<<"$out")"
  [ -n "${ROW_TIMES:-}" ] && echo "$1 $2 $t0 $t1 $reqs" >> "$ROW_TIMES"
  per() { awk -v t="$1" -v n="$reqs" -v hz="$HZ" 'BEGIN { if (n > 0) printf "%.1f", t / hz * 1e6 / n; else print "-" }'; }
  CPU_NGINX[$1.$2]="$(per $((n1 - n0)))"; CPU_CLIENT[$1.$2]="$(per $((c1 - c0)))"
  CPU_LIMITERS[$1.$2]="$(per $((l1 - l0)))"; CPU_ALL[$1.$2]="$(per $((a1 - a0)))"
  RPS[$1.$2]="$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")"
  P50[$1.$2]="$(to_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")"
  P99[$1.$2]="$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")"
  ERR[$1.$2]="$(awk '/Non-2xx or 3xx responses:/ {print $5}' <<<"$out")"
}
for c in "$CONNS" 1; do
  for loc in $LOCS; do
    echo "wrk $loc with $c connection(s) for $DURATION..." >&2
    run "$loc" "$c"
  done
done
exec 3<>"/dev/tcp/127.0.0.1/$TINY"
printf 'GET /levee/stats HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
checks="$(tail -n 1 <&3)"
exec 3>&-
# checks each role served over the whole run (warm-up included), from its own counters
served() { # port metric
  exec 3<>"/dev/tcp/127.0.0.1/$1"
  printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  awk -v m="$2" '$1 ~ "^" m "\\{" && $1 ~ /result="(accepted|rejected)"/ { n += $2 } END { printf "%.0f", n }' <&3
  exec 3>&-
}
SERVED_CLIENT="$(served "$CLIENT" levee_client_results_total)"
SERVED_LIMITERS=$(( $(served "$L1" levee_limiter_decisions_total) + $(served "$L2" levee_limiter_decisions_total) ))
batches() { # port: "batches checks" of POST /v1/checks
  exec 3<>"/dev/tcp/127.0.0.1/$1"
  printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  awk '$1 ~ /^levee_limiter_batch_checks_count/ { n += $2 } $1 ~ /^levee_limiter_batch_checks_sum/ { c += $2 } END { printf "%.0f %.0f", n, c }' <&3
  exec 3>&-
}
read -r B1 C1 <<<"$(batches "$L1")"; read -r B2 C2 <<<"$(batches "$L2")"

echo
echo "NGINX enforcement point on $(nproc) cores: wrk -t1 -d$DURATION, NGINX worker_processes ${WORKERS:-1}, levee log level $LEVEL, $(date -u +%Y-%m-%d), load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-14s %6s %12s %9s %9s %10s %10s %8s\n' location conns "req/s" "p50 ms" "p99 ms" "vs none" "p99 +ms" non-2xx
for c in "$CONNS" 1; do
  for loc in $LOCS; do
    name="/$loc/"; [ "$loc" = client ] && name="(check alone)"
    printf '%-14s %6s %12s %9s %9s %9s%% %10s %8s\n' "$name" "$c" "${RPS[$loc.$c]}" "${P50[$loc.$c]}" "${P99[$loc.$c]}" \
      "$(awk -v a="${RPS[$loc.$c]}" -v b="${RPS[none.$c]:-}" 'BEGIN { if (b > 0) printf "%.0f", 100 * a / b; else print "-" }')" \
      "$(awk -v a="${P99[$loc.$c]}" -v b="${P99[none.$c]:-}" 'BEGIN { if (b != "") printf "%+.3f", a - b; else print "-" }')" "${ERR[$loc.$c]:-0}"
  done
done
echo
echo "CPU per request (us; clock ticks of 1/$HZ s over the run, divided by the requests wrk completed)"
printf '%-14s %6s %8s %8s %9s %8s\n' location conns nginx client limiters machine
for c in "$CONNS" 1; do
  for loc in $LOCS; do
    name="/$loc/"; [ "$loc" = client ] && name="(check alone)"
    printf '%-14s %6s %8s %8s %9s %8s\n' "$name" "$c" "${CPU_NGINX[$loc.$c]}" "${CPU_CLIENT[$loc.$c]}" \
      "${CPU_LIMITERS[$loc.$c]}" "${CPU_ALL[$loc.$c]}"
  done
done
echo "rate.lua counters (warm-up included): $checks"
echo "checks decided over the whole run (warm-up included): levee-client $SERVED_CLIENT, limiters $SERVED_LIMITERS;" \
  "$((B1 + B2)) batches carried $((C1 + C2)) of them"
echo "(check alone) = wrk straight to levee-client's GET /v1/s3check with the headers rate.lua's subrequest sends"
echo "/ideal/ = rate.lua and the generated check location, answered by NGINX itself (a levee-client that costs nothing)"
echo "/cosocket/ = rate.lua's cosocket transport to the same levee-client's line endpoint (no subrequest)"
echo "/lease/ = rate.lua asking a second levee-client with --leases: hot keys admitted from request leases"
echo "/batch/ = the same with rate.lua's batches = true: NGINX admits from batches of leased slots, no check each"
ratio() { awk -v a="${RPS[$1]:-}" -v b="${RPS[$2]:-}" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }
SERVED_LEASE="$(served "$LEASE_CLIENT" levee_client_results_total)"
exec 3<>"/dev/tcp/127.0.0.1/$LEASE_CLIENT"
printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
read -r FROM_LEASES BATCH_SLOTS <<<"$(awk '$1 ~ /^levee_client_lease_admissions_total\{/ && $1 ~ /result="admitted"/ { n += $2 }
  $1 ~ /^levee_client_lease_batch_slots_total/ { b += $2 } END { printf "%.0f %.0f", n, b }' <&3)"
exec 3>&-
echo "levee-client --leases decided $SERVED_LEASE checks over the whole run, $FROM_LEASES of them from leases," \
  "and handed NGINX $BATCH_SLOTS slots in batches"
# issue 23's targets, read against /none/ of the same run: throughput, levee-client + limiters CPU per request, and
# the p50 overhead at one connection against today's (/levee/, a check per request)
for loc in lease batch; do
  for c in "$CONNS" 1; do
    [ -n "${RPS[$loc.$c]:-}" ] || continue
    cpu_ratio="$(awk -v a="${CPU_CLIENT[$loc.$c]}" -v l="${CPU_LIMITERS[$loc.$c]}" -v n="${CPU_NGINX[none.$c]:-}" 'BEGIN { if (n > 0) printf "%.2f", (a + l) / n; else print "-" }')"
    echo "connections $c: /$loc/ $(ratio "$loc.$c" "none.$c")x /none/ throughput, $(ratio "$loc.$c" "levee.$c")x /levee/;" \
      "levee-client + limiters CPU per request $cpu_ratio x NGINX's per /none/ request;" \
      "p50 over /none/: /$loc/ $(awk -v a="${P50[$loc.$c]:-}" -v b="${P50[none.$c]:-}" 'BEGIN { printf "%+.3f", a - b }') ms," \
      "/levee/ $(awk -v a="${P50[levee.$c]:-}" -v b="${P50[none.$c]:-}" 'BEGIN { printf "%+.3f", a - b }') ms"
  done
done
for c in "$CONNS" 1; do
  [ -n "${RPS[cosocket.$c]:-}" ] || continue
  echo "connections $c: /cosocket/ throughput $(ratio "cosocket.$c" "levee.$c")x /levee/, $(ratio "cosocket.$c" "ideal.$c")x /ideal/," \
    "$(ratio "cosocket.$c" "none.$c")x /none/; /levee/ $(ratio "levee.$c" "ideal.$c")x /ideal/, $(ratio "levee.$c" "none.$c")x /none/"
done

# Open loop (issue 12, item 5): the same locations at one fixed rate — OPEN_LOOP_FRACTION (default 0.5) of what
# /levee/ served at CONNS connections above — from `levee bench http` on Epsilon (a generator that cannot pause),
# latency from each request's scheduled send time, /none/ first so that every row's p99 is read against it.
if [ -n "${OPEN_LOOP:-}" ] && [ -n "${RPS[levee.$CONNS]:-}" ]; then
  rate="$(awk -v r="${RPS[levee.$CONNS]}" -v f="${OPEN_LOOP_FRACTION:-0.5}" 'BEGIN { printf "%.0f", r * f }')"
  urls=(--url "http://127.0.0.1:$S3/none/obj" --url "http://127.0.0.1:$S3/levee/obj")
  [ -n "${RPS[cosocket.$CONNS]:-}" ] && urls+=(--url "http://127.0.0.1:$S3/cosocket/obj")
  echo "open loop at $rate requests/s (${OPEN_LOOP_FRACTION:-0.5} of /levee/ at $CONNS connections)..." >&2
  echo
  gc() { # port: "pauses seconds-in-pauses longest" from the role's jvm_gc_pause_seconds
    exec 3<>"/dev/tcp/127.0.0.1/$1"
    printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
    awk '$1 ~ /^jvm_gc_pause_seconds_count/ { n += $2 } $1 ~ /^jvm_gc_pause_seconds_sum/ { s += $2 }
         $1 ~ /^jvm_gc_pause_seconds_max/ { if ($2 > m) m = $2 } END { printf "%d %.4f %.4f", n, s, m }' <&3
    exec 3>&-
  }
  read -r gc0c _ <<<"$(gc "$CLIENT")"; read -r gc0a _ <<<"$(gc "$L1")"; read -r gc0b _ <<<"$(gc "$L2")"
  if [ -n "${WRK2:-}" ]; then
    [ -x "$WRK2" ] || { echo "WRK2=$WRK2 is not an executable (wrk2's binary)" >&2; exit 1; }
    secs="${OPEN_LOOP_DURATION:-15s}"; secs="${secs%s}"
    case "$secs" in ''|*[!0-9]*) echo "OPEN_LOOP_DURATION with WRK2: whole seconds, e.g. 15s" >&2; exit 1 ;; esac
    mapfile -t locs < <(printf '%s\n' "${urls[@]}" | grep '^http')
    echo "| round | location | requests/s | p50 ms | p99 ms | p99.9 ms | max ms |"
    echo "|---:|---|---:|---:|---:|---:|---:|"
    for round in $(seq 1 "${OPEN_LOOP_ROUNDS:-2}"); do
      order=("${locs[@]}")
      if [ $((round % 2)) -eq 0 ]; then mapfile -t order < <(printf '%s\n' "${locs[@]}" | tac); fi # ABBA
      for u in "${order[@]}"; do
        # 10 s of wrk2's calibration (not recorded) + 32 connections x 5 ms staggered, then the measured seconds
        out="$("$WRK2" -t1 -c32 -d"$((secs + 11))s" -R"$rate" --latency "$u" 2>&1)" || { echo "$out" >&2; exit 1; }
        echo "$out" >"$WORK/wrk2-$round-$(basename "$(dirname "$u")").txt"
        awk -v round="$round" -v loc="$(basename "$(dirname "$u")")" '
          function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /m$/) return v * 60000;
                           if (v ~ /s$/) return v * 1000; return v }
          /Recorded Latency/ { on = 1 } /Detailed Percentile/ { on = 0 }
          on && $1 == "50.000%" { p50 = ms($2) } on && $1 == "99.000%" { p99 = ms($2) }
          on && $1 == "99.900%" { p999 = ms($2) } on && $1 == "100.000%" { mx = ms($2) }
          /^Requests\/sec:/ { rps = $2 }
          END { printf "| %d | /%s/ | %.0f | %.2f | %.2f | %.2f | %.2f |\n", round, loc, rps, p50, p99, p999, mx }' <<<"$out"
      done
    done
  else
    LEVEE_JAVA_OPTS="-XX:+UnlockExperimentalVMOptions -XX:+UseEpsilonGC -Xms8g -Xmx8g" \
      "${LEVEE[@]}" bench http "${urls[@]}" --rate "$rate" --duration "${OPEN_LOOP_DURATION:-15s}" --warmup 15s \
      --connections 64 --rounds "${OPEN_LOOP_ROUNDS:-2}" 2>&1
  fi
  read -r gc1c _ m1c <<<"$(gc "$CLIENT")"; read -r gc1a _ m1a <<<"$(gc "$L1")"; read -r gc1b _ m1b <<<"$(gc "$L2")"
  echo "GC pauses during the open loop (warm-up included): levee-client $((gc1c - gc0c)), limiters $((gc1a - gc0a))" \
    "and $((gc1b - gc0b)); longest recent pause (jvm_gc_pause_seconds_max) $m1c / $m1a / $m1b s"
fi
