# shellcheck shell=bash
# Sourced by ./levee (and by the integration tests that start roles as their own JVMs): the JVM options
# of each role. Heaps are sized per role rather than left to the JVM (G1 would take a quarter of the
# machine's memory and keep it); G1 returns memory to the OS when a role is idle (periodic collections
# every 30 s uncommit what a flood left), and a JVM that runs out of memory exits so that systemd
# restarts it instead of limping on. LEVEE_JAVA_OPTS comes after these, so an operator's -Xmx wins.
# Sizes and the measurements behind them: docs/failure-modes.md ("Memory").
levee_jvm_options() {
  local role="${1:-}" heap max_keys=1000000 a prev=""
  shift || true
  case "$role" in
    limiter)
      # the key table holds at most --max-keys slots of 256 bytes; give it 1.5x that plus 256 MiB
      for a in "$@"; do
        case "$a" in --max-keys=*) max_keys="${a#--max-keys=}" ;; esac
        [ "$prev" = "--max-keys" ] && max_keys="$a"
        prev="$a"
      done
      case "$max_keys" in ''|*[!0-9]*) max_keys=1000000 ;; esac
      [ "${#max_keys}" -gt 12 ] && max_keys=1000000000000
      heap="-Xms64m -Xmx$((256 + max_keys * 384 / 1048576))m" ;;
    gateway) heap="-Xms64m -Xmx512m" ;;
    client) heap="-Xms32m -Xmx256m" ;;
    observer) heap="-Xms32m -Xmx192m" ;;
    demo|bench) heap="-Xmx1g" ;;
    *) heap="-Xmx256m -XX:TieredStopAtLevel=1" ;; # short-lived tools: quota, config, nginx-config, --help
  esac
  echo "$heap -XX:+UseG1GC -XX:G1PeriodicGCInterval=30000 -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30 -XX:+ExitOnOutOfMemoryError"
}
