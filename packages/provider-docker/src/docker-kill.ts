import { SandboxError } from "@sbox/core/spec";

/** The environment variable that tags every process an exec starts, so the whole tree can be found again. */
export const EXEC_MARKER_VARIABLE = "SBOX_EXEC_ID";

/**
 * A POSIX sh script (busybox and GNU userlands) that signals whole process trees inside a container.
 * Roots are either the processes whose environment carries `SBOX_EXEC_ID=<marker>` (mode `marker`) or one
 * pid (mode `pid`). The tree is every descendant of a root plus every member of a root's process group,
 * found by reading /proc/<pid>/stat with shell builtins. Everything found is stopped first (so nothing
 * forks away while we look), signalled, then continued.
 *
 * Arguments: `$1` signal name without SIG, `$2` mode, `$3` marker or pid. Exit 3 when nothing matched.
 */
const KILL_TREE_SCRIPT = `
sig="$1"; mode="$2"; key="$3"; self=$$
table=""
scan() {
  table=""
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    [ "$p" = "$self" ] && continue
    line=""
    read -r line < "$d/stat" 2>/dev/null || continue
    line=\${line##*) }
    set -- $line
    table="$table $p:$2:$3"
  done
}
roots=""
if [ "$mode" = marker ]; then
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    [ "$p" = "$self" ] && continue
    # busybox grep misses matches in /proc files read directly: go through tr.
    case "$(tr '\\0' '\\n' < "$d/environ" 2>/dev/null)" in
      *"${EXEC_MARKER_VARIABLE}=$key"*) roots="$roots $p" ;;
    esac
  done
else
  [ -d "/proc/$key" ] && roots="$key"
fi
[ -n "$roots" ] || exit 3
found=""
for pass in 1 2 3; do
  scan
  changed=1
  while [ "$changed" = 1 ]; do
    changed=0
    for entry in $table; do
      p=\${entry%%:*}; rest=\${entry#*:}; pp=\${rest%%:*}; pg=\${rest#*:}
      case " $found " in *" $p "*) continue ;; esac
      hit=0
      for r in $roots $found; do
        if [ "$p" = "$r" ] || [ "$pp" = "$r" ]; then hit=1; break; fi
      done
      if [ "$hit" = 0 ]; then
        for r in $roots; do [ "$pg" = "$r" ] && { hit=1; break; }; done
      fi
      if [ "$hit" = 1 ]; then found="$found $p"; changed=1; kill -STOP "$p" 2>/dev/null; fi
    done
  done
done
for p in $found; do kill -s "$sig" "$p" 2>/dev/null; done
for p in $found; do kill -CONT "$p" 2>/dev/null; done
exit 0
`;

/** Normalizes a signal name (`"SIGTERM"`, `"term"`, `"9"`) to what `kill -s` takes. */
export function signalName(signal: string | undefined): string {
  const raw = (signal ?? "SIGKILL").trim().toUpperCase().replace(/^SIG/, "");
  if (!/^[A-Z0-9]+$/.test(raw) || raw.length > 8) {
    throw new SandboxError("Validation", `invalid signal ${JSON.stringify(signal)}`);
  }
  return raw;
}

/** The argv of an exec that signals the tree of every process tagged with `marker`. */
export function killMarkerCommand(marker: string, signal: string): string[] {
  return ["sh", "-c", KILL_TREE_SCRIPT, "sbox-kill", signalName(signal), "marker", marker];
}

/** The argv of an exec that signals `pid`, its descendants and its process group. */
export function killPidCommand(pid: number, signal: string): string[] {
  if (!Number.isInteger(pid) || pid <= 1) {
    throw new SandboxError("Validation", `invalid pid ${String(pid)}`);
  }
  return ["sh", "-c", KILL_TREE_SCRIPT, "sbox-kill", signalName(signal), "pid", String(pid)];
}
