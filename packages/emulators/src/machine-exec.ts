/**
 * Byte-exact commands in an emulated machine's backend sandbox. Vendor protocols carry raw bytes (Kubernetes
 * exec, attach, logs and port-forward: `kubectl cp` pipes a tar archive through stdout; Daytona's session
 * logs), while the `Sandbox` facade decodes output as UTF-8. So commands run through the backend provider's
 * own streaming exec (`doExecStream`) on the driver handle of the machine the backend created — still the
 * backend's sandbox, its isolation and its limits, only without the text decoding. A backend without a streaming exec falls back to the facade (text).
 */
import type { AnyCapabilities, Sandbox } from "@sbox/core";
import { type DriverExecControl, type DriverSandbox, SandboxError } from "@sbox/core/spec";
import type { EmulatorBackend } from "./backend.js";

/** One command to run. */
export interface MachineCommand {
  readonly argv: readonly string[];
  readonly env?: Readonly<Record<string, string>> | undefined;
  readonly cwd?: string | undefined;
  readonly user?: string | undefined;
  readonly stdin?: ReadableStream<Uint8Array> | undefined;
  readonly signal: AbortSignal;
  /**
   * Called with the means to signal the running command, where the backend's streaming exec hands one
   * over (`execSignals`); else never (aborting `signal` still ends the command).
   */
  readonly onStarted?: ((control: DriverExecControl) => void) | undefined;
  onStdout(chunk: Uint8Array): void;
  onStderr(chunk: Uint8Array): void;
}

/** How it ended. */
export interface MachineExit {
  readonly exitCode: number;
  readonly signal?: string | undefined;
}

const handles = new WeakMap<Sandbox<AnyCapabilities>, Promise<DriverSandbox>>();

function driverHandle(backend: EmulatorBackend, sandbox: Sandbox<AnyCapabilities>): Promise<DriverSandbox> {
  let handle = handles.get(sandbox);
  if (!handle) {
    const prefix = `${backend.provider.name}:`;
    const nativeId = sandbox.id.startsWith(prefix) ? sandbox.id.slice(prefix.length) : sandbox.id;
    handle = backend.provider.doConnect(nativeId, { signal: AbortSignal.timeout(30_000) });
    handle.catch(() => handles.delete(sandbox));
    handles.set(sandbox, handle);
  }
  return handle;
}

/** Whether the backend can run commands byte-exact. */
export function hasByteExec(backend: EmulatorBackend): boolean {
  return (
    typeof backend.provider.doExecStream === "function" &&
    backend.provider.capabilities.streaming === "native"
  );
}

/** Runs a command in the machine, output as bytes; rejects with a `SandboxError` when it cannot run. */
export async function runInMachine(
  backend: EmulatorBackend,
  sandbox: Sandbox<AnyCapabilities>,
  command: MachineCommand,
): Promise<MachineExit> {
  const provider = backend.provider;
  if (hasByteExec(backend) && provider.doExecStream) {
    const handle = await driverHandle(backend, sandbox);
    try {
      const exit = await provider.doExecStream(handle, {
        command: { argv: command.argv },
        signal: command.signal,
        ...(command.stdin ? { stdin: command.stdin } : {}),
        ...(provider.flags.perCommandEnvCwd && command.env ? { env: command.env } : {}),
        ...(provider.flags.perCommandEnvCwd && command.cwd ? { cwd: command.cwd } : {}),
        ...(command.user ? { user: command.user } : {}),
        ...(command.onStarted && provider.execSignals ? { onStarted: command.onStarted } : {}),
        onStdout: (chunk) => command.onStdout(typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk),
        onStderr: (chunk) => command.onStderr(typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk),
      });
      return { exitCode: exit.exitCode ?? 0, ...(exit.signal ? { signal: exit.signal } : {}) };
    } catch (error) {
      if (SandboxError.isInstance(error)) throw error;
      throw new SandboxError(
        "Provider",
        `backend exec failed: ${error instanceof Error ? error.message : String(error)}`,
        {
          cause: error,
        },
      );
    }
  }
  const result = await sandbox.commands.run([...command.argv], {
    signal: command.signal,
    ...(command.stdin ? { stdin: command.stdin } : {}),
    ...(command.env ? { env: command.env } : {}),
    ...(command.cwd ? { cwd: command.cwd } : {}),
    ...(command.user ? { user: command.user } : {}),
    collectOutput: false,
    onStdout: (text) => command.onStdout(Buffer.from(text, "utf8")),
    onStderr: (text) => command.onStderr(Buffer.from(text, "utf8")),
  });
  return { exitCode: result.exitCode, ...(result.signal ? { signal: result.signal } : {}) };
}
