#!/usr/bin/env bash
# Build the local ZooKeeper image `zk-local:3.8.0` (override with ZKRS_IMAGE) without any registry:
# a jlink'd JRE + Debian's ZooKeeper jar closure from /usr/share/java + the shared libraries they
# need + a tiny /bin/sh entrypoint, imported with `docker import`. ~8 s, ~77 MB.
#
# The entrypoint follows the official `zookeeper` image's conventions (ZOO_MY_ID, ZOO_SERVERS,
# ZOO_TICK_TIME, ZOO_CFG_EXTRA, JVMFLAGS, /conf/zoo.cfg, /data), so the harness drives this image and
# `zookeeper:3.9` the same way. Idempotent: does nothing when the image exists (FORCE=1 rebuilds).
# Needs a running docker daemon (scripts/docker-up.sh); installs its Debian packages if missing.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

if [ -z "${DOCKER_HOST:-}" ] && [ -S "$ZKRS_DOCKER_DIR/docker.sock" ]; then
    export DOCKER_HOST=$ZKRS_DOCKER_HOST
fi

if [ -z "${FORCE:-}" ] && docker_cli image inspect "$ZKRS_IMAGE" >/dev/null 2>&1; then
    log "image $ZKRS_IMAGE already exists"
    exit 0
fi

start=$(now_s)
apt_install zookeeper openjdk-17-jdk-headless binutils unzip

jdk=${ZKRS_JDK:-/usr/lib/jvm/java-17-openjdk-amd64}
[ -x "$jdk/bin/jlink" ] || die "no jlink in $jdk (set ZKRS_JDK to a JDK 17 home)"

work=$(mktemp -d /tmp/zk-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs
mkdir -p "$root"/{bin,conf,data,datalog,logs,opt,usr/share/java,etc}
install -d -m 1777 "$root/tmp"

log "jlink JRE"
"$jdk/bin/jlink" --output "$root/opt/jre" --strip-debug --no-header-files --no-man-pages \
    --compress=2 \
    --add-modules java.base,java.desktop,java.management,java.naming,java.security.jgss,java.security.sasl,java.sql,jdk.unsupported,jdk.management \
    2>/dev/null

# The jars: zookeeper.jar's manifest Class-Path, transitively, plus the SLF4J -> log4j binding.
manifest_deps() {
    unzip -p "$1" META-INF/MANIFEST.MF 2>/dev/null | tr -d '\r' |
        awk '/^Class-Path:/ { cp = substr($0, 13); on = 1; next }
             on && /^ / { cp = cp substr($0, 2); next }
             { on = 0 }
             END { n = split(cp, a, " "); for (i = 1; i <= n; i++) print a[i] }'
}
declare -A seen=()
queue=(/usr/share/java/zookeeper.jar /usr/share/java/slf4j-log4j12.jar /usr/share/java/log4j-1.2.jar)
rounds=0
while [ "${#queue[@]}" -gt 0 ] && [ "$rounds" -lt 1000 ]; do
    rounds=$((rounds + 1))
    jar=${queue[0]}
    queue=("${queue[@]:1}")
    [ -n "${seen[$jar]:-}" ] && continue
    seen[$jar]=1
    [ -e "$jar" ] || continue # the JVM ignores missing Class-Path entries too
    cp -L "$jar" "$root$jar"
    while read -r dep; do
        case "$dep" in /*) ;; *) dep=$(dirname "$jar")/$dep ;; esac
        queue+=("$dep")
    done < <(manifest_deps "$jar")
done
log "copied ${#seen[@]} jars"

# Shared libraries of the JRE and of the shell, with the dynamic loader.
cp -L /bin/dash "$root/bin/sh"
{
    ldd /bin/dash
    find "$root/opt/jre" -type f \( -name '*.so' -o -perm -u+x \) -exec ldd {} \; 2>/dev/null
} | awk '/=> \// { print $3 } /^\t\/[^ ]+ \(/ { print $1 }' | sort -u | while read -r lib; do
    case "$lib" in "$root"/*) continue ;; esac
    [ -e "$lib" ] || continue
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
done
# usrmerge: /lib and /lib64 are symlinks into /usr on Debian 12; the loader is found via /lib64.
for d in lib lib64; do
    if [ -L "/$d" ] && [ ! -e "$root/$d" ]; then ln -s "$(readlink "/$d")" "$root/$d"; fi
done
printf 'root:x:0:0:root:/root:/bin/sh\nzookeeper:x:1000:1000::/data:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nzookeeper:x:1000:\n' >"$root/etc/group"

cat >"$root/conf/log4j.properties" <<'LOG4J'
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.Target=System.out
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} [myid:%X{myid}] %-5p [%t:%C{1}@%L] - %m%n
LOG4J

cat >"$root/docker-entrypoint.sh" <<'ENTRY'
#!/bin/sh
# Official `zookeeper` image conventions, with test-friendly defaults (tickTime 500, no admin
# server, every four-letter word, TTL nodes, read-only mode, small preallocation).
set -e
if [ "$#" -gt 0 ] && [ "$1" != "zkServer.sh" ]; then exec "$@"; fi
: "${ZOO_CONF_DIR:=/conf}" "${ZOO_DATA_DIR:=/data}" "${ZOO_DATA_LOG_DIR:=/datalog}"
: "${ZOO_TICK_TIME:=500}" "${ZOO_INIT_LIMIT:=10}" "${ZOO_SYNC_LIMIT:=5}"
: "${ZOO_MAX_CLIENT_CNXNS:=0}" "${ZOO_STANDALONE_ENABLED:=true}" "${ZOO_ADMINSERVER_ENABLED:=false}"
: "${ZOO_4LW_COMMANDS_WHITELIST:=*}" "${ZOO_MAX_SESSION_TIMEOUT:=60000}"
: "${ZOO_AUTOPURGE_PURGEINTERVAL:=0}" "${ZOO_AUTOPURGE_SNAPRETAINCOUNT:=3}"
: "${ZOO_CLIENT_PORT:=2181}"
: "${ZOO_SERVERS:=server.1=localhost:2888:3888;$ZOO_CLIENT_PORT}"
if [ ! -f "$ZOO_CONF_DIR/zoo.cfg" ]; then
    {
        echo "dataDir=$ZOO_DATA_DIR"
        echo "dataLogDir=$ZOO_DATA_LOG_DIR"
        echo "tickTime=$ZOO_TICK_TIME"
        echo "initLimit=$ZOO_INIT_LIMIT"
        echo "syncLimit=$ZOO_SYNC_LIMIT"
        echo "autopurge.snapRetainCount=$ZOO_AUTOPURGE_SNAPRETAINCOUNT"
        echo "autopurge.purgeInterval=$ZOO_AUTOPURGE_PURGEINTERVAL"
        echo "maxClientCnxns=$ZOO_MAX_CLIENT_CNXNS"
        echo "standaloneEnabled=$ZOO_STANDALONE_ENABLED"
        echo "admin.enableServer=$ZOO_ADMINSERVER_ENABLED"
        echo "4lw.commands.whitelist=$ZOO_4LW_COMMANDS_WHITELIST"
        echo "maxSessionTimeout=$ZOO_MAX_SESSION_TIMEOUT"
        echo "localSessionsEnabled=false"
        for server in $ZOO_SERVERS; do
            echo "$server"
        done
        for extra in $ZOO_CFG_EXTRA; do echo "$extra"; done
    } >"$ZOO_CONF_DIR/zoo.cfg"
fi
[ -f "$ZOO_DATA_DIR/myid" ] || echo "${ZOO_MY_ID:-1}" >"$ZOO_DATA_DIR/myid"
echo "--- $ZOO_CONF_DIR/zoo.cfg"
while IFS= read -r line; do echo "$line"; done <"$ZOO_CONF_DIR/zoo.cfg"
echo "---"
# Later flags win, so JVMFLAGS (the official image's knob) overrides these defaults.
# shellcheck disable=SC2086
exec /opt/jre/bin/java -XX:-UsePerfData -Xmx256m \
    -Dzookeeper.preAllocSize=1024 -Dzookeeper.extendedTypesEnabled=true \
    -Dreadonlymode.enabled=true -Dzookeeper.admin.enableServer=false \
    -Dlog4j.configuration="file:$ZOO_CONF_DIR/log4j.properties" \
    $JVMFLAGS \
    -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$ZOO_CONF_DIR/zoo.cfg"
ENTRY
chmod 755 "$root/docker-entrypoint.sh"

log "docker import $ZKRS_IMAGE"
tar -C "$root" -c . | docker_cli import \
    --change 'ENV PATH=/opt/jre/bin:/bin' \
    --change 'ENV ZOO_CONF_DIR=/conf ZOO_DATA_DIR=/data ZOO_DATA_LOG_DIR=/datalog' \
    --change 'WORKDIR /data' \
    --change 'ENTRYPOINT ["/docker-entrypoint.sh"]' \
    --change 'CMD ["zkServer.sh", "start-foreground"]' \
    - "$ZKRS_IMAGE" >/dev/null
size=$(docker_cli image inspect -f '{{.Size}}' "$ZKRS_IMAGE")
log "built $ZKRS_IMAGE ($((size / 1000000)) MB) in $(elapsed "$start") s"
