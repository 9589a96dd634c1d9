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

# Bumped whenever the image content changes, so a cached older build is replaced.
version=4
if [ "$force" = 0 ] && [ "$(docker image inspect --format '{{index .Config.Labels "sbox.image-version"}}' "$tag" 2>/dev/null)" = "$version" ]; then
  say "$tag (version $version) exists, nothing to do (--force rebuilds)"
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

previous="$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)"
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
# Service and protocol names for tools that look them up (wget, nc).
for f in services protocols; do
  if [ -f "/etc/$f" ]; then cp "/etc/$f" "$root/etc/$f"; fi
done
[ -f "$root/etc/services" ] || printf 'http\t\t80/tcp\nhttps\t\t443/tcp\n' >"$root/etc/services"
[ -f "$root/etc/protocols" ] || printf 'ip\t0\tIP\ntcp\t6\tTCP\nudp\t17\tUDP\n' >"$root/etc/protocols"

tar -C "$root" -c . | docker import \
  -c 'ENV PATH=/bin:/usr/bin:/sbin' \
  -c 'WORKDIR /workspace' \
  -c 'CMD ["/bin/sh"]' \
  -c 'LABEL org.opencontainers.image.description="sbox busybox test image"' \
  -c "LABEL sbox.image-version=$version" \
  - "$tag" >/dev/null
# The build it replaces is now untagged: remove it unless a container still uses it.
if [ -n "$previous" ] && [ "$previous" != "$(docker image inspect --format '{{.Id}}' "$tag")" ]; then
  docker image rm "$previous" >/dev/null 2>&1 || true
fi
say "built $tag ($(docker image inspect --format '{{.Size}}' "$tag") bytes)"
