/**
 * E5's file transfers: reads and writes of file contents over the exec primitive, pipelined (several
 * pieces in flight at once, a bounded number) in both directions. Reads come back raw where the provider's
 * stdout carries bytes (few large pieces), else as base64 (an exec that only carries text); writes travel
 * raw on the exec's stdin where it takes bytes, as base64 on stdin where it takes text, else as base64 on
 * command lines of at most 64 KiB. Each piece is written at its own offset
 * (`dd seek=... conv=notrunc`) into a temporary file beside the target, which the last exec checks for the
 * expected size and moves into place. Only tools and flags that GNU and busybox share are used.
 */

import { SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import type { DriverSandbox } from "../spec/provider-spec.js";
import { ownBytes } from "./concat-bytes.js";
import { decodeBase64 } from "./e5-base64.js";
import { FILE_EXIT, type FileErrorContext, GONE_FUNCTION } from "./e5-file-errors.js";
import { joinPath, normalizePath, parentOf, randomToken, shellPath } from "./e5-paths.js";
import {
  type EmulationContext,
  MAX_COMMAND_LINE_BYTES,
  type ShellResult,
  utf8Length,
} from "./emulation-context.js";
import { feedTo, payloadLimit } from "./exec-payload.js";

/** What the transfers need from E5: its exec (errors mapped), its result check, what stdout carries. */
export interface TransferShell {
  readonly ctx: EmulationContext;
  exec(
    sandbox: DriverSandbox,
    script: string,
    signal: AbortSignal,
    operation: string,
    stdin?: Uint8Array,
  ): Promise<ShellResult>;
  check(result: ShellResult, context: FileErrorContext): ShellResult;
  errorContext(operation: string, path: string, messages?: FileErrorContext["messages"]): FileErrorContext;
  /** Whether the provider's stdout is known to carry raw bytes (learned from earlier results). */
  rawStdout(): boolean;
}

const MIB = 1024 * 1024;
/** `dd` block size of reads: pieces start at multiples of it. */
const READ_BLOCK = 64 * 1024;

/**
 * How contents move, by what the exec carries. Over raw stdout and stdin few large pieces win: every exec
 * costs a round trip and the transport, not the number of execs in flight, bounds the throughput. Over base64
 * and command lines the pieces are small and several are in flight, so round trips overlap.
 */
interface ReadPlan {
  /** Whether pieces come back as raw bytes (else base64). */
  readonly raw: boolean;
  /** Bytes the first exec brings, by use: a whole-file read, or a stream. */
  readonly firstWhole: number;
  readonly firstStream: number;
  /** Bytes per later piece, and how many are in flight. */
  readonly piece: number;
  readonly window: number;
}

function readPlan(shell: TransferShell): ReadPlan {
  return shell.rawStdout()
    ? { raw: true, firstWhole: 64 * MIB, firstStream: 8 * MIB, piece: 8 * MIB, window: 3 }
    : { raw: false, firstWhole: 4 * MIB, firstStream: 4 * MIB, piece: 4 * MIB, window: 4 };
}

/** Raw bytes per write exec, and how many are in flight, when they travel on stdin. */
const STDIN_WRITE = { bytes: { piece: 32 * MIB, window: 2 }, text: { piece: 6 * MIB, window: 4 } } as const;
/** Pieces in flight when they travel on command lines. */
const INLINE_WINDOW = 4;
/**
 * What a write script may use of the command line when the data travels on it: the rest of the 64 KiB is
 * left to wrappers added by other emulations (cwd/env, exit-code marker).
 */
const INLINE_SCRIPT_BUDGET = MAX_COMMAND_LINE_BYTES - 4 * 1024;
/** `dd` block size of positional writes: pieces start at multiples of it. */
const WRITE_BLOCK_STDIN = 64 * 1024;
const WRITE_BLOCK_INLINE = 1024;
export const READ_FAILED = "sbox-read-failed";

/** Runs tasks with at most `size` in flight, in the order they are added; the first failure stops it. */
class Pipeline {
  private readonly running = new Set<Promise<void>>();
  private failure: { error: unknown } | undefined;

  constructor(private readonly size: number) {}

  /** Starts `task` once a slot is free; throws the first failure of any earlier task. */
  async add(task: () => Promise<void>): Promise<void> {
    while (this.running.size >= this.size && !this.failure) await Promise.race(this.running);
    if (this.failure) throw this.failure.error;
    const run: Promise<void> = task().then(
      () => {
        this.running.delete(run);
      },
      (error: unknown) => {
        this.running.delete(run);
        this.failure ??= { error };
      },
    );
    this.running.add(run);
  }

  /** Waits for every task; throws the first failure. */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.race(this.running);
    if (this.failure) throw this.failure.error;
  }

  /** Waits for every task, ignoring failures (before cleaning up after one). */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.running]);
  }
}

/** One open read: the size and first piece the first exec saw, and a way to fetch the others. */
export interface OpenRead {
  readonly size: number;
  readonly first: Uint8Array;
  /** How many pieces after the first one there are to fetch (by the size the first exec saw). */
  readonly more: number;
  /** Bytes per later piece (a shorter one ends the file), and how many may be in flight. */
  readonly pieceSize: number;
  readonly window: number;
  /** Piece `index` (1-based after the first), decoded. */
  piece(index: number, signal: AbortSignal): Promise<Uint8Array>;
}

/**
 * Opens a file for reading: one exec checks the path, reports the size and brings the first piece (the
 * whole file up to 64 MiB over raw stdout when `whole`, so most files take one exec).
 */
export async function openRead(
  shell: TransferShell,
  sandbox: DriverSandbox,
  rawPath: string,
  signal: AbortSignal,
  use: "whole" | "stream",
): Promise<OpenRead> {
  const plan = readPlan(shell);
  const path = normalizePath(rawPath);
  const context = shell.errorContext("files.read", path);
  const arg = shellPath(path);
  const encode = plan.raw ? "" : " | base64";
  const firstSize = use === "whole" ? plan.firstWhole : plan.firstStream;
  const first = shell.check(
    await shell.exec(
      sandbox,
      `${GONE_FUNCTION}f=${arg}
if [ ! -e "$f" ]; then sbox_gone "$f"; fi
if [ -d "$f" ]; then exit ${FILE_EXIT.isDirectory}; fi
[ -f "$f" ] || exit ${FILE_EXIT.notRegular}
[ -r "$f" ] || exit ${FILE_EXIT.denied}
s=$(stat -L -c %s "$f") || exit 1
printf '%s\\n' "$s"
if [ "$s" -gt 0 ]; then { dd if="$f" bs=${READ_BLOCK} count=${firstSize / READ_BLOCK} 2>/dev/null || echo ${READ_FAILED} >&2; }${encode}
else { cat "$f" || echo ${READ_FAILED} >&2; }${encode}; fi`,
      signal,
      "files.read",
    ),
    context,
  );
  const newline = first.stdout.indexOf(0x0a);
  const size = Number(new TextDecoder().decode(first.stdout.subarray(0, Math.max(newline, 0))));
  if (newline < 0 || !Number.isSafeInteger(size)) {
    throw new SandboxError(
      "Provider",
      `files.read ${JSON.stringify(path)}: unexpected output from the sandbox`,
      {
        provider: shell.ctx.provider,
      },
    );
  }
  const body = first.stdout.subarray(newline + 1);
  const firstPiece = plan.raw ? ownBytes(body) : decodeBase64(body);
  // A size of 0 means the content was read whole by `cat` (/proc files report size 0); a short first piece
  // means the file shrank meanwhile.
  const more = size === 0 || firstPiece.length < firstSize ? 0 : Math.ceil((size - firstSize) / plan.piece);
  return {
    size,
    first: firstPiece,
    more: Math.max(0, more),
    pieceSize: plan.piece,
    window: plan.window,
    async piece(index, pieceSignal) {
      const skip = (firstSize + (index - 1) * plan.piece) / READ_BLOCK;
      const result = shell.check(
        await shell.exec(
          sandbox,
          `f=${arg}
[ -f "$f" ] || exit ${FILE_EXIT.notFound}
{ dd if="$f" bs=${READ_BLOCK} skip=${skip} count=${plan.piece / READ_BLOCK} 2>/dev/null || echo ${READ_FAILED} >&2; }${encode}`,
          pieceSignal,
          "files.read",
        ),
        context,
      );
      return plan.raw ? ownBytes(result.stdout) : decodeBase64(result.stdout);
    },
  };
}

/**
 * Fetches the pieces of an open read in order, `open.window` at a time ahead of the consumer. A short piece
 * ends the file (it shrank); the last piece may be longer than the first size said (it grew meanwhile).
 */
export function readPieces(
  open: OpenRead,
  signal: AbortSignal,
): { next(): Promise<Uint8Array | undefined>; cancel(): void } {
  const cancelled = new AbortController();
  const pieceSignal = AbortSignal.any([signal, cancelled.signal]);
  const ahead: Promise<Uint8Array>[] = [];
  let requested = 0;
  let ended = false;
  const fill = () => {
    while (!ended && ahead.length < open.window && requested < open.more) {
      requested++;
      const fetched = open.piece(requested, pieceSignal);
      // Read ahead, so a failure is only reported when its piece is asked for.
      fetched.catch(() => undefined);
      ahead.push(fetched);
    }
  };
  return {
    async next() {
      if (ended) return undefined;
      fill();
      const fetched = ahead.shift();
      if (!fetched) {
        ended = true;
        return undefined;
      }
      const piece = await fetched;
      if (piece.length < open.pieceSize) {
        ended = true;
        cancelled.abort();
      }
      fill();
      return piece.length > 0 ? piece : undefined;
    },
    cancel() {
      ended = true;
      cancelled.abort();
    },
  };
}

/** One upload: a temporary file beside the target, written piece by piece, moved into place at the end. */
export interface OpenUpload {
  /** Bytes per piece (the last one may be shorter), and how many may be in flight. */
  readonly pieceSize: number;
  readonly window: number;
  /** Sends the piece at byte `offset` (a multiple of `pieceSize`) while others are in flight. */
  piece(offset: number, data: Uint8Array): Promise<void>;
  /** Sends the last piece (possibly empty), once every other one was written, and moves the file in. */
  finish(offset: number, data: Uint8Array, total: number): Promise<void>;
  /** Removes the temporary file after a failure (best effort: the original error is what matters). */
  discard(): Promise<void>;
}

/** Starts an upload to `rawPath`; nothing runs until the first piece is sent. */
export function openUpload(
  shell: TransferShell,
  sandbox: DriverSandbox,
  rawPath: string,
  mode: number | undefined,
  signal: AbortSignal,
): OpenUpload {
  const { ctx } = shell;
  const path = normalizePath(rawPath);
  if (path === "/" || path === "." || path === ".." || path.endsWith("/.") || path.endsWith("/..")) {
    throw new SandboxError("Validation", `files.write ${JSON.stringify(path)}: not a file path`, {
      provider: ctx.provider,
      retryable: false,
    });
  }
  if (mode !== undefined && (!Number.isInteger(mode) || mode < 0 || mode > 0o7777)) {
    throw new SandboxError("Validation", "files.write: mode must be an integer between 0 and 0o7777", {
      provider: ctx.provider,
      retryable: false,
    });
  }
  const context = shell.errorContext("files.write", path, {
    [FILE_EXIT.isDirectory]: "the path is a directory",
  });
  const tmp = shellPath(joinPath(parentOf(path), `.sbox-write-${randomToken()}.tmp`));
  // Every piece checks the target and creates the parent: pieces run in any order.
  const begin = `t=${shellPath(path)}; d=${shellPath(parentOf(path))}; tmp=${tmp}
if [ -d "$t" ]; then exit ${FILE_EXIT.isDirectory}; fi
if [ ! -d "$d" ]; then e=$(mkdir -p "$d" 2>&1) || { case $e in *"ot a directory"*|*"ile exists"*) exit ${FILE_EXIT.parentNotDirectory};; *ermission*) exit ${FILE_EXIT.denied};; esac; printf '%s\\n' "$e" >&2; exit 1; }; fi
sbox_dd() { e=$(dd "$@" 2>&1) || { printf '%s\\n' "$e" >&2; return 1; }; }
`;
  const octal = mode === undefined ? undefined : `0${mode.toString(8)}`;
  const keepMode =
    octal === undefined
      ? `if [ -f "$t" ] && [ ! -L "$t" ]; then m=$(stat -c %a "$t") && chmod "$m" "$tmp"; fi\n`
      : `chmod ${octal} "$tmp" || { rm -f "$tmp"; exit 1; }\n`;
  const finish = (total: number): string => `s=$(stat -c %s "$tmp" 2>/dev/null) || s=-
if [ "$s" != ${total} ]; then rm -f "$tmp"; exit ${FILE_EXIT.tempVanished}; fi
if [ -d "$t" ]; then rm -f "$tmp"; exit ${FILE_EXIT.isDirectory}; fi
${keepMode}if [ -L "$t" ]; then cat "$tmp" > "$t" || { rm -f "$tmp"; exit 1; }; rm -f "$tmp"${octal === undefined ? "" : `; chmod ${octal} "$t"`}
else mv -f "$tmp" "$t" || { rm -f "$tmp"; exit 1; }; fi
`;
  const block = ctx.execStdin === "none" ? WRITE_BLOCK_INLINE : WRITE_BLOCK_STDIN;
  const sink = (offset: number): string =>
    `sbox_dd of="$tmp" bs=${block} seek=${offset / block} conv=notrunc`;
  const transport = ctx.execStdin === "none" ? undefined : STDIN_WRITE[ctx.execStdin];
  const window = transport?.window ?? INLINE_WINDOW;
  let pieceSize = transport?.piece ?? 0;
  if (ctx.execStdin === "none") {
    const overhead = utf8Length(
      `${begin}${feedTo(ctx, sink(1e12), new Uint8Array(0)).script} || exit 1\n${finish(1e15)}`,
    );
    pieceSize = payloadLimit(ctx, INLINE_SCRIPT_BUDGET, overhead, 3 * block);
    if (pieceSize < 3 * 1024) {
      throw new SandboxError(
        "Validation",
        `files.write ${JSON.stringify(path)}: path too long to write over exec`,
        {
          provider: ctx.provider,
          retryable: false,
        },
      );
    }
  }
  let attempted = false;
  const send = async (offset: number, data: Uint8Array, total: number | undefined): Promise<void> => {
    if (signal.aborted)
      throw toSandboxError(signal.reason ?? new Error("aborted"), { provider: ctx.provider });
    attempted = true;
    const end = total === undefined ? "" : finish(total);
    if (data.length === 0) {
      const create = offset === 0 ? `: >> "$tmp" || exit 1\n` : "";
      shell.check(await shell.exec(sandbox, `${begin}${create}${end}`, signal, "files.write"), context);
      return;
    }
    const feed = feedTo(ctx, sink(offset), data);
    shell.check(
      await shell.exec(
        sandbox,
        `${begin}${feed.script} || exit 1\n${end}`,
        signal,
        "files.write",
        feed.stdin,
      ),
      context,
    );
  };
  return {
    pieceSize,
    window,
    piece: (offset, data) => send(offset, data, undefined),
    finish: (offset, data, total) => send(offset, data, total),
    async discard() {
      if (!attempted) return;
      try {
        await ctx.exec(sandbox, `rm -f ${tmp}`, { signal: AbortSignal.timeout(30_000) });
      } catch {
        // The sandbox may be gone; the failure that got us here is reported instead.
      }
    },
  };
}

/**
 * Writes pieces produced by `source` (each `upload.pieceSize` bytes, the last one shorter or empty) with
 * `upload.window` in flight; the last piece goes once all others are written, with the move into place.
 */
export async function writePieces(
  shell: TransferShell,
  upload: OpenUpload,
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
): Promise<void> {
  const pipeline = new Pipeline(upload.window);
  let offset = 0;
  let held: Uint8Array | undefined;
  try {
    for await (const piece of source) {
      if (held) {
        const at = offset;
        const data = held;
        await pipeline.add(() => upload.piece(at, data));
        offset += data.length;
      }
      held = piece;
    }
    await pipeline.drain();
    const last = held ?? new Uint8Array(0);
    await upload.finish(offset, last, offset + last.length);
  } catch (error) {
    await pipeline.settle();
    await upload.discard();
    throw toSandboxError(error, { provider: shell.ctx.provider, operation: "files.write" });
  }
}

/** Cuts bytes in memory into pieces (views, no copies). */
export function* slices(data: Uint8Array, size: number): Generator<Uint8Array> {
  for (let offset = 0; offset < data.length; offset += size) yield data.subarray(offset, offset + size);
}
