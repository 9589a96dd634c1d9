#!/usr/bin/env bash
# Builds a tiny busybox image offline (no registry needed) from the host's static busybox: a rootfs
# with every applet linked into /bin, /etc/passwd and /etc/group, imported with `docker import`.
# Idempotent and cached: does nothing when the tag already exists (pass --force to rebuild).
#
# Usage: scripts/build-busybox-image.sh [--force] [TAG]     (default TAG: sbox-busybox:latest)
# Needs: a Docker Engine that answers (scripts/start-dockerd.sh), busybox-static (installed when missing).
set -euo pipefail

force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
tag="${1:-${SBOX_BUSYBOX_IMAGE:-sbox-busybox:latest}}"

say() { printf 'build-busybox-image: %s\n' "$*" >&2; }

if [ "$force" = 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  say "$tag exists, nothing to do (--force rebuilds)"
  exit 0
fi

busybox_bin=""
for candidate in /bin/busybox /usr/bin/busybox; do
  # Only a static binary runs in a rootfs without a libc.
  if [ -x "$candidate" ] && ! ldd "$candidate" >/dev/null 2>&1; then busybox_bin="$candidate"; break; fi
done
if [ -z "$busybox_bin" ]; then
  say "no static busybox found: installing busybox-static"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q busybox-static >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q busybox-static >/dev/null; }
  busybox_bin=/bin/busybox
fi

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/root" "$root/home" "$root/var/tmp" "$root/workspace"
chmod 1777 "$root/tmp" "$root/var/tmp"
cp "$busybox_bin" "$root/bin/busybox"
# --install needs /proc/self/exe to find itself; run it through the copied binary with an explicit dir.
"$root/bin/busybox" --list | while read -r applet; do
  [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done
mkdir -p "$root/usr" && ln -s ../bin "$root/usr/bin" && ln -s ../bin "$root/sbin"
cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
cat >"$root/etc/group" <<'GROUP'
root:x:0:
nogroup:x:65534:
GROUP

tar -C "$root" -c . | docker import \
  -c 'ENV PATH=/bin:/usr/bin:/sbin' \
  -c 'WORKDIR /workspace' \
  -c 'CMD ["/bin/sh"]' \
  -c 'LABEL org.opencontainers.image.description="sbox busybox test image"' \
  - "$tag" >/dev/null
say "built $tag ($(docker image inspect --format '{{.Size}}' "$tag") bytes)"
