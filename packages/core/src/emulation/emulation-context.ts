import type { DriverSandbox, ExecStdin } from "../spec/provider-spec.js";
import { shellQuote } from "./shell-quote.js";

/** The normalized result of running a shell script through the provider's exec primitive. */
export interface ShellResult {
  stdout: Uint8Array;
  stderr: Uint8Array;
  /** Always present: native, or recovered by the exit-code marker (E2). */
  exitCode: number;
  /**
   * True when the provider handed stdout over as bytes, which the spec makes raw bytes: binary data may
   * then come back as it is. Otherwise (text, or not known) it must come back as base64.
   */
  rawStdout?: boolean | undefined;
}

/** Options of one shell run. */
export interface ShellRunOptions {
  signal: AbortSignal;
  /** Bytes for stdin: any bytes when `EmulationContext.execStdin` is `"bytes"`, ASCII when `"text"`. */
  stdin?: Uint8Array | undefined;
  cwd?: string | undefined;
  env?: Readonly<Record<string, string>> | undefined;
}

/**
 * Runs `script` with `sh -c` in the sandbox through the provider's buffered exec primitive, with
 * per-command cwd/env (E1) and exit codes (E2) already taken care of.
 */
export type ShellExec = (
  sandbox: DriverSandbox,
  script: string,
  options: ShellRunOptions,
) => Promise<ShellResult>;

/** Everything an emulation needs: the exec primitive and where it may keep state inside the sandbox. */
export interface EmulationContext {
  /** Provider name, for error messages. */
  readonly provider: string;
  /** The normalized exec primitive. */
  readonly exec: ShellExec;
  /** What `exec` takes on stdin: any bytes, text (base64 goes there), or nothing (see `execStdinOf`). */
  readonly execStdin: ExecStdin;
  /**
   * Directory for emulation state (process output, pid and exit files) inside each sandbox, e.g.
   * `/tmp/.sbox`; a sandbox handle's own `emulationStateDir` wins (read it through `stateDirOf`).
   */
  readonly stateDir: string;
}

/** The emulation state directory of `sandbox`, without a trailing slash. */
export function stateDirOf(ctx: EmulationContext, sandbox: DriverSandbox): string {
  return (sandbox.emulationStateDir ?? ctx.stateDir).replace(/(.)\/+$/, "$1");
}

const rawStdoutSeen = new WeakMap<EmulationContext, boolean>();

/**
 * Takes in what one result of `ctx.exec` tells about the provider's stdout (`ShellResult.rawStdout`):
 * every exec of a provider hands stdout over the same way, so one result tells for all later ones.
 */
export function noteStdoutKind(ctx: EmulationContext, result: Pick<ShellResult, "rawStdout">): void {
  if (result.rawStdout !== undefined) rawStdoutSeen.set(ctx, result.rawStdout);
}

/**
 * Whether `ctx.exec`'s stdout is known to carry raw bytes (learned by {@link noteStdoutKind} from an earlier
 * result of any emulation): then binary output may come back as it is, else it must come back as base64.
 */
export function stdoutIsRaw(ctx: EmulationContext): boolean {
  return rawStdoutSeen.get(ctx) ?? false;
}

/** No command line built by an emulation may carry more than this many bytes. */
export const MAX_COMMAND_LINE_BYTES: number = 64 * 1024;

/** The UTF-8 length of `text`, without `Buffer` (the core runs on any JS runtime). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * Whether `script` stays within {@link MAX_COMMAND_LINE_BYTES} as the provider receives it: E2's wrapper
 * quotes it once more and adds its marker line.
 */
export function fitsCommandLine(script: string): boolean {
  return utf8Length(shellQuote(script)) + 256 <= MAX_COMMAND_LINE_BYTES;
}
