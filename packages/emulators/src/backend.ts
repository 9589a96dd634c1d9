/**
 * The one seam of every emulator: emulated machines are sandboxes of a backend provider. The emulator owns
 * the vendor's protocol; processes, files, ports and networks come from the backend's `Sandbox`. An
 * emulator never spawns host processes of its own and never touches host paths for a machine.
 *
 * A backend is `"local"` (provider-local with its isolation, the default), `"docker"` (provider-docker,
 * loaded only when chosen) or any `SandboxProvider`. Every machine it creates is labelled with the
 * emulator's vendor and run id, tracked, and destroyed by `close()`.
 */
import { randomBytes } from "node:crypto";
import {
  type AnyCapabilities,
  createSandboxClient,
  type Sandbox,
  type SandboxClient,
  type SandboxProvider,
  type SandboxSpec,
  type SpecField,
} from "@sbox/core";
import { SandboxError } from "@sbox/core/spec";

/** The backends known by name. */
export type EmulatorBackendName = "local" | "docker";

/** The backend names `sbox emulate --backend` accepts. */
export const EMULATOR_BACKEND_NAMES: readonly EmulatorBackendName[] = ["local", "docker"];

/**
 * What an emulator runs its machines on: a backend name, a name with provider options (for instance
 * `{ name: "docker", options: { image: "my-image" } }`), or a ready `SandboxProvider`.
 */
export type EmulatorBackendInput =
  | EmulatorBackendName
  | { readonly name: EmulatorBackendName; readonly options?: Readonly<Record<string, unknown>> | undefined }
  | SandboxProvider;

/** What an emulator asks of its backend when it opens it. */
export interface BackendDefaults {
  /** The emulated vendor, recorded on every machine (`sbox-emulator=<vendor>`). */
  readonly vendor: string;
  /** Options merged under the user's for the docker backend (the vendor's base image, for instance). */
  readonly docker?: Readonly<Record<string, unknown>> | undefined;
  /** Options merged under the user's for the local backend. */
  readonly local?: Readonly<Record<string, unknown>> | undefined;
}

/** An open backend: creates, tracks and cleans up the sandboxes that emulated machines live in. */
export interface EmulatorBackend {
  /** The backend provider's name (`local`, `docker`, ...). */
  readonly name: string;
  /**
   * The backend provider itself, for emulators whose vendor protocol carries raw bytes that the facade
   * decodes as text (Kubernetes exec): they call its own driver methods on a machine they created here.
   */
  readonly provider: SandboxProvider;
  /** The spec fields the backend honours at create (`template` means snapshots can seed new machines). */
  readonly honours: readonly SpecField[];
  /** The client machines are created with (no retries: an emulator reports what the backend says). */
  readonly client: SandboxClient<AnyCapabilities>;
  /** The metadata every machine of this emulator run carries. */
  readonly labels: Readonly<Record<string, string>>;
  /** Creates a machine sandbox; it is destroyed by `close()` unless `release`d first. */
  create(spec?: SandboxSpec): Promise<Sandbox<AnyCapabilities>>;
  /** Tracks a sandbox made by the backend itself (a fork), so `close()` destroys it too. */
  adopt(sandbox: Sandbox<AnyCapabilities>): void;
  /** Destroys a machine sandbox and forgets it (idempotent). */
  release(sandbox: Sandbox<AnyCapabilities>): Promise<void>;
  /** Sandboxes currently tracked. */
  readonly machines: number;
  /** Destroys every tracked machine and disposes the client; machines that fail to go are reported. */
  close(): Promise<void>;
}

function isProvider(input: EmulatorBackendInput): input is SandboxProvider {
  return typeof input === "object" && input !== null && "specificationVersion" in input;
}

/**
 * Where the core's emulations keep the docker backend's own state inside a machine (its emulated background
 * processes). Out of the guest's `/tmp/.sbox`, which the vendor's client — sbox's own adapters over the
 * core, as another user — uses for the same purpose: the backend's machinery must not show up there.
 */
export const BACKEND_EMULATION_STATE_DIR = "/run/sbox-emulator-backend";

function withOwnStateDir(provider: SandboxProvider): SandboxProvider {
  // Object.create keeps prototype methods of class-based providers, which a spread would drop.
  return Object.assign(Object.create(provider) as SandboxProvider, {
    emulationStateDir: BACKEND_EMULATION_STATE_DIR,
  });
}

async function providerFor(input: EmulatorBackendInput, defaults: BackendDefaults): Promise<SandboxProvider> {
  if (isProvider(input)) return input;
  const name = typeof input === "string" ? input : input.name;
  const options = typeof input === "string" ? {} : (input.options ?? {});
  if (name === "local") {
    const { local } = await import("@sbox/provider-local");
    return local({ ...(defaults.local ?? {}), ...options }) as unknown as SandboxProvider;
  }
  if (name === "docker") {
    let mod: { docker(options: Record<string, unknown>): unknown };
    try {
      // Optional peer: only users who pick the docker backend need it installed.
      mod = (await import("@sbox/provider-docker")) as unknown as typeof mod;
    } catch (error) {
      throw new SandboxError(
        "Validation",
        'the docker backend needs @sbox/provider-docker installed next to @sbox/emulators ("pnpm add @sbox/provider-docker")',
        { retryable: false, cause: error },
      );
    }
    return withOwnStateDir(mod.docker({ ...(defaults.docker ?? {}), ...options }) as SandboxProvider);
  }
  throw new SandboxError(
    "Validation",
    `unknown emulator backend ${JSON.stringify(name)}: use ${EMULATOR_BACKEND_NAMES.map((n) => `"${n}"`).join(" or ")}, or pass a SandboxProvider`,
    { retryable: false },
  );
}

/** Opens a backend for one emulator run. Nothing is created until the first machine is. */
export async function openBackend(
  input: EmulatorBackendInput | undefined,
  defaults: BackendDefaults,
): Promise<EmulatorBackend> {
  const provider = await providerFor(input ?? "local", defaults);
  const client = createSandboxClient({
    provider,
    retry: { retries: 0 },
  }) as unknown as SandboxClient<AnyCapabilities>;
  const labels = {
    "sbox-emulator": defaults.vendor,
    "sbox-emulator-run": randomBytes(6).toString("hex"),
  };
  const tracked = new Set<Sandbox<AnyCapabilities>>();
  let closed = false;
  const ensureOpen = () => {
    if (closed) {
      throw new SandboxError("InvalidState", `the ${defaults.vendor} emulator is closed`, {
        retryable: false,
      });
    }
  };
  return {
    name: provider.name,
    provider,
    honours: provider.honours,
    client,
    labels,
    async create(spec = {}) {
      ensureOpen();
      const sandbox = await client.create({ ...spec, metadata: { ...(spec.metadata ?? {}), ...labels } });
      if (closed) {
        await sandbox.destroy().catch(() => undefined);
        ensureOpen();
      }
      tracked.add(sandbox);
      return sandbox;
    },
    adopt(sandbox) {
      if (closed) {
        void sandbox.destroy().catch(() => undefined);
        return;
      }
      tracked.add(sandbox);
    },
    async release(sandbox) {
      tracked.delete(sandbox);
      await sandbox.destroy();
    },
    get machines() {
      return tracked.size;
    },
    async close() {
      if (closed) return;
      closed = true;
      const all = [...tracked];
      tracked.clear();
      const results = await Promise.allSettled(all.map((sandbox) => sandbox.destroy()));
      await client.dispose().catch(() => undefined);
      const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
      if (failed.length > 0) {
        throw new SandboxError(
          "Provider",
          `${failed.length} of ${all.length} ${defaults.vendor} machines could not be destroyed on the ${provider.name} backend: ${String(failed[0]?.reason)}`,
          { cause: failed[0]?.reason },
        );
      }
    },
  };
}
