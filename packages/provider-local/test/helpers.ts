import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { DriverCallOptions, DriverExecRequest, DriverSandbox } from "@sbox/core/spec";
import type {
  LocalProvider,
  LocalSandboxHandle,
  localCapabilities,
  localUnisolatedCapabilities,
} from "../src/index.js";
import { local } from "../src/index.js";

/** The two isolation modes every behaviour test runs under. */
export const MODES = ["bwrap", "none"] as const;
/** One isolation mode. */
export type Mode = (typeof MODES)[number];

/** A throwaway state root for one test file; `cleanup()` removes it. */
export function tempStateRoot(label: string): { home: string; cleanup(): void } {
  const home = mkdtempSync(join(tmpdir(), `sbox-local-${label}-`));
  return { home, cleanup: () => rmSync(home, { recursive: true, force: true }) };
}

/**
 * A throwaway directory outside `/tmp` (under the package's git-ignored `.sbox-test/`): inside bubblewrap
 * the host's `/tmp` is replaced by the sandbox's own, so a test about host paths must not use it.
 */
export function tempOutsideTmp(label: string): { dir: string; cleanup(): void } {
  // Not beside the checkout: a clone that lives under /tmp would put this under /tmp too, which a sandbox
  // sees as its own private /tmp.
  // One per user: a run as another user must not meet a directory it cannot write.
  const parent = `/var/tmp/sbox-local-test-${process.getuid?.() ?? 0}`;
  mkdirSync(parent, { recursive: true });
  const dir = mkdtempSync(join(parent, `${label}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Options for a driver call that is never aborted. */
export function call(): DriverCallOptions {
  return { signal: new AbortController().signal };
}

/** A provider of either mode, typed by what both modes share. */
export type AnyLocalProvider =
  | LocalProvider<typeof localCapabilities>
  | LocalProvider<typeof localUnisolatedCapabilities>;

/** The provider for `mode` over `root`. */
export function providerFor(mode: Mode, root: string): AnyLocalProvider {
  return local({ root, isolation: mode });
}

/** A buffered exec request for a shell snippet. */
export function sh(script: string, extra: Partial<DriverExecRequest> = {}): DriverExecRequest {
  return { command: { shell: script }, signal: new AbortController().signal, ...extra };
}

/** Runs a shell snippet and returns decoded output plus the exit. */
export async function run(
  provider: AnyLocalProvider,
  sandbox: DriverSandbox<LocalSandboxHandle>,
  script: string,
  extra: Partial<DriverExecRequest> = {},
): Promise<{ stdout: string; stderr: string; exitCode: number | undefined; signal: string | undefined }> {
  const result = await provider.doExec(sandbox, sh(script, extra));
  return {
    stdout: Buffer.from(result.stdout as Uint8Array).toString("utf8"),
    stderr: Buffer.from(result.stderr as Uint8Array).toString("utf8"),
    exitCode: result.exitCode,
    signal: result.signal,
  };
}

/** Pids of live (non-zombie) processes whose command line contains `marker`. */
export async function processesWithMarker(marker: string): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const stat = await readFile(`/proc/${name}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      if (state === "Z" || state === "X") continue;
      const cmdline = await readFile(`/proc/${name}/cmdline`, "utf8");
      if (cmdline.includes(marker)) found.push(Number(name));
    } catch {
      // gone
    }
  }
  return found;
}

/** Polls `condition` until it holds or `timeoutMs` passes; returns whether it held. */
export async function eventually(
  condition: () => Promise<boolean> | boolean,
  timeoutMs = 10_000,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Destroys every sandbox under a provider's root and returns how many there were. */
export async function destroyAll(provider: AnyLocalProvider): Promise<number> {
  let count = 0;
  for await (const info of provider.doList!({}, call())) {
    await provider.doDestroy({ id: info.id, native: undefined as never }, call());
    count++;
  }
  return count;
}

/**
 * Bundles `test/fixtures/local-child.ts` (with the provider and core sources) into one ESM file, so tests can
 * run the provider in another OS process. Returns a function running it with arguments, which resolves with
 * the JSON line it printed.
 */
export async function bundleChild(
  outDir: string,
  fixture = "local-child",
  limits: { openFiles?: number } = {},
): Promise<(...args: string[]) => Promise<Record<string, unknown>>> {
  const { build } = await import("esbuild");
  const outfile = join(outDir, `${fixture}.mjs`);
  const core = (path: string) => fileURLToPath(new URL(`../../core/src/${path}`, import.meta.url));
  await build({
    entryPoints: [fileURLToPath(new URL(`./fixtures/${fixture}.ts`, import.meta.url))],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    external: ["node-pty"],
    alias: { "@sbox/core/spec": core("spec/index.ts") },
    logLevel: "silent",
  });
  // With a descriptor limit, the child runs under `ulimit -n` (a shell builtin; the limit is inherited).
  const [file, prefix] =
    limits.openFiles === undefined
      ? [process.execPath, []]
      : ["/bin/sh", ["-c", `ulimit -n ${limits.openFiles} && exec "$@"`, "sh", process.execPath]];
  return (...args: string[]) =>
    new Promise((resolve, reject) => {
      execFile(
        file,
        [...prefix, outfile, ...args],
        { timeout: 300_000, maxBuffer: 16 * 1024 * 1024 },
        (error, stdout, stderr) => {
          const line = stdout.trim().split("\n").pop() ?? "";
          try {
            resolve(JSON.parse(line) as Record<string, unknown>);
          } catch {
            reject(new Error(`child failed: ${error?.message ?? ""}\n${stdout}\n${stderr}`));
          }
        },
      );
    });
}
