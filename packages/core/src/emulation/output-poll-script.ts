import { SandboxError } from "../errors/sandbox-error.js";
import { ownBytes } from "./concat-bytes.js";
import { decodeBase64 } from "./e5-base64.js";
import { MAX_PROOF_NAMES, PROOF_PREFIX } from "./exit-proof.js";
import { shellQuote } from "./shell-quote.js";

/**
 * The shell side of the poller (E3, E4): what one exec prints about each followed run, and how a poll exec
 * waits inside the sandbox until something happens. Only builtins run per run and per check, besides one
 * `stat` per check and the `tail | head | base64` that fetches new bytes; everything works with dash,
 * busybox ash and bash.
 */

/** Bytes per stream per poll at most: large outputs arrive in bounded pieces. */
export const POLL_MAX_BYTES: number = 4 * 1024 * 1024;
/** Bytes per stream per poll at least, when many runs share a poll. */
const POLL_MIN_BYTES = 256 * 1024;
/** What one poll may fetch over all its runs and streams, before base64. */
const POLL_BUDGET_BYTES = 16 * 1024 * 1024;

/** The per-stream byte cap of each run when `runs` share one poll. */
export function pollCapFor(runs: number): number {
  return Math.max(
    POLL_MIN_BYTES,
    Math.min(POLL_MAX_BYTES, Math.floor(POLL_BUDGET_BYTES / Math.max(1, runs))),
  );
}

/**
 * Functions every poll defines:
 * - `sbox_alive DIR`: true while the run's supervisor lives. The `runner` file holds its pid and start
 *   time (from `/proc`), so neither a zombie (a sandbox whose init does not reap) nor a reused pid counts.
 * - `sbox_proofs DIR`: `n` well-formed proof names in DIR, `px` the first few of them (space-led).
 * - `sbox_ended DIR TOK KNOWN`: true when the run is gone or its supervisor has exited, or when its exit
 *   file holds a number and, with `TOK=1` (the client holds the run's tokens), there are more proof names
 *   than the KNOWN ones the client saw last: names and exit files other processes write only cost a look.
 * - `sbox_poll DIR OUT ERR CAP RM TOK RAW`: prints `R <alive> <exit file> <out size> <err size> <done>
 *   <killed> <proof count><proofs>`, then the new stdout and stderr bytes from the offsets (at most CAP
 *   each): with `RAW=1` (the exec's stdout carries bytes) a line `<stdout bytes> <stderr bytes>` and exactly
 *   that many raw bytes of each, else in base64 on one line each. When DIR is gone: `G`, then `0 0` (raw) or
 *   two empty lines (see `sbox_poll_gone`). `done` is 1 when the run has ended
 *   (with `TOK=1`: the supervisor exited and left proof names) and this poll carries all of its output; then
 *   with `RM=1` the directory is removed. Liveness is read before the exit records and those before the
 *   sizes: a supervisor that dies right after writing its record is never taken for one that died without,
 *   and sizes read after the record are final.
 */
const POLL_FUNCTIONS = [
  "sbox_alive() {",
  '  r=; t=; { read -r r t < "$1/runner"; } 2>/dev/null',
  '  kill -0 "$r" 2>/dev/null || return 1',
  '  st=; { read -r st < "/proc/$r/stat"; } 2>/dev/null || return 0',
  `  st=\${st##*) }; set -- $st`,
  "  case $1 in Z|X|x) return 1;; esac",
  `  [ -z "$t" ] || [ "$t" = "\${20}" ]`,
  "}",
  "sbox_proofs() {",
  "  n=0; px=",
  `  for x in "$1"/${PROOF_PREFIX}*; do`,
  '    [ -e "$x" ] || continue',
  `    x=\${x##*/}; case $x in *[!0-9a-fx.]*) continue;; esac`,
  `    n=$((n + 1)); if [ $n -le ${MAX_PROOF_NAMES} ]; then px="$px $x"; fi`,
  "  done",
  "}",
  "sbox_ended() {",
  '  [ -d "$1" ] || return 0',
  '  sbox_alive "$1" || return 0',
  '  e=; { read -r e < "$1/exit"; } 2>/dev/null; case $e in ""|*[!0-9]*) return 1;; esac',
  '  [ "$2" = 1 ] || return 0',
  '  sbox_proofs "$1"; [ "$n" -gt "$3" ]',
  "}",
  "sbox_poll_gone() {",
  `  if [ "$1" = 1 ]; then printf 'G\\n0 0\\n'; else printf 'G\\n\\n\\n'; fi`,
  "}",
  // Exactly $3 bytes of file $1 from offset $2: zeros stand in for bytes of a file that shrank meanwhile, so
  // a run's output can never shift the framing of what follows it.
  "sbox_bytes() {",
  '  [ "$3" -gt 0 ] || return 0',
  '  { tail -c +$(($2 + 1)) "$1" 2>/dev/null; cat /dev/zero 2>/dev/null; } | head -c "$3"',
  "}",
  "sbox_poll() {",
  "  d=$1; oo=$2; eo=$3; cap=$4; rmd=$5; tok=$6; raw=$7",
  '  if [ ! -d "$d" ]; then sbox_poll_gone "$raw"; return 0; fi',
  '  a=1; sbox_alive "$d" || a=0',
  '  sbox_proofs "$d"',
  // A supervisor that left its proof is exiting: give it a few ms, then read the proofs again.
  '  if [ "$tok" = 1 ] && [ "$a" = 1 ] && [ "$n" -gt 0 ]; then',
  '    i=0; while [ $i -lt 5 ] && sbox_alive "$d"; do sleep 0.002 2>/dev/null || break; i=$((i + 1)); done',
  '    sbox_alive "$d" || { a=0; sbox_proofs "$d"; }',
  "  fi",
  '  e=; { read -r e < "$d/exit"; } 2>/dev/null; case $e in "") e=-;; *[!0-9]*) e=?;; esac',
  '  k=; { read -r k < "$d/killed"; } 2>/dev/null; case $k in ""|*[!A-Z0-9]*) k=-;; esac',
  `  set -- $(stat -c %s "$d/out" "$d/err" 2>/dev/null); o=\${1:-0}; r=\${2:-0}`,
  '  f=0; if [ "$tok" = 1 ]; then [ "$a" = 0 ] && [ "$n" -gt 0 ] && f=1; else case $e in -|"?") ;; *) f=1;; esac; fi',
  '  { [ $((o - oo)) -le "$cap" ] && [ $((r - eo)) -le "$cap" ]; } || f=0',
  `  printf 'R %s %s %s %s %s %s %s%s\\n' "$a" "$e" "$o" "$r" "$f" "$k" "$n" "$px"`,
  '  if [ "$raw" = 1 ]; then',
  "    no=0; ne=0",
  '    if [ "$o" -gt "$oo" ]; then no=$((o - oo)); [ "$no" -le "$cap" ] || no=$cap; fi',
  '    if [ "$r" -gt "$eo" ]; then ne=$((r - eo)); [ "$ne" -le "$cap" ] || ne=$cap; fi',
  `    printf '%s %s\\n' "$no" "$ne"; sbox_bytes "$d/out" "$oo" "$no"; sbox_bytes "$d/err" "$eo" "$ne"`,
  "  else",
  `    if [ "$o" -gt "$oo" ]; then tail -c +$((oo + 1)) "$d/out" | head -c "$cap" | base64 | tr -d '\\n'; fi; echo`,
  `    if [ "$r" -gt "$eo" ]; then tail -c +$((eo + 1)) "$d/err" | head -c "$cap" | base64 | tr -d '\\n'; fi; echo`,
  "  fi",
  '  if [ "$f" = 1 ] && [ "$rmd" = 1 ]; then rm -rf "$d" 2>/dev/null; fi',
  "  return 0",
  "}",
].join("\n");

/** One run as a poll sees it: its directory relative to the state dir and what the client knows of it. */
export interface PollMember {
  /** Run directory relative to the state directory. */
  readonly dir: string;
  /** Bytes of stdout and stderr already delivered. */
  readonly offsets: { readonly out: number; readonly err: number };
  /** Sizes of the output files the last poll saw (a held poll waits for them to change). */
  readonly seen: { readonly out: number; readonly err: number };
  /** Remove the directory in the poll that delivers the end (E3). */
  readonly removeWhenDone: boolean;
  /** Whether the client holds the run's exit tokens (then only a proof ends it). */
  readonly proven: boolean;
  /** Proof names the last poll saw (a held poll waits for more). */
  readonly proofsSeen: number;
}

/** How long and how often a held poll looks, in seconds per wait: short waits first, then longer ones. */
export interface HoldSchedule {
  readonly waits: readonly number[];
}

function schedule(
  steps: readonly (readonly [seconds: number, count: number])[],
  total: number,
): HoldSchedule {
  const waits: number[] = [];
  let spent = 0;
  for (const [seconds, count] of steps) {
    for (let i = 0; i < count && spent < total; i++) {
      waits.push(seconds);
      spent += seconds;
    }
  }
  const last = steps[steps.length - 1]![0];
  while (spent < total) {
    waits.push(last);
    spent += last;
  }
  return { waits };
}

/** While a command is followed in the foreground (E3): its end is seen within 40 ms, held for 3 s. */
export const FOREGROUND_HOLD: HoldSchedule = schedule(
  [
    [0.005, 4],
    [0.01, 6],
    [0.02, 10],
    [0.04, 1],
  ],
  3,
);
/** Only background processes (E4): their end is seen within 100 ms, held for 5 s. */
export const BACKGROUND_HOLD: HoldSchedule = schedule(
  [
    [0.01, 3],
    [0.025, 4],
    [0.05, 6],
    [0.1, 1],
  ],
  5,
);

/** What to build a poll exec from. */
export interface PollScriptRequest {
  readonly stateDir: string;
  readonly members: readonly PollMember[];
  /** The per-stream byte cap of each member. */
  readonly cap: number;
  /** The wake file of this poller, relative to the state dir. */
  readonly wake: string;
  /** Wait inside the sandbox until something changes, on this schedule; else poll at once. */
  readonly hold?: HoldSchedule | undefined;
  /** Create the wake file first, so that a held poll of this poller in flight returns (it lacks members). */
  readonly wakeHeld?: boolean | undefined;
  /** Run directories (relative) to remove at the end: runs that ended before their removal was safe. */
  readonly remove?: readonly string[] | undefined;
  /** Output bytes come back raw (the exec's stdout carries bytes), else in base64. */
  readonly raw: boolean;
}

const flag = (value: boolean): string => (value ? "1" : "0");

/** The shell call that polls one member, its output raw or in base64 (see {@link takeRunPoll}). */
export function pollCall(member: PollMember, cap: number, raw: boolean): string {
  return `sbox_poll ${shellQuote(member.dir)} ${member.offsets.out} ${member.offsets.err} ${cap} ${flag(member.removeWhenDone)} ${flag(member.proven)} ${flag(raw)}`;
}

/** The shell call that prints what {@link pollCall} prints for a run that is gone. */
export function pollGoneCall(raw: boolean): string {
  return `sbox_poll_gone ${flag(raw)}`;
}

/** The definitions every poll and start script begin with. */
export function pollFunctions(): string {
  return POLL_FUNCTIONS;
}

/** The script of one poll exec over `members`. */
export function pollScript(request: PollScriptRequest): string {
  const wake = shellQuote(request.wake);
  const lines = [POLL_FUNCTIONS, `if cd ${shellQuote(request.stateDir)} 2>/dev/null; then`, "  :"];
  if (request.wakeHeld) lines.push(`  [ -d poll ] || mkdir -p poll; : > ${wake}`);
  if (request.hold) {
    const dirs = request.members.map((member) => shellQuote(member.dir));
    const files = dirs.map((dir) => `${dir}/out ${dir}/err`).join(" ");
    const expected = request.members.map((member) => `${member.seen.out}\n${member.seen.err}`).join("\n");
    const ended = request.members
      .map((member, i) => `sbox_ended ${dirs[i]} ${flag(member.proven)} ${member.proofsSeen} && return 0`)
      .join("; ");
    lines.push(
      `  if [ -e ${wake} ]; then rm -f ${wake}; fi`,
      `  sbox_sizes() { stat -c %s ${files} 2>/dev/null; }`,
      `  sbox_news() { [ -e ${wake} ] && return 0; ${ended}; [ "$(sbox_sizes)" = ${shellQuote(expected)} ] || return 0; return 1; }`,
      // `read -t` on a pipe nobody writes waits without a process per wait (busybox ash, bash); dash
      // has no `read -t` and sleeps instead.
      "  rt=0; read -t 0 x </dev/null 2>/dev/null; [ $? -eq 2 ] || rt=1",
      '  t=poll/t.$$; if [ $rt = 1 ]; then { mkdir -p poll && mkfifo "$t"; } 2>/dev/null || rt=0; fi',
      "  sbox_hold() {",
      `    for s in ${request.hold.waits.join(" ")}; do`,
      "      sbox_news && return 0",
      '      if [ $rt = 1 ]; then read -t "$s" x <&9; else sleep "$s"; fi',
      "    done",
      "  }",
      '  if [ $rt = 1 ]; then { rm -f "$t"; sbox_hold; } 9<>"$t"; else sbox_hold; fi',
      `  if [ -e ${wake} ]; then rm -f ${wake}; fi`,
    );
  }
  lines.push("else", `  sbox_poll() { ${pollGoneCall(request.raw)}; }`, "fi");
  for (const member of request.members) lines.push(pollCall(member, request.cap, request.raw));
  if (request.remove && request.remove.length > 0) {
    lines.push(`rm -rf ${request.remove.map((dir) => shellQuote(dir)).join(" ")} 2>/dev/null; true`);
  }
  return lines.join("\n");
}

/** What one poll printed about one run. */
export interface RunPoll {
  /** The run directory is gone. */
  readonly gone: boolean;
  /** The supervisor is alive. */
  readonly alive: boolean;
  /** The exit file: a number, `-` (none) or `?` (not a number). */
  readonly exitRecord: string;
  /** The output file sizes at the time of the poll. */
  readonly sizes: { readonly out: number; readonly err: number };
  /** The script saw the end and this poll carries all output (the directory is removed when asked). */
  readonly done: boolean;
  /** The last signal sent through the emulation, or `-`. */
  readonly killed: string;
  /** Well-formed proof names in the run directory (the first few). */
  readonly proofs: readonly string[];
  /** How many well-formed proof names the run directory holds. */
  readonly proofCount: number;
  readonly stdout: Uint8Array;
  readonly stderr: Uint8Array;
}

/** Splits the first `count` lines off `bytes` (without their newlines); the rest after them. */
export function takeLines(bytes: Uint8Array, count: number): { lines: Uint8Array[]; rest: Uint8Array } {
  const lines: Uint8Array[] = [];
  let at = 0;
  while (lines.length < count) {
    const end = bytes.indexOf(0x0a, at);
    if (end === -1) {
      if (at < bytes.length) {
        lines.push(bytes.subarray(at));
        at = bytes.length;
      }
      break;
    }
    lines.push(bytes.subarray(at, end));
    at = end + 1;
  }
  return { lines, rest: bytes.subarray(at) };
}

const decoder = new TextDecoder();

/**
 * Takes what {@link pollCall} printed for one run off the front of a poll's stdout: the run as the poll
 * saw it, and the rest (the next runs). Raw output is framed by its byte counts (checked against the rest
 * and the cap); base64 output by lines. Large raw pieces are views of `bytes`, small ones copies.
 */
export function takeRunPoll(
  bytes: Uint8Array,
  options: { readonly raw: boolean; readonly cap: number },
  context: { provider: string; what: string },
): { poll: RunPoll; rest: Uint8Array } {
  if (!options.raw) {
    const taken = takeLines(bytes, 3);
    const [header, out, err] = taken.lines;
    if (taken.lines.length < 3) throw unexpectedPoll(context);
    return {
      poll: parseRunPoll(header!, decodeOutput(out!), decodeOutput(err!), context),
      rest: taken.rest,
    };
  }
  const taken = takeLines(bytes, 2);
  const counts = /^([0-9]+) ([0-9]+)$/.exec(decoder.decode(taken.lines[1] ?? new Uint8Array(0)));
  const outLength = Number(counts?.[1]);
  const errLength = Number(counts?.[2]);
  if (
    taken.lines.length < 2 ||
    !counts ||
    outLength > options.cap ||
    errLength > options.cap ||
    outLength + errLength > taken.rest.length
  ) {
    throw unexpectedPoll(context);
  }
  const body = taken.rest;
  return {
    poll: parseRunPoll(
      taken.lines[0]!,
      ownBytes(body.subarray(0, outLength)),
      ownBytes(body.subarray(outLength, outLength + errLength)),
      context,
    ),
    rest: body.subarray(outLength + errLength),
  };
}

function decodeOutput(line: Uint8Array): Uint8Array {
  return line.length > 0 ? decodeBase64(line) : new Uint8Array(0);
}

function unexpectedPoll(context: { provider: string; what: string }): SandboxError {
  return new SandboxError("Provider", `reading the output of ${context.what}: unexpected poll output`, {
    provider: context.provider,
  });
}

/** Parses the header line {@link pollCall} printed for one run, with its output already taken. */
function parseRunPoll(
  line: Uint8Array,
  stdout: Uint8Array,
  stderr: Uint8Array,
  context: { provider: string; what: string },
): RunPoll {
  const header = decoder.decode(line).trim();
  const empty = new Uint8Array(0);
  if (header === "G") {
    return {
      gone: true,
      alive: false,
      exitRecord: "-",
      sizes: { out: 0, err: 0 },
      done: false,
      killed: "-",
      proofs: [],
      proofCount: 0,
      stdout: empty,
      stderr: empty,
    };
  }
  const words = header.split(" ");
  const [tag, alive, exitRecord, out, err, done, killed, count, ...proofs] = words;
  if (
    tag !== "R" ||
    !/^[01]$/.test(alive ?? "") ||
    !/^([0-9]+|-|\?)$/.test(exitRecord ?? "") ||
    !/^[0-9]+$/.test(out ?? "") ||
    !/^[0-9]+$/.test(err ?? "") ||
    !/^[01]$/.test(done ?? "") ||
    !/^[0-9]+$/.test(count ?? "")
  ) {
    throw unexpectedPoll(context);
  }
  return {
    gone: false,
    alive: alive === "1",
    exitRecord: exitRecord!,
    sizes: { out: Number(out), err: Number(err) },
    done: done === "1",
    killed: killed ?? "-",
    proofs,
    proofCount: Number(count),
    stdout,
    stderr,
  };
}
