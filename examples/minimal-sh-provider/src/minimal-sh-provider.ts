import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type DriverSandboxInfo,
  defineProvider,
  optionRules,
  SandboxError,
  type SandboxProvider,
  validateProviderOptions,
} from "@sbox/core/spec";
import { minimalShCapabilities } from "./minimal-sh-capabilities.js";
import { killSandboxProcesses, minimalShExec } from "./minimal-sh-exec.js";
import { type MinimalShRecord, MinimalShStore } from "./minimal-sh-store.js";

/** Options of {@link minimalShProvider}. */
export interface MinimalShOptions {
  /**
   * Directory holding every sandbox (default `<tmpdir>/sbox-minimal-sh`). Provider instances with the same
   * root see the same sandboxes, as another process would.
   */
  root?: string | undefined;
}

function infoOf(record: MinimalShRecord): DriverSandboxInfo {
  const info: DriverSandboxInfo = {
    id: record.id,
    state: "running",
    metadata: record.metadata,
    createdAt: new Date(record.createdAt),
    raw: record,
  };
  if (record.expiresAt !== undefined) info.expiresAt = new Date(record.expiresAt);
  return info;
}

/**
 * A complete minimal provider: each sandbox is a directory on this machine and every command is
 * `sh -c` run there (no isolation: for development and as an authoring example). It implements the five
 * required driver methods and `doList`; the core emulates streaming, background processes, files, watch
 * and metrics over the exec primitive.
 */
export function minimalShProvider(
  options: MinimalShOptions = {},
): SandboxProvider<typeof minimalShCapabilities, MinimalShRecord> {
  // An option the provider does not know is refused, never ignored (a typo would silently do nothing).
  validateProviderOptions("minimal-sh", options, { root: optionRules.nonEmptyString() });
  const store = new MinimalShStore(options.root ?? join(tmpdir(), "sbox-minimal-sh"));
  return defineProvider({
    specificationVersion: "v1",
    name: "minimal-sh",
    capabilities: minimalShCapabilities,
    flags: {
      perCommandEnvCwd: false,
      exitCodeNative: true,
      preservesDiskOnStop: false,
      preservesMemoryOnPause: false,
      previewModel: "none",
      nativeExpiry: false,
      snapshotFilesystemOnly: true,
    },
    honours: ["env", "metadata"],
    // Per root, so that emulation state (background process records) is private to these sandboxes.
    emulationStateDir: join(store.root, ".sbox-state"),
    async doCreate(spec) {
      const record = await store.create({
        id: randomBytes(8).toString("hex"),
        env: { ...(spec.env ?? {}) },
        metadata: { ...(spec.metadata ?? {}) },
        createdAt: new Date().toISOString(),
      });
      return { id: record.id, native: record };
    },
    async doConnect(id) {
      const record = await store.read(id);
      return { id: record.id, native: record };
    },
    async doDestroy(sandbox) {
      await killSandboxProcesses(sandbox.id);
      await store.remove(sandbox.id);
    },
    async doGetInfo(sandbox) {
      return infoOf(await store.read(sandbox.id));
    },
    async doSetTimeout(sandbox, ttlMs) {
      if (!Number.isFinite(ttlMs) || ttlMs <= 0) {
        throw new SandboxError("Validation", "ttlMs must be a positive number of milliseconds");
      }
      const expiresAt = new Date(Date.now() + ttlMs).toISOString();
      await store.update(sandbox.id, (record) => ({ ...record, expiresAt }));
    },
    doExec: (sandbox, request) => minimalShExec(sandbox.native, request),
    async *doList() {
      // The core applies the filter again, so listing everything is correct, only coarse.
      for await (const record of store.list()) yield infoOf(record);
    },
  });
}
