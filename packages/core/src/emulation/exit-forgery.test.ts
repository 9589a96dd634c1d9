import { readdirSync, readFileSync } from "node:fs";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { hasBusybox, shDriver, USERLANDS } from "../../test/sh-driver.js";
import { resolveCapabilities } from "../capabilities/resolve-capabilities.js";
import { SandboxError } from "../errors/sandbox-error.js";
import { emulatedExecStream } from "./e3-streaming.js";
import { emulatedBackground } from "./e4-background.js";
import type { EmulationContext } from "./emulation-context.js";
import { createExecBed, type ExecBed, testSignal } from "./shell-exec-test-bed.js";
import { shellQuote } from "./shell-quote.js";

const ZEROS = "0".repeat(128);

/**
 * A process inside the sandbox that forges whatever exit records it finds under `root`, every 10 ms for
 * at most 30 s: it rewrites every file whose name starts with `exit` to 0, plants a proof-like name for
 * code 0 in every run directory, and rewrites every proof file's content.
 */
const forgerScript = (root: string) => `i=0
while [ $i -lt 3000 ]; do
  for f in $(find '${root}' -name 'exit*' -type f 2>/dev/null); do printf '0\\n' > "$f"; done
  for r in $(find '${root}' -name runner -type f 2>/dev/null); do
    d=\${r%/runner}; : > "$d/x.0.${ZEROS}"; for x in "$d"/x.*; do [ -f "$x" ] && printf 0 > "$x"; done
  done
  sleep 0.01; i=$((i + 1))
done`;

/** A process that destroys every proof it finds (deletes them), as fast as it can. */
const destroyerScript = (root: string) => `i=0
while [ $i -lt 3000 ]; do
  for x in $(find '${root}' -name 'x.*' 2>/dev/null); do rm -f "$x"; done
  sleep 0.005; i=$((i + 1))
done`;

/** Starts `script` in the background inside the sandbox; returns its pid. */
async function startInside(bed: ExecBed, script: string): Promise<number> {
  const out = await bed.run(`sh -c ${shellQuote(script)} >/dev/null 2>&1 & echo $!`);
  return Number(out.trim());
}

/** The same exec as the bed's, recording every script it is handed. */
function recording(ctx: EmulationContext): { ctx: EmulationContext; scripts: string[] } {
  const scripts: string[] = [];
  return {
    scripts,
    ctx: {
      ...ctx,
      exec: (sandbox, script, options) => {
        scripts.push(script);
        return ctx.exec(sandbox, script, options);
      },
    },
  };
}

describe.skipIf(!hasBusybox()).each(
  USERLANDS.flatMap((userland) => [
    { userland, stdin: true as const },
    { userland, stdin: "text" as const },
  ]),
)("exit codes another process of the sandbox tries to forge ($userland, exec stdin: $stdin)", (variant) => {
  let bed: ExecBed;
  const started: number[] = [];
  beforeAll(async () => {
    bed = await createExecBed({ ...variant, exitCodes: false, envCwd: false });
  });
  afterEach(() => {
    for (const pid of started.splice(0)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  });
  afterAll(async () => {
    await bed.cleanup();
  });

  test("a streamed command (E3) reports its own exit code while a forger rewrites every record", async () => {
    started.push(await startInside(bed, forgerScript(bed.ctx.stateDir)));
    for (let round = 0; round < 3; round++) {
      let out = "";
      const exit = await emulatedExecStream(bed.ctx)(bed.sandbox, {
        command: { shell: `echo round${round}; sleep 0.4; exit 7` },
        signal: testSignal(),
        onStdout: (chunk) => {
          out += typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk);
        },
        onStderr: () => {},
      });
      expect(exit.exitCode).toBe(7);
      expect(out).toBe(`round${round}\n`);
    }
  });

  test("a background process (E4) reports its own exit code to its spawner while records are forged", async () => {
    const background = emulatedBackground(bed.ctx);
    started.push(await startInside(bed, forgerScript(bed.ctx.stateDir)));
    const process = await background.doSpawn(bed.sandbox, {
      command: { shell: "sleep 0.6; exit 5" },
      signal: testSignal(),
      onStdout: () => {},
      onStderr: () => {},
    });
    expect(await process.wait()).toEqual({ exitCode: 5 });
  });

  test("a process that destroys the proofs makes the command fail, never report another code", async () => {
    started.push(await startInside(bed, destroyerScript(bed.ctx.stateDir)));
    const outcome = await emulatedExecStream(bed.ctx)(bed.sandbox, {
      command: { shell: "sleep 0.3; exit 7" },
      signal: testSignal(),
      onStdout: () => {},
      onStderr: () => {},
    }).then(
      (exit) => exit.exitCode,
      (error: unknown) => error,
    );
    if (typeof outcome === "number") expect(outcome).toBe(7);
    else {
      expect(SandboxError.isInstance(outcome) && outcome.code).toBe("Provider");
      expect(String((outcome as Error).message)).toMatch(/altered|lost its supervisor/);
    }
  });

  test("the tokens appear on no command line, in no environment and in no file but the proof's name", async () => {
    const recorded = recording(bed.ctx);
    const background = emulatedBackground(recorded.ctx);
    const process = await background.doSpawn(bed.sandbox, {
      command: { shell: "sleep 0.5; exit 3" },
      signal: testSignal(),
      onStdout: () => {},
      onStderr: () => {},
    });
    const dir = `${bed.ctx.stateDir}/proc/${process.pid}`;
    const runner = Number(readFileSync(`${dir}/runner`, "utf8").split(" ")[0]);
    const cmdline = readFileSync(`/proc/${runner}/cmdline`, "latin1");
    const environ = readFileSync(`/proc/${runner}/environ`, "latin1");
    expect(await process.wait()).toEqual({ exitCode: 3 });
    const proof = readdirSync(dir).find((name) => name.startsWith("x."));
    expect(proof).toMatch(/^x\.3\.[0-9a-f]{128}$/);
    const hex = proof!.slice(4);
    for (let i = 0; i < 8; i++) {
      const token = hex.slice(i * 16, (i + 1) * 16);
      for (const script of recorded.scripts) expect(script).not.toContain(token);
      expect(cmdline).not.toContain(token);
      expect(environ).not.toContain(token);
      for (const name of readdirSync(dir)) {
        if (name === proof) continue;
        expect(readFileSync(`${dir}/${name}`, "latin1")).not.toContain(token);
      }
    }
  });
});

describe("flags.exitCodeForgeable", () => {
  const providerWith = (stdin: boolean | "text") => shDriver({ userland: "dash", stdin });
  test("is false where the exec takes stdin (bytes or text) and true where it takes none", () => {
    const providers = [providerWith(true), providerWith("text"), providerWith(false)];
    try {
      const flags = providers.map((provider) => resolveCapabilities(provider).flags.exitCodeForgeable);
      expect(flags).toEqual([false, false, true]);
      // In primitives-only mode too: E3 and E4 then run for every provider.
      const primitives = providers.map(
        (provider) => resolveCapabilities(provider, { primitivesOnly: true }).flags.exitCodeForgeable,
      );
      expect(primitives).toEqual([false, false, true]);
    } finally {
      for (const provider of providers) provider.cleanup();
    }
  });

  test("a provider that declares it keeps it, whatever its exec takes", () => {
    const provider = providerWith(true);
    try {
      const declared = { ...provider, flags: { ...provider.flags, exitCodeForgeable: true } };
      expect(resolveCapabilities(declared).flags.exitCodeForgeable).toBe(true);
    } finally {
      provider.cleanup();
    }
  });
});
