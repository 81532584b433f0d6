#!/usr/bin/env bash
# Builds the sandbox image for docker/podman runs without any image registry: a Debian root filesystem
# from Debian's own mirror (debootstrap, minbase + git + ca-certificates: what the `script` agent and git
# need), imported with `<cli> import`. Cached: when the image exists and was built by this same recipe
# (label io.sandcastle-queue.recipe), nothing is done. Real agents (claude, codex, pi, opencode) are not
# in it: build your own image FROM it, or use Sandcastle's, and point SANDCASTLE_IMAGE at it.
#
# usage: scripts/build-sandbox-image.sh [--cli podman|docker|PATH] [--tag TAG] [--force]
#   --cli    the engine's CLI (default podman; SANDCASTLE_CONTAINER_CLI when set)
#   --tag    the image (default SANDCASTLE_IMAGE, else localhost/sandcastle-queue-agent:latest)
#   --force  rebuild even when cached
# Needs root for debootstrap (uses sudo when not root). Takes ~30-120 s and ~340 MB on first build.
set -euo pipefail

cli=${SANDCASTLE_CONTAINER_CLI:-podman}
tag=${SANDCASTLE_IMAGE:-localhost/sandcastle-queue-agent:latest}
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cli) cli=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "build-sandbox-image: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

suite=${DEBIAN_SUITE:-bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=git,ca-certificates
# The recipe is this script and what it was asked for: change either and the cache misses.
recipe=$( { cat "$0"; echo "$suite $packages"; } | sha256sum | cut -c1-16)

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

work=$(mktemp -d "${TMPDIR:-/var/tmp}/sandcastle-queue-image.XXXXXX")
cleanup() { $sudo rm -rf "$work"; }
trap cleanup EXIT

echo "build-sandbox-image: debootstrap $suite ($packages) from $mirror"
started=$(date +%s)
$sudo debootstrap --variant=minbase --include="$packages" "$suite" "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 20 "$work/debootstrap.log" >&2
  echo "build-sandbox-image: debootstrap failed (log above)" >&2
  exit 1
}
# Package caches are not needed at run time; /home/agent is where the container's tmpfs home goes.
$sudo rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/*
$sudo install -d -m 1777 "$work/rootfs/home/agent"

echo "build-sandbox-image: importing as $tag"
$sudo tar -C "$work/rootfs" -c . | "$cli" import \
  --change "LABEL io.sandcastle-queue.recipe=$recipe" \
  --change 'CMD ["/bin/sh"]' \
  - "$tag" >/dev/null
cached || { echo "build-sandbox-image: $tag was imported but does not carry recipe $recipe" >&2; exit 1; }
echo "build-sandbox-image: built $tag (recipe $recipe) in $(( $(date +%s) - started )) s"
