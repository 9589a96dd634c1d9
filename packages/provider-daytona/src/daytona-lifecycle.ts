import { randomBytes } from "node:crypto";
import type {
  DriverSandboxInfo,
  DriverSandboxV1,
  ListFilter,
  SandboxSpec,
  SandboxState,
} from "@sbox/core/spec";
import { SandboxError } from "@sbox/core/spec";
import { isDaytonaNotFound } from "./daytona-errors.js";
import {
  DAYTONA_CREATE_TOKEN_LABEL,
  DAYTONA_EXPIRES_AT_LABEL,
  DAYTONA_IDEMPOTENCY_LABEL,
  DAYTONA_INTERNAL_LABELS,
  DAYTONA_MANAGED_LABEL,
  DAYTONA_PROVIDER_NAME,
} from "./daytona-names.js";
import type { ResolvedDaytonaOptions } from "./daytona-options.js";
import { bounded, type DaytonaSdkSandbox, daytonaClient } from "./daytona-sdk.js";
import { sandboxStateOf } from "./daytona-states.js";
import { intervalsFor } from "./daytona-ttl.js";

/** What the SDK's `create` takes for a sandbox built from an image, with its sizes. */
type CreateFromImage = import("@daytonaio/sdk").CreateSandboxFromImageParams;

/** A sandbox as the driver holds it: the SDK's `Sandbox`. */
export type DaytonaHandle = DriverSandboxV1<DaytonaSdkSandbox>;

/** How long cleanup of a create whose answer was lost may take. */
const CLEANUP_TIMEOUT_MS = 30_000;

function handleOf(sandbox: DaytonaSdkSandbox): DaytonaHandle {
  return { id: sandbox.id, native: sandbox };
}

/** The metadata users set: the labels without sbox's and the SDK's bookkeeping. */
export function metadataOf(labels: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(labels ?? {})) {
    if (!DAYTONA_INTERNAL_LABELS.includes(key)) out[key] = value;
  }
  return out;
}

function dateOf(value: string | undefined): Date | undefined {
  if (!value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/** What the driver reports of an SDK sandbox (as last refreshed). */
export function infoOf(sandbox: DaytonaSdkSandbox): DriverSandboxInfo {
  return {
    id: sandbox.id,
    state: sandboxStateOf(sandbox.state),
    metadata: metadataOf(sandbox.labels),
    createdAt: dateOf(sandbox.createdAt),
    expiresAt: dateOf(sandbox.labels?.[DAYTONA_EXPIRES_AT_LABEL]),
    raw: sandbox,
  };
}

/** The SDK's own wait for `started` ran out (the service answered; the sandbox is still booting). */
function isSlowBoot(error: unknown): boolean {
  return (
    typeof error === "object" &&
    error !== null &&
    (error as { name?: unknown }).name === "DaytonaTimeoutError"
  );
}

/** Whole GiB of at least `mb` MB (Daytona sizes memory and disk in GiB). */
function gib(mb: number | undefined): number | undefined {
  return mb === undefined ? undefined : Math.max(1, Math.ceil(mb / 1024));
}

function statesOf(filter: ListFilter): readonly SandboxState[] | undefined {
  if (filter.state === undefined) return undefined;
  return typeof filter.state === "string" ? [filter.state] : filter.state;
}

/** The sandbox lifecycle over the SDK's `Daytona` client. */
export function daytonaLifecycle(options: ResolvedDaytonaOptions) {
  const call = <T>(work: Promise<T>, signal: AbortSignal, what: string) =>
    bounded(work, signal, options.requestTimeoutMs, what);

  async function* listByLabels(labels: Record<string, string>, signal: AbortSignal) {
    const client = await daytonaClient(options);
    const pages = client.list({ labels: { ...labels, [DAYTONA_MANAGED_LABEL]: "true" } });
    while (true) {
      const next = await call(pages.next(), signal, "list");
      if (next.done) return;
      yield next.value;
    }
  }

  /** The first sandbox carrying a create's token, if the service answers within the request deadline. */
  async function firstByToken(token: string, signal: AbortSignal): Promise<DaytonaSdkSandbox | undefined> {
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(options.requestTimeoutMs)]);
    for await (const sandbox of listByLabels({ [DAYTONA_CREATE_TOKEN_LABEL]: token }, deadline))
      return sandbox;
    return undefined;
  }

  /** Deletes every sandbox a lost create answer left behind (found by the create's token). */
  async function removeOrphans(token: string): Promise<void> {
    const signal = AbortSignal.timeout(CLEANUP_TIMEOUT_MS);
    for await (const orphan of listByLabels({ [DAYTONA_CREATE_TOKEN_LABEL]: token }, signal)) {
      await call(orphan.delete(), signal, "delete").catch(() => undefined);
    }
  }

  return {
    async create(spec: SandboxSpec, signal: AbortSignal): Promise<DaytonaHandle> {
      const key = spec.idempotencyKey;
      if (key !== undefined) {
        for await (const existing of listByLabels({ [DAYTONA_IDEMPOTENCY_LABEL]: key }, signal)) {
          const state = sandboxStateOf(existing.state);
          if (state !== "destroyed" && state !== "error") return handleOf(existing);
        }
      }
      const client = await daytonaClient(options);
      const token = randomBytes(12).toString("hex");
      const labels: Record<string, string> = {
        ...spec.metadata,
        [DAYTONA_MANAGED_LABEL]: "true",
        [DAYTONA_CREATE_TOKEN_LABEL]: token,
      };
      if (key !== undefined) labels[DAYTONA_IDEMPOTENCY_LABEL] = key;
      if (spec.ttlMs !== undefined) {
        labels[DAYTONA_EXPIRES_AT_LABEL] = new Date(Date.now() + spec.ttlMs).toISOString();
      }
      const base = {
        ...(spec.name !== undefined ? { name: spec.name } : {}),
        envVars: { ...spec.env },
        labels,
        ...intervalsFor(spec.ttlMs, options),
      };
      let params: import("@daytonaio/sdk").CreateSandboxFromSnapshotParams | CreateFromImage;
      if (options.image !== undefined) {
        // From an image: Daytona builds `FROM <image>` and sizes the sandbox as asked.
        const cpu = spec.resources?.vcpus;
        if (cpu !== undefined && !Number.isInteger(cpu)) {
          throw new SandboxError("Validation", "daytona: resources.vcpus must be a whole number", {
            provider: DAYTONA_PROVIDER_NAME,
          });
        }
        const memory = gib(spec.resources?.memoryMB);
        const disk = gib(spec.resources?.diskMB);
        const resources: NonNullable<CreateFromImage["resources"]> = {
          ...(cpu !== undefined ? { cpu } : {}),
          ...(memory !== undefined ? { memory } : {}),
          ...(disk !== undefined ? { disk } : {}),
        };
        params = { ...base, image: spec.template ?? options.image, resources };
      } else {
        // From a snapshot, sized by the snapshot (the core refused resources: not honoured here).
        const snapshot = spec.template ?? options.snapshot;
        params = { ...base, ...(snapshot !== undefined ? { snapshot } : {}) };
      }
      const started = Date.now();
      try {
        // The SDK's timeout bounds the create request and its own wait for `started`: the request deadline,
        // so a silent service is a Timeout on time. A boot slower than that is waited out below.
        const sandbox = await bounded(
          client.create(params, { timeout: Math.max(1, Math.ceil(options.requestTimeoutMs / 1000)) }),
          signal,
          2 * options.requestTimeoutMs + 1_000,
          "create",
        );
        return handleOf(sandbox);
      } catch (error) {
        // The sandbox may exist although the answer was lost, or still be booting: find it by its token.
        const made = await firstByToken(token, signal).catch(() => undefined);
        if (made && isSlowBoot(error) && sandboxStateOf(made.state) === "starting") {
          try {
            const left = Math.max(1_000, options.startTimeoutMs - (Date.now() - started));
            await bounded(
              made.waitUntilStarted(Math.ceil(left / 1000)),
              signal,
              left + options.requestTimeoutMs,
              "create",
            );
            return handleOf(made);
          } catch (waitError) {
            await removeOrphans(token).catch(() => undefined);
            throw waitError;
          }
        }
        // Never leave behind a sandbox the caller was not given.
        if (made) await removeOrphans(token).catch(() => undefined);
        throw error;
      }
    },

    async connect(id: string, signal: AbortSignal): Promise<DaytonaHandle> {
      const client = await daytonaClient(options);
      const sandbox = await call(client.get(id), signal, "connect");
      if (sandboxStateOf(sandbox.state) === "destroyed") {
        throw new SandboxError("NotFound", `daytona: sandbox ${id} was destroyed`, {
          provider: DAYTONA_PROVIDER_NAME,
        });
      }
      return handleOf(sandbox);
    },

    /** Deletes the sandbox; one already gone is success (destroy is idempotent). */
    async destroy(handle: DaytonaHandle, signal: AbortSignal): Promise<void> {
      try {
        await call(handle.native.delete(), signal, "destroy");
      } catch (error) {
        if (isDaytonaNotFound(error)) return;
        throw error;
      }
    },

    async getInfo(handle: DaytonaHandle, signal: AbortSignal): Promise<DriverSandboxInfo> {
      try {
        await call(handle.native.refreshData(), signal, "getInfo");
      } catch (error) {
        if (isDaytonaNotFound(error))
          return { id: handle.id, state: "destroyed", metadata: metadataOf(handle.native.labels) };
        throw error;
      }
      return infoOf(handle.native);
    },

    async *list(filter: ListFilter, signal: AbortSignal): AsyncIterable<DriverSandboxInfo> {
      const states = statesOf(filter);
      let count = 0;
      for await (const sandbox of listByLabels({ ...filter.metadata }, signal)) {
        const info = infoOf(sandbox);
        if (info.state === "destroyed") continue;
        if (states && !states.includes(info.state)) continue;
        yield info;
        count++;
        if (filter.limit !== undefined && count >= filter.limit) return;
      }
    },

    async stop(handle: DaytonaHandle, signal: AbortSignal): Promise<void> {
      await call(handle.native.stop(Math.ceil(options.startTimeoutMs / 1000)), signal, "stop");
    },

    async resume(handle: DaytonaHandle, signal: AbortSignal): Promise<void> {
      await call(handle.native.start(Math.ceil(options.startTimeoutMs / 1000)), signal, "resume");
    },
  };
}
