/**
 * Real components for the manager tests: provider-local sandboxes under a throwaway state root, a store,
 * and a cleanup that leaves no sandbox, process or directory behind.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSandboxClient, type SandboxProvider } from "@sbox/core";
import { local } from "@sbox/provider-local";
import { memoryStore } from "../src/memory-store.js";
import { SandboxManager, type SandboxManagerOptions } from "../src/sandbox-manager.js";
import type { SandboxStore } from "../src/sandbox-store.js";

/** A provider-local provider over a fresh state root. */
export function localProvider(root: string): SandboxProvider {
  return local({ root, isolation: "none" }) as unknown as SandboxProvider;
}

/** Wraps a provider so that tests can observe or delay driver calls, without changing what they do. */
export function wrapProvider(
  base: SandboxProvider,
  overrides: Partial<Pick<SandboxProvider, "doCreate" | "doStop" | "doResume" | "doDestroy">>,
): SandboxProvider {
  return { ...base, ...overrides };
}

/** A manager over provider-local and a store, plus cleanup. */
export interface ManagerFixture {
  root: string;
  provider: SandboxProvider;
  store: SandboxStore;
  manager: SandboxManager;
  /** Another manager (another worker) on the same store and state root. */
  another(options?: Partial<SandboxManagerOptions>): SandboxManager;
  /** Destroys every sandbox under the root, closes managers and the store, removes the root. */
  cleanup(): Promise<void>;
}

export function managerFixture(
  options: Partial<SandboxManagerOptions> & {
    store?: SandboxStore;
    wrap?: (p: SandboxProvider) => SandboxProvider;
  } = {},
): ManagerFixture {
  const root = mkdtempSync(join(tmpdir(), "sbox-manager-local-"));
  const base = localProvider(root);
  const provider = options.wrap ? options.wrap(base) : base;
  const store = options.store ?? memoryStore();
  const managers: SandboxManager[] = [];
  const make = (extra: Partial<SandboxManagerOptions> = {}) => {
    const { wrap: _wrap, store: _store, ...rest } = options;
    const manager = new SandboxManager({
      providers: { local: provider },
      store,
      startGraceMs: 150,
      ...rest,
      ...extra,
    });
    managers.push(manager);
    return manager;
  };
  const manager = make();
  return {
    root,
    provider,
    store,
    manager,
    another: make,
    async cleanup() {
      for (const m of managers) await m.close();
      const client = createSandboxClient({ provider: base });
      for await (const info of client.list()) {
        await (await client.connect(info.id)).destroy().catch(() => {});
      }
      await client.dispose();
      await store.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Collects an async iterable into one string. */
export async function collect(iterable: AsyncIterable<string>): Promise<string> {
  let out = "";
  for await (const chunk of iterable) out += chunk;
  return out;
}

/** A gate a wrapped driver call waits on, opened by the test. */
export function gate(): { wait: Promise<void>; open(): void; entered: Promise<void>; enter(): void } {
  let open!: () => void;
  let enter!: () => void;
  const wait = new Promise<void>((resolve) => {
    open = resolve;
  });
  const entered = new Promise<void>((resolve) => {
    enter = resolve;
  });
  return { wait, open, entered, enter };
}
