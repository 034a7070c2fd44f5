#!/usr/bin/env bash
# Remove every container the test harness created (testcontainers labels them
# org.testcontainers.managed-by=testcontainers), e.g. those a killed test binary left behind.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

if [ -z "${DOCKER_HOST:-}" ]; then export DOCKER_HOST=$ZKRS_DOCKER_HOST; fi
docker_cli version >/dev/null 2>&1 || exit 0
ids=$(docker_cli ps -aq --filter label=org.testcontainers.managed-by=testcontainers)
if [ -n "$ids" ]; then
    # shellcheck disable=SC2086
    docker_cli rm -f -v $ids >/dev/null 2>&1 || true
    log "removed $(echo "$ids" | wc -l) leftover test container(s)"
fi
