#!/usr/bin/env bash
# CPU per loopback round trip at each end, with nothing else in either process: the kernel's floor under the
# hops of a check (docs/BENCHMARKS.md, "The kernel's share of a check"). Builds round-trip-floor.c with cc and
# runs it ROUNDS times over TCP and over a Unix socket, alternating.
# Usage: nginx/bench/round-trip-floor.sh [ROUND_TRIPS [ROUNDS]]   (defaults 200000 and 2)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
n="${1:-200000}" rounds="${2:-2}"
case "$n$rounds" in *[!0-9]*|'') echo "usage: $0 [ROUND_TRIPS [ROUNDS]] (whole numbers)" >&2; exit 2 ;; esac
command -v cc >/dev/null || { echo "round-trip-floor: needs a C compiler (apt-get install -y gcc)" >&2; exit 1; }
bin="$(mktemp /tmp/round-trip-floor.XXXXXX)"
trap 'rm -f "$bin"' EXIT
cc -O2 -o "$bin" "$here/round-trip-floor.c"
for _ in $(seq "$rounds"); do
  "$bin" tcp "$n"
  "$bin" unix "$n"
done
