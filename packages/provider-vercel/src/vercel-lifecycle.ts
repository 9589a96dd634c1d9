import type {
  DriverSandboxV1 as DriverSandbox,
  DriverSandboxInfoV1 as DriverSandboxInfo,
  EgressPolicy,
  ListFilter,
  SandboxSpec,
  SandboxState,
} from "@sbox/core/spec";
import { SandboxError } from "@sbox/core/spec";
import { VERCEL_PROVIDER_NAME } from "./vercel-names.js";
import { networkPolicyOf } from "./vercel-network.js";
import type { ResolvedVercelOptions } from "./vercel-options.js";
import { loadVercel, sdkParams, type VercelSandbox } from "./vercel-sdk.js";

/** A driver sandbox of this provider: the sandbox's name and the SDK object. */
export type VercelDriverSandbox = DriverSandbox<VercelSandbox>;

/** The states a Vercel session reports, as sbox names them. */
const STATES: Readonly<Record<string, SandboxState>> = {
  pending: "starting",
  running: "running",
  stopping: "stopped",
  stopped: "stopped",
  snapshotting: "stopped",
  failed: "error",
  aborted: "error",
};

/** The sbox state of a session status. */
export function stateOf(status: string): SandboxState {
  return STATES[status] ?? "unknown";
}

/** Vercel's sandbox names: letters, digits, `.`, `_`, `-`. */
function checkName(name: string): string {
  if (!/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/.test(name)) {
    throw new SandboxError(
      "Validation",
      "vercel: a sandbox name is 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit",
      { provider: VERCEL_PROVIDER_NAME, retryable: false },
    );
  }
  return name;
}

function wrap(sandbox: VercelSandbox): VercelDriverSandbox {
  return { id: sandbox.name, native: sandbox };
}

/** What `template` names: a runtime (`node24`), a managed image (`vercel/sandbox/...`) or a snapshot (`snap_...`). */
function templateParams(
  template: string | undefined,
  options: ResolvedVercelOptions,
): Record<string, unknown> {
  const name = template ?? options.runtime;
  if (name.startsWith("snap_")) return { source: { type: "snapshot", snapshotId: name } };
  if (name.startsWith("vercel/sandbox/")) return { image: name };
  return { runtime: name };
}

/**
 * `create`: `ttlMs` is the session timeout (Vercel stops the session when it runs out; never dropped:
 * without it the provider's `timeoutMs` applies), `resources.vcpus` and `ports` as given, `metadata` as
 * tags, `network` as the network policy, `env` for every command.
 */
export async function createSandbox(
  options: ResolvedVercelOptions,
  spec: SandboxSpec,
  signal: AbortSignal,
): Promise<VercelDriverSandbox> {
  const { Sandbox } = await loadVercel();
  const params: Record<string, unknown> = {
    ...sdkParams(options, signal),
    ...templateParams(spec.template, options),
    timeout: Math.ceil(spec.ttlMs ?? options.timeoutMs),
    persistent: options.persistent,
    ports: [...(spec.ports ?? [])],
  };
  if (spec.name !== undefined) params.name = checkName(spec.name);
  if (spec.resources?.vcpus !== undefined) params.resources = { vcpus: spec.resources.vcpus };
  if (spec.metadata !== undefined) params.tags = { ...spec.metadata };
  if (spec.env !== undefined) params.env = { ...spec.env };
  if (spec.network?.egress !== undefined)
    params.networkPolicy = networkPolicyOf(spec.network.egress as EgressPolicy);
  const sandbox = await Sandbox.create(params as Parameters<typeof Sandbox.create>[0]);
  return wrap(sandbox);
}

/** `connect`: the sandbox by name, as it is (a stopped one stays stopped until used). */
export async function connectSandbox(
  options: ResolvedVercelOptions,
  id: string,
  signal: AbortSignal,
): Promise<VercelDriverSandbox> {
  const { Sandbox } = await loadVercel();
  const sandbox = await Sandbox.get({ ...sdkParams(options, signal), name: checkName(id) });
  return wrap(sandbox);
}

function isNotFound(error: unknown): boolean {
  const status = (error as { response?: { status?: unknown } } | undefined)?.response?.status;
  return status === 404;
}

/** `destroy`: deletes the sandbox; one already gone is fine (destroy is idempotent). */
export async function destroySandbox(sandbox: VercelDriverSandbox, signal: AbortSignal): Promise<void> {
  try {
    await sandbox.native.delete({ signal });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

interface SandboxRow {
  name: string;
  status: string;
  createdAt: number;
  expiresAt?: number | undefined;
  tags?: Record<string, string> | undefined;
}

function infoOfRow(row: SandboxRow, raw: unknown): DriverSandboxInfo {
  return {
    id: row.name,
    state: stateOf(row.status),
    metadata: { ...(row.tags ?? {}) },
    createdAt: new Date(row.createdAt),
    ...(row.expiresAt === undefined ? {} : { expiresAt: new Date(row.expiresAt) }),
    raw,
  };
}

/** `getInfo`: read live (`GET /v2/sandboxes/:name`); a deleted sandbox is `NotFound`. */
export async function sandboxInfo(
  options: ResolvedVercelOptions,
  sandbox: VercelDriverSandbox,
  signal: AbortSignal,
): Promise<DriverSandboxInfo> {
  const { Sandbox } = await loadVercel();
  const live = await Sandbox.get({ ...sdkParams(options, signal), name: sandbox.id });
  return infoOfRow(
    {
      name: live.name,
      status: live.status,
      createdAt: live.createdAt.getTime(),
      expiresAt: live.expiresAt?.getTime(),
      tags: live.tags,
    },
    live,
  );
}

/**
 * `list`: the SDK filters by one tag on the server; the other metadata keys and the states are filtered
 * here, so every field of the filter is honoured.
 */
export async function* listSandboxes(
  options: ResolvedVercelOptions,
  filter: ListFilter,
  signal: AbortSignal,
): AsyncIterable<DriverSandboxInfo> {
  const limit = filter.limit;
  if (limit !== undefined && limit <= 0) return;
  const wanted =
    filter.state === undefined ? undefined : Array.isArray(filter.state) ? filter.state : [filter.state];
  const metadata = Object.entries(filter.metadata ?? {});
  const { Sandbox } = await loadVercel();
  const first = metadata[0];
  const pages = await Sandbox.list({
    ...sdkParams(options, signal),
    ...(first ? { tags: { [first[0]]: first[1] } } : {}),
  } as Parameters<typeof Sandbox.list>[0]);
  let seen = 0;
  for await (const row of pages as AsyncIterable<SandboxRow>) {
    const info = infoOfRow(row, row);
    if (wanted && !wanted.includes(info.state)) continue;
    if (!metadata.every(([key, value]) => info.metadata[key] === value)) continue;
    yield info;
    seen++;
    if (limit !== undefined && seen >= limit) return;
  }
}

/** `stop`: ends the session; a persistent sandbox keeps its files for the next one. */
export async function stopSandbox(sandbox: VercelDriverSandbox, signal: AbortSignal): Promise<void> {
  await sandbox.native.stop({ signal });
}

/** `resume`: starts a new session (`GET /v2/sandboxes/:name?resume=true`), restoring a persistent sandbox's files. */
export async function resumeSandbox(
  options: ResolvedVercelOptions,
  sandbox: VercelDriverSandbox,
  signal: AbortSignal,
): Promise<void> {
  const { Sandbox } = await loadVercel();
  const resumed = await Sandbox.get({ ...sdkParams(options, signal), name: sandbox.id, resume: true });
  // The driver sandbox keeps its identity; its SDK object now holds the new session.
  (sandbox as { native: VercelSandbox }).native = resumed;
}

/**
 * `setTimeout(ms)`: the session should end `ms` from now. Vercel only extends a running session's
 * timeout (`extendTimeout`), so a later deadline is an extension; an earlier one cannot be had and is a
 * `Validation` error rather than a silent no-op.
 */
export async function setSandboxTimeout(
  options: ResolvedVercelOptions,
  sandbox: VercelDriverSandbox,
  ttlMs: number,
  signal: AbortSignal,
): Promise<void> {
  const { Sandbox } = await loadVercel();
  const live = await Sandbox.get({ ...sdkParams(options, signal), name: sandbox.id });
  const expiresAt = live.expiresAt?.getTime();
  if (live.status !== "running" || expiresAt === undefined) {
    throw new SandboxError("InvalidState", "vercel setTimeout: the sandbox is not running", {
      provider: VERCEL_PROVIDER_NAME,
      retryable: false,
    });
  }
  const extra = Math.ceil(Date.now() + ttlMs - expiresAt);
  if (extra < 0) {
    throw new SandboxError(
      "Validation",
      `vercel setTimeout: Vercel can only extend a sandbox's timeout; it already runs ${Math.round((expiresAt - Date.now()) / 1000)} s more than asked`,
      { provider: VERCEL_PROVIDER_NAME, retryable: false },
    );
  }
  if (extra === 0) return;
  await live.extendTimeout(extra, { signal });
  (sandbox as { native: VercelSandbox }).native = live;
}
