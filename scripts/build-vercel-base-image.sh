#!/usr/bin/env bash
# Builds the image the Vercel Sandbox emulator's docker backend runs sessions from, laid out as a Vercel
# sandbox is: Debian bookworm with bash, sudo, node, python3, git, curl, procps and the account tools
# (useradd, usermod, groupadd, gpasswd); a user `vercel-sandbox` (uid 1000) with password-less sudo, whose
# commands and file API calls the emulator runs; /vercel/sandbox (owned by it) as the working directory and
# /vercel/bin on PATH. Offline: a minbase debootstrap from the configured Debian mirror, imported with
# `docker import` (no registry needed). Idempotent and cached: does nothing when the tag was built from
# these inputs (pass --force to rebuild). ~90 s.
#
# Usage: scripts/build-vercel-base-image.sh [--force] [TAG]      (default TAG: sbox-vercel-base:latest)
# Environment: SBOX_DEBIAN_MIRROR (default http://deb.debian.org/debian), SBOX_DEBIAN_SUITE (bookworm)
# Needs: root, a Docker Engine that answers (scripts/start-dockerd.sh); installs debootstrap when missing.
set -euo pipefail

force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
tag="${1:-${SBOX_VERCEL_IMAGE:-sbox-vercel-base:latest}}"
mirror="${SBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
suite="${SBOX_DEBIAN_SUITE:-bookworm}"

say() { printf 'build-vercel-base-image: %s\n' "$*" >&2; }

# The image's inputs are this script and the suite: their hash is the image's label, so an unchanged build
# is reused and any edit here rebuilds it once.
inputs="$(sha256sum <"${BASH_SOURCE[0]}" | cut -c1-16)-$suite"
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
say "debootstrap $suite from $mirror (about 90 s)"
debootstrap --variant=minbase --include=bash,sudo,nodejs,python3,git,curl,ca-certificates,procps,passwd,util-linux,tar,gzip \
  "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 || {
  say "debootstrap failed; last lines:"
  tail -n 20 "$root.debootstrap.log" >&2
  exit 1
}
# Vercel's layout: the default user `vercel-sandbox` with password-less sudo, its working directory
# /vercel/sandbox, and /vercel/bin (where Vercel puts its runtimes' tools) on PATH.
chroot "$root" /usr/sbin/useradd -m -u 1000 -U -s /bin/bash vercel-sandbox
echo 'vercel-sandbox ALL=(ALL:ALL) NOPASSWD: ALL' >"$root/etc/sudoers.d/90-vercel-sandbox"
chmod 440 "$root/etc/sudoers.d/90-vercel-sandbox"
mkdir -p "$root/vercel/sandbox" "$root/vercel/bin"
chroot "$root" chown vercel-sandbox:vercel-sandbox /vercel/sandbox
# sudo keeps /vercel/bin on PATH, as the service's sudo does.
sed -i 's|^Defaults\s*secure_path=.*|Defaults\tsecure_path="/vercel/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"|' "$root/etc/sudoers"
# Caches make the image larger and are useless without a network inside the sandbox.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*.log

tar -C "$root" --numeric-owner -c . | docker import \
  -c 'ENV PATH=/vercel/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'ENV LANG=C.UTF-8' \
  -c 'WORKDIR /vercel/sandbox' \
  -c 'CMD ["/bin/bash"]' \
  -c 'LABEL org.opencontainers.image.description="sbox Vercel Sandbox emulator base image (Vercel sandbox layout)"' \
  -c "LABEL sbox.image-inputs=$inputs" \
  - "$tag" >/dev/null
# The build it replaces is now untagged: remove it unless a container still uses it.
if [ -n "$previous" ] && [ "$previous" != "$(docker image inspect --format '{{.Id}}' "$tag")" ]; then
  docker image rm "$previous" >/dev/null 2>&1 || true
fi
say "built $tag ($(docker image inspect --format '{{.Size}}' "$tag") bytes)"
