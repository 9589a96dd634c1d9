import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** A PATH without per-user shims, so `python3` is the system one inside bubblewrap too. */
export const SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin";

/** A throwaway directory; `cleanup()` removes it. */
export function tempDir(label: string): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), `sbox-mcp-${label}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

const src = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));

/** Bundles a fixture (with the workspace sources) into one ESM file beside the package's node_modules. */
export async function bundleFixture(name: string): Promise<string> {
  const { build } = await import("esbuild");
  const outDir = fileURLToPath(new URL("../.sbox-test/", import.meta.url));
  mkdirSync(outDir, { recursive: true });
  const outfile = join(outDir, `${name}.mjs`);
  await build({
    entryPoints: [fileURLToPath(new URL(`./fixtures/${name}.ts`, import.meta.url))],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // dockerode (with ssh2 and its native crypto) is loaded from node_modules, not bundled.
    external: ["node-pty", "dockerode", "better-sqlite3", "pg-native"],
    alias: {
      "@sbox/core/spec": src("core/src/spec/index.ts"),
      "@sbox/core": src("core/src/index.ts"),
      "@sbox/tools": src("tools/src/index.ts"),
      "@sbox/provider-local": src("provider-local/src/index.ts"),
      "@sbox/provider-docker": src("provider-docker/src/index.ts"),
    },
    // Bundled CommonJS dependencies (cross-spawn in the MCP SDK) call require(): give the ESM bundle one.
    banner: {
      js: "import { createRequire as __sboxRequire } from 'node:module'; const require = __sboxRequire(import.meta.url);",
    },
    logLevel: "silent",
  });
  return outfile;
}

/** Pids of live (non-zombie) host processes whose command line contains `marker`. */
export async function processesWithMarker(marker: string): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const stat = await readFile(`/proc/${name}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      if (state === "Z" || state === "X") continue;
      if ((await readFile(`/proc/${name}/cmdline`, "utf8")).includes(marker)) found.push(Number(name));
    } catch {
      // gone
    }
  }
  return found;
}

/** Whether a process exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls `condition` until it holds or `timeoutMs` passes; returns whether it held. */
export async function eventually(
  condition: () => Promise<boolean> | boolean,
  timeoutMs = 20_000,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Runs a node script and resolves with its first stdout line (parsed), leaving it running. */
export function startNode(
  script: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ line: Record<string, unknown>; pid: number; kill(signal?: NodeJS.Signals): void }> {
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, [script, ...args], { env: { ...process.env, ...env } });
    let out = "";
    let err = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const newline = out.indexOf("\n");
      if (newline !== -1) {
        resolve({
          line: JSON.parse(out.slice(0, newline)) as Record<string, unknown>,
          pid: child.pid!,
          kill: (s) => child.kill(s ?? "SIGKILL"),
        });
      }
    });
    child.once("exit", (code) => reject(new Error(`client exited (${code}) before it called: ${err}`)));
  });
}
