/**
 * Test support for the exec emulations (not exported from the package): sandboxes of the sh test driver
 * with an `EmulationContext` whose exec is the real `createShellExec`, so E1/E2 run whenever the driver
 * variant lacks cwd/env or exit codes, under both userlands.
 */
import { execFileSync } from "node:child_process";
import { execStdinFor, type ShDriverOptions, shDriver, USERLANDS } from "../../test/sh-driver.js";
import type { DriverSandbox } from "../spec/provider-spec.js";
import type { EmulationContext } from "./emulation-context.js";
import { createShellExec } from "./shell-exec.js";

/** One sandbox of the sh driver plus the context the exec emulations run in. */
export interface ExecBed {
  readonly provider: ReturnType<typeof shDriver>;
  readonly ctx: EmulationContext;
  readonly sandbox: DriverSandbox<{ root: string }>;
  /** The sandbox directory on this machine. */
  readonly root: string;
  /** A second, independent context over a new provider object: "another client" of the same sandbox. */
  secondClient(): EmulationContext;
  /** Runs a script through the context's exec and returns stdout as text (throws on non-zero exit). */
  run(script: string): Promise<string>;
  cleanup(): Promise<void>;
}

/**
 * The driver variants every exec emulation test runs under, per userland: one where the exec primitive
 * does everything itself, and one that returns only text output (no exit code, no stdin, no cwd/env), so
 * E1, E2 and the base64 paths all run.
 */
export const EXEC_VARIANTS: readonly Required<
  Pick<ShDriverOptions, "userland" | "exitCodes" | "stdin" | "envCwd" | "textOutput">
>[] = USERLANDS.flatMap((userland) => [
  { userland, exitCodes: true, stdin: true, envCwd: true, textOutput: false },
  { userland, exitCodes: false, stdin: false, envCwd: false, textOutput: true },
]);

/** A signal for test calls that must not hang. */
export const testSignal = (): AbortSignal => AbortSignal.timeout(60_000);

/** Builds an exec bed; state lives in `<sandbox>/.sbox` so destroying the sandbox removes it. */
export async function createExecBed(options: ShDriverOptions): Promise<ExecBed> {
  const provider = shDriver(options);
  const sandbox = await provider.doCreate({}, { signal: testSignal() });
  const contextOf = (p: ReturnType<typeof shDriver>): EmulationContext => ({
    provider: p.name,
    exec: createShellExec(p),
    execStdin: execStdinFor(options.stdin),
    stateDir: `${sandbox.native.root}/.sbox`,
  });
  const ctx = contextOf(provider);
  return {
    provider,
    ctx,
    sandbox,
    root: sandbox.native.root,
    secondClient: () => contextOf(provider),
    async run(script) {
      const result = await ctx.exec(sandbox, script, { signal: testSignal() });
      if (result.exitCode !== 0) {
        throw new Error(`exit ${result.exitCode}: ${new TextDecoder().decode(result.stderr)}`);
      }
      return new TextDecoder().decode(result.stdout);
    },
    async cleanup() {
      await provider.doDestroy(sandbox, { signal: testSignal() });
      provider.cleanup();
    },
  };
}

/** Whether any process of process group `pgid` exists on this machine (zombies do not count). */
export function groupAlive(pgid: number): boolean {
  const out = execFileSync("ps", ["-e", "-o", "pgid=,stat="], { encoding: "utf8" });
  return out.split("\n").some((line) => {
    const [group, stat] = line.trim().split(/\s+/);
    return Number(group) === pgid && stat !== undefined && !stat.startsWith("Z");
  });
}
