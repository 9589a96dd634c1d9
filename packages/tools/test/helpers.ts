import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSandboxClient, type Sandbox, type SandboxClient, type SandboxProvider } from "@sbox/core";
import { local } from "@sbox/provider-local";

/** A PATH without the host's per-user shims, so `python3` is the system one inside bubblewrap too. */
export const SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin";

/** A throwaway state root for one test file; `cleanup()` removes it. */
export function tempRoot(label: string): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), `sbox-tools-${label}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A provider-local provider with bubblewrap isolation over `root`. */
export function localProvider(root: string): ReturnType<typeof local> {
  return local({ root, isolation: "bwrap", path: SANDBOX_PATH });
}

/** A client that remembers what it created. */
export interface TestClient<P extends SandboxProvider> {
  readonly client: SandboxClient<P["capabilities"]>;
  create(): Promise<Sandbox<P["capabilities"]>>;
  cleanup(): Promise<void>;
}

/** A client over `provider`, plus a function that destroys every sandbox it created. */
export function clientFor<P extends SandboxProvider>(provider: P): TestClient<P> {
  const client = createSandboxClient({ provider }) as unknown as SandboxClient<P["capabilities"]>;
  const created: { destroy(): Promise<void> }[] = [];
  return {
    client,
    async create() {
      const sandbox = await client.create();
      created.push(sandbox);
      return sandbox;
    },
    async cleanup(): Promise<void> {
      for (const sandbox of created) await sandbox.destroy().catch(() => undefined);
      await client.dispose();
    },
  };
}
