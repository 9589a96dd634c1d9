import { SandboxError, shellQuoteArgv, signalNumber } from "@sbox/core/spec";
import type { DaytonaHandle } from "./daytona-lifecycle.js";
import { DAYTONA_PROVIDER_NAME } from "./daytona-names.js";
import type { ResolvedDaytonaOptions } from "./daytona-options.js";
import { bounded } from "./daytona-sdk.js";

/**
 * The supervisor a streamed command runs under (`sh -c SUPERVISOR <pid file> <argv…>`). Daytona reports no
 * pid for a session command, and its daemon runs the command inside the session's own shell (`. cmd.sh`),
 * where `exit` would end the session; so the command runs as a child of this shell, with stdin at EOF (an
 * async session command's stdin is otherwise a pipe held open for `sendInput`), and this shell writes its
 * own pid first, so the command's tree can be found and signalled: the supervisor's children and theirs.
 * The command is its argv itself (a shell snippet is `sh -c <snippet>`), with no shell of ours in between
 * that a signal could end in its place. The supervisor is never signalled itself: it waits for the command,
 * removes the pid file and exits with the command's status (128 + n for a signal).
 */
const SUPERVISOR = 'printf "%s\\n" "$$" > "$0" || exit 125; "$@" < /dev/null; s=$?; rm -f "$0"; exit "$s"';

/**
 * Signals the tree of the supervisor whose pid file is "$2" with signal "$1" (a name without `SIG`), the
 * supervisor itself left out. The pid file may not exist yet (the signal came right after the start): it
 * is waited for, up to 5 s. Each generation is stopped as it is found, so no member forks a child the walk
 * misses; the parent pid is read from `/proc/<pid>/stat` after the parenthesised command name (which may
 * hold spaces or parentheses). Then the tree is signalled and continued, so a catchable signal is handled.
 * A supervisor with no child yet (between its pid and its fork) is looked at again, for up to 1 s. A command
 * that already ended is no error (exit 0).
 */
const SIGNAL_TREE_SCRIPT: string = [
  // biome-ignore-start lint/suspicious/noTemplateCurlyInString: shell parameter expansions, not templates
  "sig=$1; pidfile=$2; tries=0",
  'while [ ! -s "$pidfile" ]; do',
  "  tries=$((tries + 1)); [ $tries -gt 100 ] && exit 0; sleep 0.05",
  "done",
  'read -r root < "$pidfile" || exit 0',
  'case $root in ""|*[!0-9]*) exit 0;; esac',
  "tries=0",
  "while :; do",
  '  [ -d "/proc/$root" ] || exit 0',
  "  all=; frontier=$root",
  '  while [ -n "$frontier" ]; do',
  "    next=",
  "    for st in /proc/[0-9]*/stat; do",
  '      { read -r line < "$st"; } 2>/dev/null || continue',
  "      rest=${line##*) }",
  "      set -- $rest",
  "      p=${st#/proc/}; p=${p%/stat}",
  '      for q in $frontier; do if [ "$2" = "$q" ]; then next="$next $p"; fi; done',
  "    done",
  '    [ -n "$next" ] && kill -STOP $next 2>/dev/null',
  '    all="$all $next"; frontier=$next',
  "  done",
  '  [ -n "$all" ] && break',
  "  tries=$((tries + 1)); [ $tries -gt 20 ] && exit 0; sleep 0.05",
  "done",
  'kill "-$sig" $all 2>/dev/null',
  "kill -CONT $all 2>/dev/null",
  "exit 0",
  // biome-ignore-end lint/suspicious/noTemplateCurlyInString: end of the script
].join("\n");

/** Where a streamed command's supervisor writes its pid (a name nobody else can guess). */
export function pidFileOf(execId: string): string {
  return `/tmp/.sbox-daytona-exec-${execId}.pid`;
}

/** The session command line of a streamed command: its argv under the supervisor. */
export function supervisedCommandLine(argv: readonly string[], pidFile: string): string {
  return shellQuoteArgv(["sh", "-c", SUPERVISOR, pidFile, ...argv]);
}

/** `kill -<NAME>` takes a known signal name without its `SIG` prefix; anything else is refused. */
function killName(signal: string): string {
  const name = signal.toUpperCase().replace(/^SIG/, "");
  if (!/^[A-Z][A-Z0-9]*$/.test(name) || signalNumber(`SIG${name}`) === undefined) {
    throw new SandboxError("Validation", `daytona: unknown signal ${JSON.stringify(signal)}`, {
      provider: DAYTONA_PROVIDER_NAME,
      retryable: false,
    });
  }
  return name;
}

/**
 * Sends `signal` to a streamed command's whole tree: the signal script through `POST /process/execute`
 * (one request; the command's own session is busy running it). Resolves once the signal was sent.
 */
export async function signalDaytonaExec(
  options: ResolvedDaytonaOptions,
  handle: DaytonaHandle,
  pidFile: string,
  signal: string,
): Promise<void> {
  const line = shellQuoteArgv(["sh", "-c", SIGNAL_TREE_SCRIPT, "sh", killName(signal), pidFile]);
  const deadline = options.requestTimeoutMs;
  const result = await bounded(
    handle.native.process.executeCommand(line, undefined, undefined, Math.ceil(deadline / 1000)),
    AbortSignal.timeout(deadline + 1_000),
    deadline + 1_000,
    `signal ${signal}`,
  );
  if (result.exitCode !== 0) {
    throw new SandboxError("Provider", `daytona: the signal script exited ${String(result.exitCode)}`, {
      provider: DAYTONA_PROVIDER_NAME,
    });
  }
}
