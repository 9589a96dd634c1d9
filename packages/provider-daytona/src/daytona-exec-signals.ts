import { SandboxError, shellQuoteArgv, signalNumber } from "@sbox/core/spec";
import type { DaytonaHandle } from "./daytona-lifecycle.js";
import { DAYTONA_PROVIDER_NAME } from "./daytona-names.js";
import type { ResolvedDaytonaOptions } from "./daytona-options.js";
import { bounded } from "./daytona-sdk.js";

/**
 * The longest line of the supervisor's encoding: 4000 characters of base64 (3000 bytes, whole groups, so
 * every line decodes by itself). The daemon's labelled line (label, line, newline: 4004 bytes) then stays
 * within one 4 KiB write of its `printf` and cannot be cut by the other stream's lines in the log.
 */
export const ENCODED_LINE_CHARS = 4000;

/** The most one encoder read takes (16 lines): a read returns what has arrived, up to this. */
const ENCODER_READ_BYTES = 48_000;

/**
 * The supervisor every command runs under (`sh -c SUPERVISOR <base path> <argv…>`). Daytona's daemon logs a
 * session command's output through shell labellers that read it line by line (`cmdWrapperFormat`:
 * `while IFS= read -r line || [ -n "$line" ]; do printf '<label>%s\n' "$line"; done`): a NUL byte is dropped,
 * an unterminated last line gets a newline, a partial line waits for its end. So the command's output never
 * reaches the daemon as printed: its stdout and stderr are FIFOs (`<base>.out`, `<base>.err`), each read by
 * an encoder that turns every read (`dd` without `iflag=fullblock` returns what has arrived) into complete
 * lines of base64 at once (`base64 -w`, {@link ENCODED_LINE_CHARS} a line) — encoded stdout on the supervisor's stdout,
 * encoded stderr on its stderr — and the provider decodes them (`daytona-stream-decoder.ts`). Latency stays
 * one read; EOF is an empty read and ends the encoder.
 *
 * The command runs in the supervisor's foreground (an async list would have SIGINT and SIGQUIT ignored),
 * with stdin at EOF (an async session command's stdin is otherwise a pipe held open for `sendInput`),
 * through a `sh -c` step that writes its own pid and the supervisor's to `<base>.pid` and then `exec`s the
 * argv, so the pid file names the command itself, and the signal script reaches its tree only, never the
 * encoders (a SIGTERM handler's output is still encoded). The supervisor waits for both encoders — all
 * output is in the log before the daemon records the exit code — removes its files and exits with the
 * command's status (128 + n for a signal). Whatever the command prints reaches the daemon encoded: its
 * stdout and stderr are the FIFOs, so no label or line it prints is taken for the supervisor's. (Code that
 * goes out of its way — the supervisor's descriptors under `/proc`, or the daemon's log file, both the
 * sandbox user's — can write there; anything that is not the encoding is then a `Provider` error, and a
 * well-formed line only output of its own, which it could have printed.) A sandbox missing a tool this
 * needs says which (exit 125).
 */
const SUPERVISOR: string = [
  "for t in mkfifo dd base64; do",
  '  command -v "$t" >/dev/null 2>&1 || { printf "sbox: the sandbox has no %s, which exec needs\\n" "$t" >&2; exit 125; }',
  "done",
  `printf a | base64 -w ${ENCODED_LINE_CHARS} >/dev/null 2>&1 || { echo "sbox: the sandbox's base64 has no -w, which exec needs" >&2; exit 125; }`,
  'mkfifo -m 600 "$0.out" "$0.err" || exit 125',
  `enc() { while c=$(dd bs=${ENCODER_READ_BYTES} count=1 2>/dev/null | base64 -w ${ENCODED_LINE_CHARS}) && [ -n "$c" ]; do printf '%s\\n' "$c"; done; }`,
  'enc < "$0.out" & o=$!',
  'enc < "$0.err" >&2 & e=$!',
  // A subshell applies the redirections: dash and ash apply a simple command's in the shell itself while
  // it runs, so the supervisor's own stdout and stderr would be the FIFOs and its originals saved aside.
  // The group's stderr is /dev/null until the status is taken: dash and ash report a child ended by a
  // signal ("Killed", "Terminated") on their own stderr, which is the encoded stream's.
  `{ ( exec sh -c 'printf "%s %s\\n" "$$" "$PPID" > "$0.pid" && exec "$@"' "$0" "$@" < /dev/null > "$0.out" 2> "$0.err" ); s=$?; } 2>/dev/null`,
  'wait "$o"; wait "$e"',
  'rm -f "$0.out" "$0.err" "$0.pid"',
  'exit "$s"',
].join("\n");

/**
 * Signals the tree of the command whose pid file is "$2" with signal "$1" (a name without `SIG`): the
 * command (the file's first pid) and its descendants, nothing of the supervisor (the file's second pid)
 * nor its encoders. The pid file may not exist yet (the signal came right after the start): it is waited
 * for, up to 5 s. A pid whose parent is no longer the supervisor belongs to a command that already ended
 * (no error, exit 0). Each generation is stopped as it is found, so no member forks a child the walk
 * misses; the parent pid is read from `/proc/<pid>/stat` after the parenthesised command name (which may
 * hold spaces or parentheses). Then the tree is signalled and continued, so a catchable signal is handled.
 */
const SIGNAL_TREE_SCRIPT: string = [
  // biome-ignore-start lint/suspicious/noTemplateCurlyInString: shell parameter expansions, not templates
  "sig=$1; pidfile=$2; tries=0",
  'parent() { { read -r line < "/proc/$1/stat"; } 2>/dev/null || return 1; rest=${line##*) }; set -- $rest; ppid=$2; }',
  'while [ ! -s "$pidfile" ]; do',
  "  tries=$((tries + 1)); [ $tries -gt 100 ] && exit 0; sleep 0.05",
  "done",
  'read -r root supervisor < "$pidfile" || exit 0',
  'case "$root:$supervisor" in *[!0-9:]*|:*|*:) exit 0;; esac',
  'parent "$root" && [ "$ppid" = "$supervisor" ] || exit 0',
  "kill -STOP $root 2>/dev/null || exit 0",
  "all=$root; frontier=$root",
  'while [ -n "$frontier" ]; do',
  "  next=",
  "  for st in /proc/[0-9]*/stat; do",
  "    p=${st#/proc/}; p=${p%/stat}",
  '    parent "$p" || continue',
  '    for q in $frontier; do if [ "$ppid" = "$q" ]; then next="$next $p"; fi; done',
  "  done",
  '  [ -n "$next" ] && kill -STOP $next 2>/dev/null',
  '  all="$all $next"; frontier=$next',
  "done",
  'kill "-$sig" $all 2>/dev/null',
  "kill -CONT $all 2>/dev/null",
  "exit 0",
  // biome-ignore-end lint/suspicious/noTemplateCurlyInString: end of the script
].join("\n");

/** Where a command's supervisor keeps its FIFOs and pid file: `<base>.out`, `.err`, `.pid` (unguessable). */
export function supervisorBaseOf(execId: string): string {
  return `/tmp/.sbox-daytona-exec-${execId}`;
}

/** The pid file of the supervisor at `base`. */
export function pidFileOf(base: string): string {
  return `${base}.pid`;
}

/** The session command line of a command: its argv under the supervisor. */
export function supervisedCommandLine(argv: readonly string[], base: string): string {
  return shellQuoteArgv(["sh", "-c", SUPERVISOR, base, ...argv]);
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
