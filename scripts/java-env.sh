# shellcheck shell=bash
# Sourced by ./levee and scripts/test: finds a JDK >= 21 (JAVA_HOME first, then /usr/lib/jvm)
# and exports JAVA_HOME and PATH so that ./mvnw and java use it.
levee_java_major() {
  local v=""
  # the JDK's release file names its version (JAVA_VERSION="25.0.3"): no JVM started for it (~0.35 s of every
  # launch on a 2-core machine); a JDK without one is asked
  if [ -r "$1/release" ]; then
    v="$(sed -n 's/^JAVA_VERSION="\([0-9][0-9]*\).*/\1/p' "$1/release" | head -n 1)"
  fi
  if [ -z "$v" ]; then
    v="$("$1/bin/java" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2; exit}')"
    v="${v%%.*}"
  fi
  # Java 8 and older say 1.8
  [ "$v" = 1 ] && v=8
  echo "$v"
}
levee_find_java() {
  local candidate major
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
    major="$(levee_java_major "$JAVA_HOME")"
    if [ "${major:-0}" -ge 21 ] 2>/dev/null; then echo "$JAVA_HOME"; return 0; fi
  fi
  for candidate in $(ls -d /usr/lib/jvm/*/ 2>/dev/null | sort -rV); do
    candidate="${candidate%/}"
    [ -x "$candidate/bin/javac" ] || continue
    major="$(levee_java_major "$candidate")"
    if [ "${major:-0}" -ge 21 ] 2>/dev/null; then echo "$candidate"; return 0; fi
  done
  return 1
}
if ! LEVEE_JAVA_HOME="$(levee_find_java)"; then
  echo "levee: no JDK >= 21 found (looked at JAVA_HOME=${JAVA_HOME:-unset} and /usr/lib/jvm/*)." >&2
  # Debian 12 has no openjdk-21 in apt: advise what works there (issue 13)
  echo "levee: to build and run from this repository, install a JDK >= 21 and/or set JAVA_HOME:" >&2
  echo "levee:   Debian 12: Temurin from Adoptium's apt repository (adoptium.net, 'Linux (RPM/DEB/APK) installer packages'), then 'apt-get install -y temurin-21-jdk';" >&2
  echo "levee:   Debian 13, Ubuntu 24.04: 'apt-get install -y openjdk-21-jdk-headless'." >&2
  echo "levee: to run Levee on a server without a JDK: the Debian package, which bundles its own Java runtime:" >&2
  echo "levee:   'scripts/package' on a machine with a JDK builds target/levee_<version>_amd64.deb; 'dpkg -i' it on the server (README, 'Install on a server')." >&2
  exit 1
fi
export JAVA_HOME="$LEVEE_JAVA_HOME"
export PATH="$JAVA_HOME/bin:$PATH"
