import { SandboxError } from "@sbox/core/spec";

/**
 * A POSIX `sh` script that signals process "$2" and all its descendants with signal "$1" (a name without
 * `SIG`). E2B's daemon signals only the process it started, and starts it in its own process group, so a
 * group kill is not possible: the tree is found through `/proc/<pid>/stat` (parent pid is the field after
 * the parenthesised command name, which may itself contain spaces or parentheses). Each generation is
 * stopped before its children are looked for, so no member can fork a child the walk misses (the root
 * first, then every child found); then the tree is signalled, then continued so a catchable signal is
 * delivered. Exit 3: no such process.
 */
export const KILL_TREE_SCRIPT: string = [
  // biome-ignore-start lint/suspicious/noTemplateCurlyInString: shell parameter expansions, not templates
  "sig=$1; root=$2",
  '[ -d "/proc/$root" ] || exit 3',
  "kill -STOP $root 2>/dev/null",
  "all=$root; frontier=$root",
  'while [ -n "$frontier" ]; do',
  "  next=",
  "  for st in /proc/[0-9]*/stat; do",
  '    { read -r line < "$st"; } 2>/dev/null || continue',
  "    rest=${line##*) }",
  "    set -- $rest",
  "    p=${st#/proc/}; p=${p%/stat}",
  '    for f in $frontier; do if [ "$2" = "$f" ]; then next="$next $p"; fi; done',
  "  done",
  '  [ -n "$next" ] && kill -STOP $next 2>/dev/null',
  '  all="$all $next"; frontier=$next',
  "done",
  'kill "-$sig" $all 2>/dev/null',
  "kill -CONT $all 2>/dev/null",
  "exit 0",
  // biome-ignore-end lint/suspicious/noTemplateCurlyInString: end of the script
].join("\n");

/** `kill -<NAME>` takes the signal name without its `SIG` prefix; anything else is refused. */
export function signalForKill(signal: string): string {
  const name = signal.toUpperCase().replace(/^SIG/, "");
  if (!/^[A-Z][A-Z0-9]*$/.test(name)) {
    throw new SandboxError("Validation", `invalid signal ${JSON.stringify(signal)}`);
  }
  return name;
}
