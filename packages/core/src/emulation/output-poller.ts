import { SandboxError } from "../errors/sandbox-error.js";
import { exitCodeForSignal } from "../sandbox/signal-names.js";
import type { DriverExit, DriverSandbox } from "../spec/provider-spec.js";
import { abortReasonOf } from "./e7-timeout.js";
import type { EmulationContext, ShellResult } from "./emulation-context.js";
import { RUN_FILES } from "./output-detached.js";
import { shellQuote } from "./shell-quote.js";

/**
 * Bytes per stream per poll: large outputs arrive in bounded pieces (a 50 MB output in 13 polls), small
 * enough that one poll's base64 text stays a modest exec result.
 */
export const POLL_MAX_BYTES: number = 4 * 1024 * 1024;
/** First poll delay, and the delay right after output arrived. */
export const POLL_MIN_DELAY_MS = 15;
/** Longest delay between polls of an idle command. */
export const POLL_MAX_DELAY_MS = 250;
const POLL_GROWTH = 1.5;

/** Byte offsets already delivered, per stream. */
export interface OutputOffsets {
  out: number;
  err: number;
}

/** What one poll saw. */
export interface PollResult {
  /** New stdout bytes from the offset on (at most `POLL_MAX_BYTES`). */
  stdout: Uint8Array;
  /** New stderr bytes from the offset on (at most `POLL_MAX_BYTES`). */
  stderr: Uint8Array;
  /** How the command ended, once it has and all of its output was delivered by this poll. */
  exit: DriverExit | undefined;
  /** True when the run directory no longer exists. */
  gone: boolean;
  /** True when more output is waiting than this poll carried. */
  more: boolean;
  /** True when the supervisor was gone and no exit status was recorded (see `followOutput`). */
  lost: boolean;
}

/** Options of {@link followOutput}. */
export interface FollowOptions {
  readonly signal: AbortSignal;
  onStdout(chunk: Uint8Array): void;
  onStderr(chunk: Uint8Array): void;
  /** Remove the run directory in the poll that delivers the end (E3); E4 keeps it for list/connect. */
  readonly removeWhenDone: boolean;
  /** Offsets to start from (default 0: replay everything). */
  readonly from?: OutputOffsets | undefined;
  /** What the command is, for error messages. */
  readonly what: string;
  /** What a {@link pollScript} from the `from` offsets printed when it ran along with the start. */
  readonly initial?: ShellResult | undefined;
}

/**
 * The script of one poll. Liveness of the runner is read before the exit file so that a runner that dies
 * right after writing it is never mistaken for one that died without writing it. Output is base64 so a
 * text-only exec primitive carries any bytes.
 */
export function pollScript(dir: string, from: OutputOffsets, removeWhenDone: boolean): string {
  const d = shellQuote(dir);
  const stream = (file: string, offset: number): string =>
    `tail -c +${offset + 1} ${d}/${file} | head -c ${POLL_MAX_BYTES} | base64 | tr -d '\\n'; echo`;
  return [
    `[ -d ${d} ] || { echo gone; exit 0; }`,
    `a=1; kill -0 "$(cat ${d}/${RUN_FILES.runner} 2>/dev/null)" 2>/dev/null || a=0`,
    `e=$(cat ${d}/${RUN_FILES.exit} 2>/dev/null); k=$(cat ${d}/${RUN_FILES.killed} 2>/dev/null)`,
    `o=$(wc -c < ${d}/${RUN_FILES.out}); r=$(wc -c < ${d}/${RUN_FILES.err})`,
    `f=0; if [ -n "$e" ] && [ $((o - ${from.out})) -le ${POLL_MAX_BYTES} ] && [ $((r - ${from.err})) -le ${POLL_MAX_BYTES} ]; then f=1; fi`,
    `echo "$a \${e:--} $o $r $f \${k:--}"`,
    stream(RUN_FILES.out, from.out),
    stream(RUN_FILES.err, from.err),
    removeWhenDone ? `if [ $f = 1 ]; then rm -rf ${d}; fi` : "",
  ].join("\n");
}

/** How a run ended, from its exit status and the signal last sent through the emulation. */
function exitOf(status: number, killed: string): DriverExit {
  // A shell reports death by signal n as 128+n; only a signal the emulation sent itself tells the two
  // apart from a plain `exit 128+n`, so the name is reported only then.
  return killed !== "-" && status === exitCodeForSignal(killed)
    ? { exitCode: status, signal: killed }
    : { exitCode: status };
}

/** Reads new output of a run from `from` on, and whether it has ended. */
export async function pollOutput(
  ctx: EmulationContext,
  sandbox: DriverSandbox,
  dir: string,
  from: OutputOffsets,
  options: { signal: AbortSignal; removeWhenDone: boolean; what: string },
): Promise<PollResult> {
  const result = await ctx.exec(sandbox, pollScript(dir, from, options.removeWhenDone), {
    signal: options.signal,
  });
  return parsePoll(ctx, result, from, options.what);
}

/** Parses what one run of {@link pollScript} printed. */
export function parsePoll(
  ctx: EmulationContext,
  result: ShellResult,
  from: OutputOffsets,
  what: string,
): PollResult {
  const lines = new TextDecoder().decode(result.stdout).split("\n");
  const empty = new Uint8Array(0);
  if (result.exitCode === 0 && lines[0] === "gone") {
    return { stdout: empty, stderr: empty, exit: undefined, gone: true, more: false, lost: false };
  }
  const header = (lines[0] ?? "").trim().split(/\s+/);
  if (result.exitCode !== 0 || header.length !== 6 || lines.length < 3) {
    throw new SandboxError(
      "Provider",
      `reading the output of ${what} failed (exit ${result.exitCode}): ${new TextDecoder().decode(result.stderr).trim()}`,
      { provider: ctx.provider },
    );
  }
  const [alive, status, outSize, errSize, finished, killed] = header as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const stdout = new Uint8Array(Buffer.from(lines[1] ?? "", "base64"));
  const stderr = new Uint8Array(Buffer.from(lines[2] ?? "", "base64"));
  const more = from.out + stdout.length < Number(outSize) || from.err + stderr.length < Number(errSize);
  const lost = status === "-" && alive === "0";
  if (finished === "1" && !/^[0-9]+$/.test(status)) {
    throw new SandboxError("Provider", `${what} recorded an unreadable exit status`, {
      provider: ctx.provider,
    });
  }
  const exit = finished === "1" ? exitOf(Number(status), killed) : undefined;
  return { stdout, stderr, exit, gone: false, more, lost };
}

/** How long to wait before looking again at a run whose supervisor seemed gone. */
const LOST_CONFIRM_DELAY_MS = 100;

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
function delay(ms: number, signal: AbortSignal, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(abortReasonOf(signal.reason, what));
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortReasonOf(signal.reason, what));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Follows a detached run until it ends: polls byte offsets, hands new output to the callbacks in order,
 * polls again at once while output is pending, and backs off from `POLL_MIN_DELAY_MS` to
 * `POLL_MAX_DELAY_MS` while the command is quiet. Resolves with how it ended once all output was delivered;
 * rejects with the signal's reason when it aborts (the caller decides whether to kill the command).
 */
export async function followOutput(
  ctx: EmulationContext,
  sandbox: DriverSandbox,
  dir: string,
  options: FollowOptions,
): Promise<DriverExit & { exitCode: number }> {
  const offsets: OutputOffsets = { out: options.from?.out ?? 0, err: options.from?.err ?? 0 };
  let wait = POLL_MIN_DELAY_MS;
  let initial = options.initial;
  let lostBefore = false;
  for (;;) {
    if (options.signal.aborted) throw abortReasonOf(options.signal.reason, options.what);
    const poll = initial
      ? parsePoll(ctx, initial, offsets, options.what)
      : await pollOutput(ctx, sandbox, dir, offsets, options);
    initial = undefined;
    if (poll.gone) {
      throw new SandboxError("NotFound", `the state of ${options.what} is gone from the sandbox`, {
        provider: ctx.provider,
      });
    }
    offsets.out += poll.stdout.length;
    offsets.err += poll.stderr.length;
    if (poll.stdout.length > 0) options.onStdout(poll.stdout);
    if (poll.stderr.length > 0) options.onStderr(poll.stderr);
    if (poll.exit) return poll.exit as DriverExit & { exitCode: number };
    if (poll.lost) {
      // A supervisor that is gone without recording an exit status is final, so it must be seen twice: one
      // poll can misread it when the sandbox is short of resources (a `cat` or `kill` that could not run).
      if (lostBefore) {
        throw new SandboxError(
          "Provider",
          `${options.what} lost its supervisor process inside the sandbox; its exit status is unknown`,
          { provider: ctx.provider },
        );
      }
      lostBefore = true;
      await delay(LOST_CONFIRM_DELAY_MS, options.signal, options.what);
      continue;
    }
    lostBefore = false;
    if (poll.more) continue;
    wait =
      poll.stdout.length + poll.stderr.length > 0
        ? POLL_MIN_DELAY_MS
        : Math.min(POLL_MAX_DELAY_MS, wait * POLL_GROWTH);
    await delay(wait, options.signal, options.what);
  }
}
