#!/usr/bin/env bash
# Builds the image the E2B emulator's docker backend runs sandboxes from, laid out as E2B's base template:
# Debian bookworm with bash, python3 (also as `python`), sudo, git, curl and procps, a user `user` (uid 1000) whose home is
# /home/user, with password-less sudo, and /home/user as the working directory. Offline: a minbase
# debootstrap from the configured Debian mirror, imported with `docker import` (no registry needed).
# Idempotent and cached: does nothing when the tag was built from these inputs (pass --force to rebuild). ~60 s.
#
# Usage: scripts/build-e2b-base-image.sh [--force] [TAG]      (default TAG: sbox-e2b-base:latest)
# Environment: SBOX_DEBIAN_MIRROR (default http://deb.debian.org/debian), SBOX_DEBIAN_SUITE (bookworm)
# Needs: root, a Docker Engine that answers (scripts/start-dockerd.sh); installs debootstrap when missing.
set -euo pipefail

force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
tag="${1:-${SBOX_E2B_IMAGE:-sbox-e2b-base:latest}}"
mirror="${SBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
suite="${SBOX_DEBIAN_SUITE:-bookworm}"

say() { printf 'build-e2b-base-image: %s\n' "$*" >&2; }

# The image's inputs are this script (its package list and layout steps) and the suite: their hash is the
# image's label, so an unchanged build is reused and any edit here rebuilds it once. The mirror is not an
# input (any mirror of one suite gives the same layout). `version` stays as a human-readable marker.
version=3
inputs="$(cat "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)-$suite"
if [ "$force" = 0 ] && [ "$(docker image inspect --format '{{index .Config.Labels "sbox.image-inputs"}}' "$tag" 2>/dev/null)" = "$inputs" ]; then
  say "$tag (inputs $inputs) exists, nothing to do (--force rebuilds)"
  exit 0
fi

if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q debootstrap >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q debootstrap >/dev/null; }
fi

previous="$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)"
root="$(mktemp -d)"
trap 'rm -rf "$root" "$root.debootstrap.log"' EXIT
say "debootstrap $suite from $mirror (about 60 s)"
debootstrap --variant=minbase --include=bash,python3,python-is-python3,sudo,git,curl,ca-certificates,procps,ncurses-bin \
  "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 || {
  say "debootstrap failed; last lines:"
  tail -n 20 "$root.debootstrap.log" >&2
  exit 1
}
# E2B's base template: user `user` (uid 1000) with a home and password-less sudo.
chroot "$root" /usr/sbin/useradd -m -u 1000 -U -s /bin/bash user
echo 'user ALL=(ALL:ALL) NOPASSWD: ALL' >"$root/etc/sudoers.d/90-e2b-user"
chmod 440 "$root/etc/sudoers.d/90-e2b-user"
# Caches make the image ~3x larger and are useless without a network inside the sandbox.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*.log

tar -C "$root" --numeric-owner -c . | docker import \
  -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'ENV LANG=C.UTF-8' \
  -c 'WORKDIR /home/user' \
  -c 'CMD ["/bin/bash"]' \
  -c 'LABEL org.opencontainers.image.description="sbox E2B emulator base template (E2B base layout)"' \
  -c "LABEL sbox.image-version=$version" \
  -c "LABEL sbox.image-inputs=$inputs" \
  - "$tag" >/dev/null
# The build it replaces is now untagged: remove it unless a container still uses it.
if [ -n "$previous" ] && [ "$previous" != "$(docker image inspect --format '{{.Id}}' "$tag")" ]; then
  docker image rm "$previous" >/dev/null 2>&1 || true
fi
say "built $tag ($(docker image inspect --format '{{.Size}}' "$tag") bytes)"
