/**
 * Killing process trees in a pod. Kubernetes exec has no signal call and no pid, so every exec the
 * provider starts carries `SBOX_K8S_EXEC_ID=<random>` in its environment, and a second exec runs this POSIX
 * sh script (busybox and GNU userlands): it takes the processes tagged with the marker (or one pid) as
 * roots, adds every descendant and every member of a root's process group (read from /proc/<pid>/stat),
 * stops them all so none can fork away, sends the signal, and lets them continue.
 */
import { kubernetesError } from "./kubernetes-errors.js";
import { EXEC_MARKER_VARIABLE } from "./kubernetes-names.js";

const TREE_KILL = `sig=$1 how=$2 key=$3 me=$$
roots=
for d in /proc/[0-9]*; do
  p=\${d#/proc/}
  [ "$p" = "$me" ] && continue
  if [ "$how" = marker ]; then
    case "$(tr '\\0' '\\n' < "$d/environ" 2>/dev/null)" in *"${EXEC_MARKER_VARIABLE}=$key"*) roots="$roots $p" ;; esac
  elif [ "$p" = "$key" ]; then roots=$p
  fi
done
[ -n "$roots" ] || exit 3
tree=$roots
grow=1
while [ $grow = 1 ]; do
  grow=0
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    [ "$p" = "$me" ] && continue
    case " $tree " in *" $p "*) continue ;; esac
    s=
    read -r s < "$d/stat" 2>/dev/null || continue
    s=\${s##*) }
    set -- $s
    for r in $tree; do
      if [ "$2" = "$r" ]; then tree="$tree $p"; grow=1; kill -STOP "$p" 2>/dev/null; break; fi
    done
    case " $roots " in *" $3 "*) case " $tree " in *" $p "*) ;; *) tree="$tree $p"; grow=1; kill -STOP "$p" 2>/dev/null ;; esac ;; esac
  done
done
for p in $roots; do kill -STOP "$p" 2>/dev/null; done
for p in $tree; do kill -s "$sig" "$p" 2>/dev/null; done
for p in $tree; do kill -CONT "$p" 2>/dev/null; done
exit 0`;

/** Finds the pid of the first process tagged with `$1` (prints nothing when none). */
const FIND_MARKED = `me=$$
for d in /proc/[0-9]*; do
  p=\${d#/proc/}
  [ "$p" = "$me" ] && continue
  case "$(tr '\\0' '\\n' < "$d/environ" 2>/dev/null)" in *"${EXEC_MARKER_VARIABLE}=$1"*) echo "$p"; exit 0 ;; esac
done`;

/** `"SIGTERM"`, `"term"`, `"9"` → what `kill -s` takes. */
export function signalForKill(signal: string | undefined): string {
  const raw = (signal ?? "SIGKILL").trim().toUpperCase().replace(/^SIG/, "");
  if (!/^[A-Z0-9]{1,8}$/.test(raw))
    throw kubernetesError("Validation", `invalid signal ${JSON.stringify(signal)}`);
  return raw;
}

/** The argv that signals the tree of every process tagged with `marker`. */
export function killMarkerArgv(marker: string, signal: string): string[] {
  return ["sh", "-c", TREE_KILL, "sbox-kill", signalForKill(signal), "marker", marker];
}

/** The argv that signals `pid`, its descendants and its process group. */
export function killPidArgv(pid: number, signal: string): string[] {
  if (!Number.isInteger(pid) || pid <= 1) throw kubernetesError("Validation", `invalid pid ${String(pid)}`);
  return ["sh", "-c", TREE_KILL, "sbox-kill", signalForKill(signal), "pid", String(pid)];
}

/** The argv that prints the pid of the process tagged with `marker`. */
export function findMarkedArgv(marker: string): string[] {
  return ["sh", "-c", FIND_MARKED, "sbox-find", marker];
}

/**
 * Wraps a command so its processes carry `marker` (and, for `head`, so that only the first `head` bytes of
 * stdin reach it: the way to end stdin on protocols without a close signal).
 */
export function markedArgv(marker: string, argv: readonly string[], head?: number | undefined): string[] {
  if (head !== undefined) {
    return [
      "sh",
      "-c",
      `${EXEC_MARKER_VARIABLE}=$1; export ${EXEC_MARKER_VARIABLE}; n=$2; shift 2; head -c "$n" | "$@"`,
      "sbox",
      marker,
      String(head),
      ...argv,
    ];
  }
  return [
    "sh",
    "-c",
    `${EXEC_MARKER_VARIABLE}=$1; export ${EXEC_MARKER_VARIABLE}; shift; exec "$@"`,
    "sbox",
    marker,
    ...argv,
  ];
}
