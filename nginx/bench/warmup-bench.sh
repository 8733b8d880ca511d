#!/usr/bin/env bash
# Start-up and warm-up of a fresh Levee stack (docs/BENCHMARKS.md, "Start-up and warm-up").
#
# For each mode (off: no AOT cache; on: the cache given in AOT), starts an observer, four limiters (factor 4) and
# levee-client together as separate `levee` processes, and reports:
#   - per role, the time from launch to its first answer on /health (any status) and to 200 (ready);
#   - the checks/s levee-client serves (wrk, 32 connections, the check rate.lua's subrequest sends) in each of the
#     first SECONDS one-second slices after the client is ready, against the warm rate of the same stack measured
#     WARM_AFTER later, and the first second at which 90 % of it was reached.
# Modes alternate (off on off on ... RUNS times each) so that both see the same machine.
#
# Usage: nginx/bench/warmup-bench.sh [SECONDS] [RUNS]       (defaults: 15 2)
# Environment: AOT (the cache; default levee-cli/target/levee.aot, made by scripts/aot-cache), MODES (default
# "off on"), WARM_AFTER (default 45s of traffic before the warm measurement), KEEP=1 keeps the logs.
# On a shared machine run it as `scripts/bench-priority nginx/bench/warmup-bench.sh`.
# Needs: wrk, a JDK >= 25 for the cache (scripts/java-env.sh finds one).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SECONDS_N="${1:-15}"
RUNS="${2:-2}"
AOT="${AOT:-$ROOT/levee-cli/target/levee.aot}"
WARM_AFTER="${WARM_AFTER:-45}"
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 1; }
[ -f "$AOT" ] || [ "${MODES:-off on}" = off ] || { echo "no AOT cache at $AOT (scripts/aot-cache makes one)" >&2; exit 1; }

WORK="$(mktemp -d /tmp/levee-warmup.XXXXXX)"
PIDS=()
stop_all() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PIDS=()
}
cleanup() { stop_all; if [ -z "${KEEP:-}" ]; then rm -rf "$WORK"; else echo "kept $WORK" >&2; fi; }
trap cleanup EXIT

free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  echo "no free port" >&2; return 1
}
http_status() { # status of GET http://127.0.0.1:$1/health, 000 when nothing answers
  local line
  if { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null; then
    printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
    read -r -t 2 line <&3 || true
    exec 3>&-
    echo "${line:9:3}"
  else
    echo 000
  fi
}
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

cat > "$WORK/quotas.yaml" <<EOF
factor: 4
default: {rate: 1000000, burst: 100000}
EOF
cat > "$WORK/check.lua" <<'EOF'
wrk.method = "GET"
wrk.path = "/v1/s3check"
wrk.headers["X-Levee-Method"] = "GET"
wrk.headers["X-Levee-Host"] = "127.0.0.1"
wrk.headers["X-Levee-Uri"] = "/levee/obj"
EOF
rps() { # DURATION PORT: checks/s wrk completed
  wrk -t1 -c32 -d"$1" -s "$WORK/check.lua" "http://127.0.0.1:$2" 2>/dev/null \
    | awk '/^Requests\/sec:/ {printf "%d", $2}'
}

run() { # MODE RUN
  local mode="$1" n="$2" opts="" obs client ports=() names=() launch=() first=() ready=() i role
  [ "$mode" = on ] && opts="-XX:AOTCache=$AOT -Xlog:aot*=off"
  obs=$(free_port); client=$(free_port)
  names=(observer limiter-1 limiter-2 limiter-3 limiter-4 client)
  ports=("$obs" "$(free_port)" "$(free_port)" "$(free_port)" "$(free_port)" "$client")
  local logs="$WORK/$mode-$n"; mkdir -p "$logs"
  for i in "${!names[@]}"; do
    role="${names[$i]}"
    launch[$i]=$(now_ms)
    case "$role" in
      observer) LEVEE_JAVA_OPTS="$opts" "$ROOT/levee" observer --listen "127.0.0.1:${ports[$i]}" \
                  --factor 4 --log-target "file:$logs/$role.log" >"$logs/$role.out" 2>&1 & ;;
      limiter-*) LEVEE_JAVA_OPTS="$opts" "$ROOT/levee" limiter --id "${role#limiter-}" \
                  --listen "127.0.0.1:${ports[$i]}" --observer "127.0.0.1:$obs" --quotas "$WORK/quotas.yaml" \
                  --log-target "file:$logs/$role.log" >"$logs/$role.out" 2>&1 & ;;
      client) LEVEE_JAVA_OPTS="$opts" "$ROOT/levee" client --listen "127.0.0.1:${ports[$i]}" \
                  --observer "127.0.0.1:$obs" --log-target "file:$logs/$role.log" >"$logs/$role.out" 2>&1 & ;;
    esac
    PIDS+=($!)
  done
  local deadline=$(( $(now_ms) + 60000 )) pending=1 code t
  while [ "$pending" = 1 ] && [ "$(now_ms)" -lt "$deadline" ]; do
    pending=0
    for i in "${!names[@]}"; do
      [ -n "${ready[$i]:-}" ] && continue
      code=$(http_status "${ports[$i]}"); t=$(now_ms)
      [ "$code" != 000 ] && [ -z "${first[$i]:-}" ] && first[$i]=$((t - launch[i]))
      if [ "$code" = 200 ]; then ready[$i]=$((t - launch[i])); else pending=1; fi
    done
    sleep 0.05 # polling processes started above; bounded by the 60 s deadline
  done
  [ "$pending" = 0 ] || { echo "$mode run $n: the stack did not come up in 60 s; logs in $logs" >&2; KEEP=1; exit 1; }
  local line="" slices=() s
  for i in "${!names[@]}"; do line="$line ${names[$i]} ${first[$i]}/${ready[$i]}"; done
  for s in $(seq 1 "$SECONDS_N"); do slices+=("$(rps 1s "$client")"); done
  rps "${WARM_AFTER}s" "$client" >/dev/null
  local warm; warm="$(rps 5s "$client")"
  local reach="-"
  for s in "${!slices[@]}"; do
    if [ "${slices[$s]:-0}" -ge $((warm * 9 / 10)) ]; then reach=$((s + 1)); break; fi
  done
  printf '%-3s run %d | ms to first answer/ready:%s\n' "$mode" "$n" "$line"
  printf '%-3s run %d | checks/s per second: %s | warm %s | 90 %% of warm in second %s\n' "$mode" "$n" \
    "${slices[*]}" "$warm" "$reach"
  stop_all
}

echo "warmup-bench: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(cat /proc/self/autogroup 2>/dev/null || echo no autogroup), AOT cache $AOT" \
  "($(du -m "$AOT" 2>/dev/null | cut -f1) MiB)"
for n in $(seq 1 "$RUNS"); do
  for mode in ${MODES:-off on}; do run "$mode" "$n"; done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
