#!/usr/bin/env bash
# Recaptures the golden fixtures: a standalone ZooKeeper 3.8 server on 127.0.0.1, recorder.py
# in front of it, and Capture.java driving the real Java client through the proxy. Then
# convert.py turns the raw log into zk-proto/tests/fixtures/*.hex.
#
# Needs: Debian's zookeeper package (jars in /usr/share/java), a JDK, python3.
# Every process started here is stopped by its PID on exit; everything listens on loopback.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
fixtures="$here/../fixtures"
work="$(mktemp -d)"
zk_port="${ZK_PORT:-22181}"
proxy_port="${PROXY_PORT:-22182}"
control_port="${CONTROL_PORT:-22183}"
cp_jars="/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"

pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

wait_port() {
    for _ in $(seq 1 100); do
        if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 0.2)" "$1" 2>/dev/null; then
            return 0
        fi
        sleep 0.2
    done
    echo "port $1 never opened" >&2
    return 1
}

mkdir -p "$work/data" "$work/classes"
cat > "$work/zoo.cfg" <<CFG
tickTime=2000
dataDir=$work/data
clientPort=$zk_port
clientPortAddress=127.0.0.1
admin.enableServer=false
CFG

java -Dzookeeper.extendedTypesEnabled=true -cp "$cp_jars" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$work/zoo.cfg" > "$work/server.log" 2>&1 &
pids+=($!)
wait_port "$zk_port"

python3 "$here/recorder.py" --listen "$proxy_port" --upstream "$zk_port" \
    --control "$control_port" --log "$work/raw.log" --max-seconds 120 &
pids+=($!)
wait_port "$control_port"

javac -d "$work/classes" -cp "$cp_jars" "$here/Capture.java"
timeout 100 java -cp "$cp_jars:$work/classes" Capture "$proxy_port" "$control_port" \
    2> "$work/client.log" || { tail -40 "$work/client.log" >&2; exit 1; }
python3 -c "import socket,sys; s=socket.create_connection(('127.0.0.1', int(sys.argv[1]))); s.sendall(b'quit\n'); s.recv(3)" "$control_port"

zk_version="$(dpkg-query -W -f='${Version}' libzookeeper-java 2>/dev/null || echo 3.8.0)"
java_version="$(java -version 2>&1 | head -1)"
cp "$work/raw.log" "${RAW_LOG_COPY:-/dev/null}" 2>/dev/null || true
python3 "$here/convert.py" "$work/raw.log" "$fixtures" \
    --source "ZooKeeper server + Java client $zk_version (Debian libzookeeper-java), $java_version"
echo "fixtures written to $fixtures"
