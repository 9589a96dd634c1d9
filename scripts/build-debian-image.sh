#!/usr/bin/env bash
# Builds a Debian bookworm image with bash, python3 and inotify-tools offline (no registry needed): a
# minbase debootstrap from the configured Debian mirror, with caches removed, imported with `docker import`.
# Idempotent and cached: does nothing when the tag already exists (pass --force to rebuild). ~40 s.
#
# Usage: scripts/build-debian-image.sh [--force] [TAG]      (default TAG: sbox-debian:bookworm)
# Environment: SBOX_DEBIAN_MIRROR (default http://deb.debian.org/debian), SBOX_DEBIAN_SUITE (bookworm)
# Needs: root, a Docker Engine that answers (scripts/start-dockerd.sh); installs debootstrap when missing.
set -euo pipefail

force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
tag="${1:-${SBOX_DEBIAN_IMAGE:-sbox-debian:bookworm}}"
mirror="${SBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
suite="${SBOX_DEBIAN_SUITE:-bookworm}"

say() { printf 'build-debian-image: %s\n' "$*" >&2; }

# Bumped whenever the image content changes, so a cached older build is replaced.
version=1
if [ "$force" = 0 ] && [ "$(docker image inspect --format '{{index .Config.Labels "sbox.image-version"}}' "$tag" 2>/dev/null)" = "$version" ]; then
  say "$tag (version $version) exists, nothing to do (--force rebuilds)"
  exit 0
fi

if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q debootstrap >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q debootstrap >/dev/null; }
fi

previous="$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
say "debootstrap $suite from $mirror (about 40 s)"
debootstrap --variant=minbase --include=python3,ca-certificates,inotify-tools,procps \
  "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 || {
  say "debootstrap failed; last lines:"
  tail -n 20 "$root.debootstrap.log" >&2
  rm -f "$root.debootstrap.log"
  exit 1
}
rm -f "$root.debootstrap.log"
# Caches make the image ~3x larger and are useless without a network inside the sandbox.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*.log
mkdir -p "$root/workspace"

tar -C "$root" --numeric-owner -c . | docker import \
  -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'ENV LANG=C.UTF-8' \
  -c 'WORKDIR /workspace' \
  -c 'CMD ["/bin/bash"]' \
  -c 'LABEL org.opencontainers.image.description="sbox debian test image"' \
  -c "LABEL sbox.image-version=$version" \
  - "$tag" >/dev/null
# The build it replaces is now untagged: remove it unless a container still uses it.
if [ -n "$previous" ] && [ "$previous" != "$(docker image inspect --format '{{.Id}}' "$tag")" ]; then
  docker image rm "$previous" >/dev/null 2>&1 || true
fi
say "built $tag ($(docker image inspect --format '{{.Size}}' "$tag") bytes)"
