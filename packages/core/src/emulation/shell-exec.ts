import { SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import { exitCodeForSignal, normalizeSignal } from "../sandbox/signal-names.js";
import type { DriverExecRequest, SandboxProvider } from "../spec/provider-spec.js";
import { applyEnvCwd } from "./e1-env-cwd.js";
import { createExitMarker, parseExitMarker } from "./e2-exit-marker.js";
import type { ShellExec, ShellResult } from "./emulation-context.js";

const encoder = new TextEncoder();

/** Output as bytes: strings (from text-only exec primitives) are encoded as UTF-8. */
export function toBytes(data: Uint8Array | string): Uint8Array {
  return typeof data === "string" ? encoder.encode(data) : data;
}

/**
 * The normalized exec primitive every emulation builds on: runs a shell script through the provider's
 * buffered `doExec`, puts cwd/env into the script (E1) unless the provider honours them itself, recovers the
 * exit code with a random marker (E2) unless the provider reports it, and returns bytes with a numeric exit
 * code. Errors thrown by the provider are wrapped into `SandboxError`s carrying the provider's name.
 */
export function createShellExec(provider: SandboxProvider): ShellExec {
  const { perCommandEnvCwd, exitCodeNative } = provider.flags;
  return async (sandbox, script, options): Promise<ShellResult> => {
    let command = perCommandEnvCwd ? script : applyEnvCwd({ shell: script }, options);
    const marker = exitCodeNative ? undefined : createExitMarker();
    if (marker) command = marker.wrap(command);
    const request: { -readonly [K in keyof DriverExecRequest]: DriverExecRequest[K] } = {
      command: { shell: command },
      signal: options.signal,
    };
    if (options.stdin !== undefined) request.stdin = options.stdin;
    if (perCommandEnvCwd) {
      if (options.cwd !== undefined) request.cwd = options.cwd;
      if (options.env !== undefined) request.env = options.env;
    }
    let result: Awaited<ReturnType<SandboxProvider["doExec"]>>;
    try {
      result = await provider.doExec(sandbox, request);
    } catch (error) {
      throw toSandboxError(error, { provider: provider.name, operation: "exec" });
    }
    let stdout = toBytes(result.stdout);
    const stderr = toBytes(result.stderr);
    let exitCode = result.exitCode;
    if (marker) {
      const parsed = parseExitMarker(marker, stdout);
      stdout = parsed.stdout;
      exitCode = parsed.exitCode;
    } else if (exitCode === undefined && result.signal !== undefined) {
      try {
        exitCode = exitCodeForSignal(normalizeSignal(result.signal, "SIGKILL"));
      } catch {
        // An unknown signal name leaves the exit code unknown, reported below.
      }
    }
    if (exitCode === undefined) {
      throw new SandboxError(
        "Provider",
        marker
          ? "exec: the exit code was lost (the exit-code marker was not the last output of the command)"
          : "exec: the provider reported no exit code",
        { provider: provider.name },
      );
    }
    return { stdout, stderr, exitCode };
  };
}
