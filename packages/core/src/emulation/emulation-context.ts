import type { DriverSandbox } from "../spec/provider-spec.js";

/** The normalized result of running a shell script through the provider's exec primitive. */
export interface ShellResult {
  stdout: Uint8Array;
  stderr: Uint8Array;
  /** Always present: native, or recovered by the exit-code marker (E2). */
  exitCode: number;
}

/** Options of one shell run. */
export interface ShellRunOptions {
  signal: AbortSignal;
  /** Bytes for stdin; only honoured when `EmulationContext.execAcceptsStdin` is true. */
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
  /** Whether `exec` honours `stdin` bytes (the provider's exec primitive takes stdin). */
  readonly execAcceptsStdin: boolean;
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

/** No command line built by an emulation may carry more than this many bytes. */
export const MAX_COMMAND_LINE_BYTES: number = 64 * 1024;
