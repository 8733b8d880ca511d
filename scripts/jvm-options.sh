# shellcheck shell=bash
# Sourced by ./levee (and by the integration tests that start roles as their own JVMs): the JVM options
# of each role. Heaps are sized per role rather than left to the JVM (G1 would take a quarter of the
# machine's memory and keep it); G1 returns memory to the OS when a role is idle (periodic collections
# every 30 s uncommit what a flood left), and a JVM that runs out of memory exits so that systemd
# restarts it instead of limping on. LEVEE_JAVA_OPTS comes after these, so an operator's -Xmx wins.
# Sizes and the measurements behind them: docs/failure-modes.md ("Memory").
levee_jvm_options() {
  local role="${1:-}" heap max_keys=1000000 a prev="" mem_kb
  shift || true
  case "$role" in
    limiter)
      # the key table holds at most --max-keys slots of 256 bytes; give it 1.5x that plus 256 MiB.
      # --max-keys may also come from an argument file (@FILE, as picocli reads it: words, # comments)
      for a in $(levee_expand_args "$@"); do
        case "$a" in --max-keys=*) max_keys="${a#--max-keys=}" ;; esac
        [ "$prev" = "--max-keys" ] && max_keys="$a"
        prev="$a"
      done
      case "$max_keys" in ''|*[!0-9]*) max_keys=1000000 ;; esac # picocli refuses it with a clear message
      [ "${#max_keys}" -gt 12 ] && max_keys=1000000000000
      heap=$((256 + max_keys * 384 / 1048576))
      mem_kb="$(awk '/^MemTotal:/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)"
      if [ "${mem_kb:-0}" -gt 0 ] && [ "$heap" -gt $((mem_kb / 1024)) ] && [ "${LEVEE_JAVA_OPTS#*-Xmx}" = "${LEVEE_JAVA_OPTS:-}" ]; then
        echo "levee: --max-keys $max_keys needs a heap of $heap MiB, more than this machine's $((mem_kb / 1024)) MiB;" \
          "lower --max-keys (256 MiB per million slots) or give the heap yourself (LEVEE_JAVA_OPTS=-Xmx...)" >&2
        return 1
      fi
      heap="-Xms64m -Xmx${heap}m" ;;
    gateway) heap="-Xms64m -Xmx512m" ;;
    client) heap="-Xms32m -Xmx256m" ;;
    observer) heap="-Xms32m -Xmx192m" ;;
    demo|bench) heap="-Xmx1g" ;;
    *) heap="-Xmx256m -XX:TieredStopAtLevel=1" ;; # short-lived tools: quota, config, nginx-config, --help
  esac
  # a collector chosen in LEVEE_JAVA_OPTS wins (two would stop the JVM at start: "multiple garbage collectors
  # selected"), e.g. Epsilon for a load generator that must not pause itself (docs/BENCHMARKS.md)
  case " ${LEVEE_JAVA_OPTS:-} " in
    *" -XX:+Use"*"GC "*) echo "$heap -XX:+ExitOnOutOfMemoryError"; return 0 ;;
  esac
  case "$role" in
    # the check path (docs/BENCHMARKS.md, "Garbage collector per role"): generational ZGC, whose pauses stay under
    # 1 ms where G1's young pauses of ~3 ms grew to 20-90 ms whenever the GC threads waited for a core. A flood
    # grows ZGC's heap towards -Xmx (it sizes the heap to the allocation rate, not to the few MiB that stay live)
    # and the heap is what a flood leaves behind: a cycle at least every 15 s frees it, and uncommit after 5 s
    # unused returns it (JDK 25 spreads the uncommit over time: with 30 s, nothing came back for 40-60 s after a
    # flood of 2 M keys and 448 MiB were still held at 60 s against 201 before; with 5 s, 207-241 at 60 s:
    # docs/failure-modes.md, "Memory"; LimiterMemoryIT)
    limiter|client) echo "$heap -XX:+UseZGC -XX:ZCollectionInterval=15 -XX:ZUncommitDelay=5 -XX:+ExitOnOutOfMemoryError" ;;
    *) echo "$heap -XX:+UseG1GC -XX:G1PeriodicGCInterval=30000 -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30 -XX:+ExitOnOutOfMemoryError" ;;
  esac
}

# Prints the arguments one a line with each @FILE replaced by the words of that file (comments from #).
levee_expand_args() {
  local a
  for a in "$@"; do
    if [ "${a#@}" != "$a" ] && [ -r "${a#@}" ]; then
      sed -e 's/#.*//' -e "s/[\"']//g" "${a#@}" | tr -s ' \t' '\n\n'
    else
      printf '%s\n' "$a"
    fi
  done
}

# The options that make the JVM use Levee's AOT cache (scripts/aot-cache; JEP 483/515: classes and method profiles
# from a training run) when the file exists and is not older than the jar it was made from, and LEVEE_JAVA_OPTS
# does not choose its own (-XX:AOTCache, -XX:AOTMode, -Xshare). A cache made under G1 does little for a ZGC JVM
# (measured: docs/BENCHMARKS.md), so there is one per collector: CACHE for G1, CACHE's name with -zgc for ZGC,
# chosen from the JVM options given as the third argument. The JVM's own AOT messages are off: a cache that does
# not fit this JVM is skipped silently, and the role runs as it would without one.
levee_aot_options() {
  local cache="$1" jar="$2" jvm_opts="${3:-}"
  case " $jvm_opts ${LEVEE_JAVA_OPTS:-} " in *" -XX:+UseZGC "*) cache="${cache%.aot}-zgc.aot" ;; esac
  [ -f "$cache" ] && [ ! "$jar" -nt "$cache" ] || return 0
  case " ${LEVEE_JAVA_OPTS:-} " in *" -XX:AOT"*|*" -Xshare"*) return 0 ;; esac
  echo "-XX:AOTCache=$cache -Xlog:aot*=off"
}
