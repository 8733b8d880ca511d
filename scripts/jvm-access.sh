# shellcheck shell=bash
# Sourced by ./levee and by the package's /usr/bin/levee: the JVM flags that grant Levee's libraries what they
# use, so that a normal run prints no JVM warning (without hiding stderr). Netty loads its native epoll
# transport through JNI (JEP 472 restricted methods: --enable-native-access); Guice (S3Proxy's jclouds),
# protobuf (jetcd), Guava, Netty and Log4j call sun.misc.Unsafe's memory-access methods, which warn from
# JDK 24 on (JEP 471/498) unless --sun-misc-unsafe-memory-access=allow (a flag that exists from JDK 23).
# The argument is the Java home; its release file gives the version without starting a JVM.
levee_jvm_access_options() {
  local major
  major="$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$1/release" 2>/dev/null)"
  printf '%s' "--enable-native-access=ALL-UNNAMED"
  if [ "${major:-0}" -ge 23 ] 2>/dev/null; then printf ' %s' "--sun-misc-unsafe-memory-access=allow"; fi
  echo
}
