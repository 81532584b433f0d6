#!/usr/bin/env bash
# Runs the Redis-backed tests against a Redis that testcontainers starts (SCQ_TEST_REDIS=container), on podman's
# Docker-compatible API, with no Docker engine and no image registry:
#   - `podman system service` on a socket of this run's own (DOCKER_HOST), stopped at the end;
#   - the Ryuk reaper off (its image lives on a registry): this script removes what the run labelled instead, and a
#     container left behind fails the run;
#   - the Redis image SCQ_TEST_REDIS_IMAGE, by default localhost/sandcastle-queue-redis:7 (built when missing by
#     scripts/build-service-images.sh --only redis);
#   - the containers' ports reached on 127.0.0.1 (TESTCONTAINERS_HOST_OVERRIDE).
# usage: scripts/test-with-testcontainers.sh [vitest file or folder…]   (default: the files that use the tests' shared
#        Redis, below). Needs podman (CONTAINERS_CONF on this machine kind, README "Containers") and npm on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every file that works on the shared test Redis (each under its own key prefix): Margot's flows, the HTTP API,
# enqueue validation and the session log. Files that start redis-servers of their own gain nothing here.
default_files=(
  test/integration/margot
  test/integration/foundation/coalesce-writes.test.ts
  test/integration/foundation/enqueue-validation.test.ts
  test/integration/foundation/health.test.ts
  test/integration/foundation/http.test.ts
  test/integration/http/api.test.ts
  test/integration/sandcastle/session-log.test.ts
)
[ $# -gt 0 ] && files=("$@") || files=("${default_files[@]}")

command -v podman >/dev/null 2>&1 || { echo "test-with-testcontainers: podman not found (apt-get install podman runc)" >&2; exit 1; }
export SCQ_TEST_REDIS=container
export SCQ_TEST_REDIS_IMAGE=${SCQ_TEST_REDIS_IMAGE:-localhost/sandcastle-queue-redis:7}
if [ "$SCQ_TEST_REDIS_IMAGE" = localhost/sandcastle-queue-redis:7 ]; then
  scripts/build-service-images.sh --cli podman --only redis
fi

run=$(mktemp -d "${TMPDIR:-/tmp}/scq-testcontainers.XXXXXX")
label="tc-$(basename "$run")"
podman system service --time=0 "unix://$run/podman.sock" >"$run/service.log" 2>&1 &
service_pid=$!
sweep() {
  local left
  left=$(podman ps --all --quiet --filter "label=io.sandcastle-queue.test-run=$label")
  [ -n "$left" ] && podman rm --force $left >/dev/null 2>&1
  kill "$service_pid" 2>/dev/null && wait "$service_pid" 2>/dev/null
  rm -rf "$run"
  [ -z "$left" ]
}
trap 'sweep || true' EXIT
for _ in $(seq 1 100); do [ -S "$run/podman.sock" ] && break; sleep 0.1; done
[ -S "$run/podman.sock" ] || { cat "$run/service.log" >&2; echo "test-with-testcontainers: podman system service did not open its socket" >&2; exit 1; }

export DOCKER_HOST="unix://$run/podman.sock"
export TESTCONTAINERS_RYUK_DISABLED=true
export TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1
export SCQ_TEST_CONTAINER_LABEL=$label
unset REDIS_URL

started=$(date +%s)
status=0
npm run build --silent
npx vitest run "${files[@]}" || status=$?
echo "test-with-testcontainers: ${files[*]} on $SCQ_TEST_REDIS_IMAGE (testcontainers, podman API) in $(($(date +%s) - started)) s"
trap - EXIT
if ! sweep; then
  echo "test-with-testcontainers: the run left containers labelled io.sandcastle-queue.test-run=$label (removed now)" >&2
  status=1
fi
exit "$status"
