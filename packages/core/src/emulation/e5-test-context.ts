/**
 * Test support for the file and state emulations (not exported from the package): an `EmulationContext`
 * over the sh test driver, so every emulation runs on a real shell under both userlands.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execStdinFor, type ShDriverOptions, shDriver } from "../../test/sh-driver.js";
import type { DriverSandbox } from "../spec/provider-spec.js";
import type { EmulationContext, ShellResult } from "./emulation-context.js";
import { createShellExec } from "./shell-exec.js";

type ShProvider = ReturnType<typeof shDriver>;

/** A sandbox of the sh driver with an emulation context around it. */
export interface TestBed {
  provider: ShProvider;
  ctx: EmulationContext;
  sandbox: DriverSandbox<{ root: string }>;
  /** The sandbox's directory on this machine (its working directory and HOME). */
  root: string;
  /** Runs a script in the sandbox directly through the driver (the second channel of the tests). */
  sh(script: string, stdin?: Uint8Array): Promise<ShellResult>;
  /** Creates another sandbox of the same provider. */
  sibling(): Promise<DriverSandbox<{ root: string }>>;
  /** Destroys the sandboxes and removes every temporary directory. */
  cleanup(): Promise<void>;
}

const bytes = (value: Uint8Array | string): Uint8Array =>
  typeof value === "string" ? new TextEncoder().encode(value) : value;

/**
 * Builds a test bed; `stdin: false` gives a driver (and context) whose exec takes no stdin. With
 * `normalized`, the context's exec is the core's E1/E2 normalization (`createShellExec`) instead of the
 * plain driver call, so the wrappers it adds count against the command-line bound too.
 */
export async function createTestBed(options: ShDriverOptions & { normalized?: boolean }): Promise<TestBed> {
  const { normalized: _normalized, ...driverOptions } = options;
  const provider = shDriver({ exitCodes: true, ...driverOptions });
  const stateDir = mkdtempSync(join(tmpdir(), "sbox-state-"));
  const run = async (sandbox: DriverSandbox, script: string, signal: AbortSignal, stdin?: Uint8Array) => {
    const result = await provider.doExec(sandbox as DriverSandbox<{ root: string }>, {
      command: { shell: script },
      signal,
      stdin,
    });
    return {
      stdout: bytes(result.stdout),
      stderr: bytes(result.stderr),
      exitCode: result.exitCode!,
      rawStdout: typeof result.stdout !== "string",
    };
  };
  const ctx: EmulationContext = {
    provider: provider.name,
    exec: options.normalized
      ? createShellExec(provider)
      : (sandbox, script, o) => run(sandbox, script, o.signal, o.stdin),
    execStdin: execStdinFor(options.stdin),
    stateDir,
  };
  const signal = () => AbortSignal.timeout(60_000);
  const created: DriverSandbox<{ root: string }>[] = [];
  const make = async () => {
    const sandbox = await provider.doCreate({}, { signal: signal() });
    created.push(sandbox);
    return sandbox;
  };
  const sandbox = await make();
  return {
    provider,
    ctx,
    sandbox,
    root: sandbox.native.root,
    sh: (script, stdin) => run(sandbox, script, signal(), stdin),
    sibling: make,
    async cleanup() {
      for (const s of created) await provider.doDestroy(s, { signal: signal() });
      provider.cleanup();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
