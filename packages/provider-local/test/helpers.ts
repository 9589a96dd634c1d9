import { execFile, spawnSync } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type DriverCallOptions,
  type DriverExecRequest,
  type DriverSandbox,
  resolveSandboxPath,
} from "@sbox/core/spec";
import type {
  LocalOptions,
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

/**
 * Removes a test's directory: first whatever is mounted below it (as root, state roots are private mounts of
 * themselves and sandboxes have disk images; unprivileged, FUSE disk images), deepest first, then its files.
 */
export function removeTestDir(dir: string): void {
  const points = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => (line.split(" ")[4] ?? "").replace(/\\040/g, " "))
    .filter((point) => point === dir || point.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  // Unprivileged, what is mounted there is a sandbox's FUSE disk: fusermount3 takes it down.
  const [umount, lazy] =
    process.getuid?.() === 0
      ? [["umount"], ["umount", "-l"]]
      : [
          ["fusermount3", "-u"],
          ["fusermount3", "-uz"],
        ];
  for (const point of points) {
    if (spawnSync(umount[0]!, [...umount.slice(1), point]).status !== 0)
      spawnSync(lazy[0]!, [...lazy.slice(1), point]);
  }
  rmSync(dir, { recursive: true, force: true });
}

/** A throwaway state root for one test file; `cleanup()` removes it. */
export function tempStateRoot(label: string): { home: string; cleanup(): void } {
  const home = mkdtempSync(join(tmpdir(), `sbox-local-${label}-`));
  return { home, cleanup: () => removeTestDir(home) };
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
  return { dir, cleanup: () => removeTestDir(dir) };
}

/** Options for a driver call that is never aborted. */
export function call(): DriverCallOptions {
  return { signal: new AbortController().signal };
}

/** A provider of either mode, typed by what both modes share. */
export type AnyLocalProvider =
  | LocalProvider<typeof localCapabilities>
  | LocalProvider<typeof localUnisolatedCapabilities>;

/** The driver methods whose path arguments the core resolves (every file method, streams and watch too). */
const PATH_METHODS = [
  "doReadFile",
  "doWriteFile",
  "doReadFileStream",
  "doWriteFileStream",
  "doListFiles",
  "doStat",
  "doMkdir",
  "doRemove",
  "doRename",
  "doWatch",
] as const;

/** The provider for `mode` over `root`, its file methods given paths the way the core gives them. */
export function providerFor(mode: Mode, root: string, options: LocalOptions = {}): AnyLocalProvider {
  return withCorePaths(local({ ...options, root, isolation: mode }));
}

/**
 * `provider` with every path its file methods get made absolute and normalised first, as the core's runtime
 * does before any driver sees it (`resolveSandboxPath`, relative paths from the working directory: the
 * declared `workdir`, else the workspace's host directory, which is what `pwd` prints without isolation).
 * These tests call the driver directly, so they pass paths the way the core would.
 */
export function withCorePaths<P extends AnyLocalProvider>(provider: P): P {
  const wrapped: Record<string, unknown> = { ...provider };
  for (const method of PATH_METHODS) {
    const original = (provider as unknown as Record<string, unknown>)[method];
    if (typeof original !== "function") continue;
    const resolve = (sandbox: DriverSandbox<LocalSandboxHandle>, path: unknown) =>
      typeof path === "string" && path !== "" && !path.includes("\0")
        ? resolveSandboxPath(path, provider.workdir ?? sandbox.native.workspace)
        : path;
    wrapped[method] = (sandbox: DriverSandbox<LocalSandboxHandle>, path: unknown, ...rest: unknown[]) =>
      method === "doRename"
        ? (original as (...args: unknown[]) => unknown).call(
            provider,
            sandbox,
            resolve(sandbox, path),
            resolve(sandbox, rest[0]),
            ...rest.slice(1),
          )
        : (original as (...args: unknown[]) => unknown).call(
            provider,
            sandbox,
            resolve(sandbox, path),
            ...rest,
          );
  }
  return wrapped as P;
}

/**
 * How to run a child program where it finds no user-mode network stack (no usable tun device), as this same
 * user: as root, in a mount namespace of its own with an empty tmpfs over `/dev/net` (nothing of the host
 * changes: the mount lives and dies with the child's namespace); unprivileged, as it is where this user
 * cannot open `/dev/net/tun` anyway. An unprivileged user who can open it would need a user namespace to hide
 * it, and then this program's own processes outside it become unreadable to the provider's process lookup:
 * `skip` says so.
 */
export function withoutTunDevice(): { wrapper: string[] } | { skip: string } {
  if (process.getuid?.() === 0) {
    const hide = "mount -t tmpfs -o size=16k,mode=755 sbox-no-tun /dev/net";
    return {
      wrapper: ["unshare", "--mount", "--propagation", "private", "sh", "-c", `${hide} && exec "$@"`, "sh"],
    };
  }
  try {
    closeSync(openSync("/dev/net/tun", "r+"));
  } catch {
    return { wrapper: [] };
  }
  return {
    skip: "this unprivileged user can open /dev/net/tun: it cannot be hidden from a child without a user namespace",
  };
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
 * the JSON line it printed. `wrapper` is a command line the child runs under (it ends by executing its
 * arguments: node, the bundle and the child's arguments).
 */
export async function bundleChild(
  outDir: string,
  fixture = "local-child",
  limits: { openFiles?: number; wrapper?: readonly string[] } = {},
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
  const [node, nodePrefix] =
    limits.openFiles === undefined
      ? [process.execPath, []]
      : ["/bin/sh", ["-c", `ulimit -n ${limits.openFiles} && exec "$@"`, "sh", process.execPath]];
  const [file, prefix] = limits.wrapper?.length
    ? [limits.wrapper[0]!, [...limits.wrapper.slice(1), node, ...nodePrefix]]
    : [node, nodePrefix];
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
