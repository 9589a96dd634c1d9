import { SandboxError } from "../errors/sandbox-error.js";
import { concatBytes } from "./concat-bytes.js";
import { randomHex } from "./random-hex.js";
import { shellQuote } from "./shell-quote.js";

/** Parses the output of one marked run: passes output through, recovers the exit code at the end. */
export interface ExitMarkerParser {
  /** Feeds stdout bytes; returns the bytes that are safe to emit now (never part of the final marker). */
  push(chunk: Uint8Array): Uint8Array;
  /** Ends the stream: `rest` is the output held back that turned out not to be the marker. */
  finish(): { rest: Uint8Array; exitCode: number | undefined };
}

/** A per-call random exit-code marker (E2). */
export interface ExitMarker {
  /** The random token; differs on every call. */
  readonly token: string;
  /** Wraps `script` so that its exit code is printed as a final marker line on stdout. */
  wrap(script: string): string;
  /** A parser for the stdout of one run of a wrapped script. */
  createParser(): ExitMarkerParser;
}

const encoder = new TextEncoder();
const NEWLINE = 0x0a;
const MAX_CODE_DIGITS = 3;

function isDigit(byte: number): boolean {
  return byte >= 0x30 && byte <= 0x39;
}

/**
 * E2: creates a marker for one exec call, for providers whose exec primitive returns output but no exit
 * code. The wrapped script runs the user's script with `sh -c` (so `exit`, `set -e` or a syntax error in
 * it still lets the marker print) and then prints `\n<token>:<code>\n`. Only a marker line at the very end
 * of stdout counts, so output that imitates the marker, even with the exact token, cannot change the code.
 */
export function createExitMarker(): ExitMarker {
  const token = `__sbox_exit_${randomHex(16)}__`;
  const prefix = encoder.encode(`\n${token}:`);
  return {
    token,
    wrap: (script) => `sh -c ${shellQuote(script)}\nprintf '\\n%s:%s\\n' ${token} "$?"`,
    createParser: () => createParser(prefix),
  };
}

/**
 * Where the earliest suffix of `held` starts that could still grow into the final marker line, or -1 when
 * none can: everything before it is user output.
 */
function candidateStart(held: Uint8Array, prefix: Uint8Array): number {
  const maxLength = prefix.length + MAX_CODE_DIGITS + 1;
  for (let start = Math.max(0, held.length - maxLength); start < held.length; start++) {
    if (couldBeMarker(held, start, prefix)) return start;
  }
  return -1;
}

/** Whether `held[start..]` is a prefix of `<prefix><1-3 digits>\n`. */
function couldBeMarker(held: Uint8Array, start: number, prefix: Uint8Array): boolean {
  const length = held.length - start;
  const matched = Math.min(length, prefix.length);
  for (let i = 0; i < matched; i++) if (held[start + i] !== prefix[i]) return false;
  if (length <= prefix.length) return true;
  let i = start + prefix.length;
  let digits = 0;
  while (i < held.length && isDigit(held[i]!)) {
    digits++;
    i++;
  }
  if (digits > MAX_CODE_DIGITS) return false;
  if (i === held.length) return true;
  return digits > 0 && held[i] === NEWLINE && i === held.length - 1;
}

/** The exit code when `held` is exactly one complete marker line, else undefined. */
function completeMarkerCode(held: Uint8Array, prefix: Uint8Array): number | undefined {
  if (held.length < prefix.length + 2 || held[held.length - 1] !== NEWLINE) return undefined;
  if (!couldBeMarker(held, 0, prefix)) return undefined;
  const digits = held.subarray(prefix.length, held.length - 1);
  if (digits.length === 0) return undefined;
  const code = Number(new TextDecoder().decode(digits));
  return code <= 255 ? code : undefined;
}

function createParser(prefix: Uint8Array): ExitMarkerParser {
  let held: Uint8Array = new Uint8Array(0);
  let finished = false;
  return {
    push(chunk) {
      if (finished)
        throw new SandboxError("InvalidState", "ExitMarkerParser.push after finish()", { retryable: false });
      const all = concatBytes([held, chunk]);
      const start = candidateStart(all, prefix);
      if (start === -1) {
        held = new Uint8Array(0);
        return all;
      }
      // Copy the held tail: `all` may be the caller's own buffer, which it is free to reuse.
      held = all.slice(start);
      return all.subarray(0, start);
    },
    finish() {
      finished = true;
      const code = completeMarkerCode(held, prefix);
      if (code !== undefined) return { rest: new Uint8Array(0), exitCode: code };
      return { rest: held, exitCode: undefined };
    },
  };
}

/**
 * E2 for buffered output: strips the final marker line of `marker` from `stdout` and returns the exit code
 * it carried, or `exitCode: undefined` (and `stdout` unchanged) when the stream does not end with it.
 */
export function parseExitMarker(
  marker: ExitMarker,
  stdout: Uint8Array,
): { stdout: Uint8Array; exitCode: number | undefined } {
  const parser = marker.createParser();
  const head = parser.push(stdout);
  const { rest, exitCode } = parser.finish();
  return { stdout: concatBytes([head, rest]), exitCode };
}
