#!/usr/bin/env bash
# Makes sure a Docker Engine answers on this machine: installs Debian's docker.io when `dockerd` is
# missing, starts `dockerd` in the background when `docker info` fails, and waits (bounded) until it is
# ready. Idempotent: a running engine is left alone. Prints where the daemon's log is.
#
# Environment:
#   SBOX_DOCKERD_LOG      log file of a daemon started here (default /var/log/sbox-dockerd.log)
#   SBOX_DOCKERD_WAIT_S   seconds to wait for readiness (default 60)
set -euo pipefail

log_file="${SBOX_DOCKERD_LOG:-/var/log/sbox-dockerd.log}"
wait_s="${SBOX_DOCKERD_WAIT_S:-60}"

say() { printf 'start-dockerd: %s\n' "$*" >&2; }

engine_answers() { timeout 10 docker info >/dev/null 2>&1; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi
}

if ! command -v dockerd >/dev/null 2>&1; then
  say "dockerd not found: installing docker.io from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  if ! as_root apt-get install -y -q docker.io >/dev/null; then
    # An empty or stale package list is the usual reason; refresh once and try again.
    as_root apt-get update -q >/dev/null
    as_root apt-get install -y -q docker.io >/dev/null
  fi
fi

if ! command -v docker >/dev/null 2>&1; then
  say "no docker client on PATH after installing docker.io"
  exit 1
fi

if engine_answers; then
  say "engine already answers (log of a daemon started by this script: $log_file)"
  exit 0
fi

# Prints the pid named in pid file $1 when that process is alive and really is program $2. A machine that
# was restarted (or a container image taken while the daemon ran) keeps stale pid files whose pid now
# belongs to some unrelated process, so `kill -0` alone is not proof.
live_pid_of() {
  local pid comm
  pid="$(cat "$1" 2>/dev/null || true)"
  case "$pid" in '' | *[!0-9]*) return 0 ;; esac
  comm="$(cat "/proc/$pid/comm" 2>/dev/null || true)"
  if [ "$comm" = "$2" ]; then echo "$pid"; fi
}

# A daemon killed with SIGKILL leaves its pid file behind, and a new dockerd refuses to start while the
# file names a live pid; remove it only when no dockerd has that pid.
pid_file=/var/run/docker.pid
running_pid() { live_pid_of "$pid_file" dockerd; }

# The containerd a killed dockerd started for itself outlives it and keeps its database locked, so a new
# dockerd times out starting its own. Without a live dockerd, that containerd is an orphan: stop it.
stop_orphan_containerd() {
  local cpid
  cpid="$(live_pid_of /var/run/docker/containerd/containerd.pid containerd)"
  if [ -n "$cpid" ]; then
    say "stopping the containerd (pid $cpid) left by a dead dockerd"
    as_root kill -TERM "$cpid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$cpid" 2>/dev/null || break; sleep 0.2; done
    as_root kill -KILL "$cpid" 2>/dev/null || true
  fi
}

launch() {
  if [ -z "$(running_pid)" ]; then
    as_root rm -f "$pid_file"
    stop_orphan_containerd
  fi
  say "starting dockerd in the background, log: $log_file"
  as_root mkdir -p "$(dirname "$log_file")"
  # setsid: the daemon must not die with this shell or receive its terminal's signals.
  if [ "$(id -u)" = 0 ]; then
    setsid dockerd >>"$log_file" 2>&1 </dev/null &
  else
    sudo -n setsid dockerd >>"$log_file" 2>&1 </dev/null &
  fi
  launched=$!
}

launched=""
existing="$(running_pid)"
if [ -n "$existing" ]; then
  say "a dockerd (pid $existing) runs but does not answer yet; waiting for it"
else
  launch
fi

deadline=$((SECONDS + wait_s))
attempts=1
until engine_answers; do
  # The daemon we started, or the one we were waiting for, gave up (e.g. containerd did not come up):
  # start one, a bounded number of times.
  if [ -n "$launched" ]; then alive="$(kill -0 "$launched" 2>/dev/null && echo yes || true)"; else alive="$(running_pid)"; fi
  if [ -z "$alive" ] && [ "$attempts" -lt 3 ]; then
    attempts=$((attempts + 1))
    say "no dockerd is running and none answered; attempt $attempts"
    launch
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    say "dockerd did not answer within ${wait_s}s; last lines of $log_file:"
    tail -n 20 "$log_file" >&2 || true
    exit 1
  fi
  sleep 0.2
done
say "engine ready ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?')), log: $log_file"
