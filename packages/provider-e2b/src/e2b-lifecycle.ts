import {
  type DriverSandbox,
  type DriverSandboxInfo,
  type ListFilter,
  SandboxError,
  type SandboxMetrics,
  type SandboxSpec,
  type SandboxState,
} from "@sbox/core/spec";
import type { SandboxState as E2BState, SandboxInfo, SandboxOpts } from "e2b";
import { toE2BError } from "./e2b-errors.js";
import { egressRules } from "./e2b-network.js";
import type { ResolvedE2BOptions } from "./e2b-options.js";
import {
  boundedCall,
  connectionOptions,
  type E2BSandbox,
  forgetSandbox,
  loadE2B,
  rememberSandbox,
  unarySignal,
} from "./e2b-sdk.js";

/** A driver sandbox of this provider. */
export type E2BDriverSandbox = DriverSandbox<E2BSandbox>;

const E2B_STATES: readonly SandboxState[] = ["running", "paused"];

/** How long `metrics()` waits for E2B's first sample of a fresh sandbox. */
const METRICS_ATTEMPTS = 6;
const METRICS_RETRY_MS = 1_500;

function wrap(options: ResolvedE2BOptions, sandbox: E2BSandbox): E2BDriverSandbox {
  rememberSandbox(options, sandbox);
  return { id: sandbox.sandboxId, native: sandbox };
}

function infoOf(info: SandboxInfo): DriverSandboxInfo {
  return {
    id: info.sandboxId,
    state: info.state === "paused" ? "paused" : info.state === "running" ? "running" : "unknown",
    metadata: { ...info.metadata },
    createdAt: info.startedAt,
    expiresAt: info.endAt,
    raw: info,
  };
}

function validTimeout(ms: number, what: string): number {
  if (!(typeof ms === "number" && Number.isFinite(ms) && ms > 0)) {
    throw new SandboxError(
      "Validation",
      `${what} must be a positive number of milliseconds, got ${String(ms)}`,
    );
  }
  return ms;
}

/** `Sandbox.create` from a spec: template, env, metadata, timeout and egress rules. */
export async function createSandbox(
  options: ResolvedE2BOptions,
  spec: SandboxSpec,
  signal: AbortSignal,
): Promise<E2BDriverSandbox> {
  const { Sandbox } = await loadE2B(options);
  const opts: SandboxOpts = {
    ...connectionOptions(options, signal),
    timeoutMs: spec.ttlMs === undefined ? options.timeoutMs : validTimeout(spec.ttlMs, "ttlMs"),
  };
  if (spec.metadata) opts.metadata = { ...spec.metadata };
  if (spec.env) opts.envs = { ...spec.env };
  if (spec.network) opts.network = egressRules(spec.network.egress);
  const template = spec.template ?? options.template;
  const sandbox = await boundedCall(options, "create", Sandbox.create(template, opts), signal);
  return wrap(options, sandbox);
}

/** `Sandbox.connect`: attaches to a running sandbox and resumes a paused one (that is what E2B's connect does). */
export async function connectSandbox(
  options: ResolvedE2BOptions,
  id: string,
  signal: AbortSignal,
): Promise<E2BDriverSandbox> {
  if (typeof id !== "string" || !/^[A-Za-z0-9_-]+$/.test(id)) {
    throw new SandboxError(
      "NotFound",
      `e2b connect: no sandbox ${JSON.stringify(id)} (not an E2B sandbox id)`,
    );
  }
  const { Sandbox } = await loadE2B(options);
  const sandbox = await boundedCall(
    options,
    `connect ${id}`,
    Sandbox.connect(id, connectionOptions(options, signal)),
    signal,
  );
  return wrap(options, sandbox);
}

/** `Sandbox.kill`; a sandbox that is already gone is not an error. */
export async function destroySandbox(
  options: ResolvedE2BOptions,
  sandbox: E2BDriverSandbox,
  signal: AbortSignal,
): Promise<void> {
  const { Sandbox } = await loadE2B(options);
  await boundedCall(options, "destroy", Sandbox.kill(sandbox.id, connectionOptions(options, signal)), signal);
  forgetSandbox(options, sandbox.id);
}

/** Live state from the control plane; a sandbox E2B no longer knows is reported destroyed. */
export async function sandboxInfo(
  options: ResolvedE2BOptions,
  sandbox: E2BDriverSandbox,
  signal: AbortSignal,
): Promise<DriverSandboxInfo> {
  const { Sandbox } = await loadE2B(options);
  try {
    const info = await boundedCall(
      options,
      "getInfo",
      Sandbox.getInfo(sandbox.id, connectionOptions(options, signal)),
      signal,
    );
    return infoOf(info);
  } catch (error) {
    if (toE2BError(error, { operation: "getInfo" }).code === "NotFound") {
      return { id: sandbox.id, state: "destroyed", metadata: {} };
    }
    throw error;
  }
}

/**
 * Lists sandboxes page by page with E2B's own metadata and state filters. States E2B does not have
 * (stopped, destroyed...) match nothing, so such a filter returns without a call.
 */
export async function* listSandboxes(
  options: ResolvedE2BOptions,
  filter: ListFilter,
  signal: AbortSignal,
): AsyncIterable<DriverSandboxInfo> {
  const limit = filter.limit;
  if (limit !== undefined && limit <= 0) return;
  const wanted =
    filter.state === undefined ? undefined : Array.isArray(filter.state) ? filter.state : [filter.state];
  const states = (wanted ?? E2B_STATES).filter((s): s is E2BState => E2B_STATES.includes(s)) as E2BState[];
  if (states.length === 0) return;
  const { Sandbox } = await loadE2B(options);
  const { signal: _signal, ...listOptions } = connectionOptions(options);
  const query: { metadata?: Record<string, string>; state: E2BState[] } = { state: states };
  if (filter.metadata) query.metadata = { ...filter.metadata };
  const paginator = Sandbox.list({
    ...listOptions,
    query,
    ...(limit === undefined ? {} : { limit: Math.min(limit, 100) }),
  });
  let seen = 0;
  while (paginator.hasNext) {
    if (signal.aborted) throw new SandboxError("Aborted", "e2b list: aborted");
    const page = await boundedCall(
      options,
      "list",
      paginator.nextItems({ signal: unarySignal(options, signal) }),
      signal,
    );
    for (const info of page) {
      yield infoOf(info);
      seen++;
      if (limit !== undefined && seen >= limit) return;
    }
  }
}

/** `pause`: keeps memory unless the provider was made with `pauseKeepsMemory: false`. */
export async function pauseSandbox(
  options: ResolvedE2BOptions,
  sandbox: E2BDriverSandbox,
  signal: AbortSignal,
): Promise<void> {
  const { Sandbox } = await loadE2B(options);
  await Sandbox.pause(sandbox.id, {
    ...connectionOptions(options, signal),
    keepMemory: options.pauseKeepsMemory,
  });
}

/** `resume`: E2B resumes a paused sandbox when it is connected to. */
export async function resumeSandbox(
  options: ResolvedE2BOptions,
  sandbox: E2BDriverSandbox,
  signal: AbortSignal,
): Promise<void> {
  await loadE2B(options);
  await sandbox.native.connect({ ...connectionOptions(options, signal) });
}

/** `setTimeout`: moves the sandbox's expiry to `ttlMs` from now. */
export async function setSandboxTimeout(
  options: ResolvedE2BOptions,
  sandbox: E2BDriverSandbox,
  ttlMs: number,
  signal: AbortSignal,
): Promise<void> {
  validTimeout(ttlMs, "setTimeout");
  const { Sandbox } = await loadE2B(options);
  await boundedCall(
    options,
    "setTimeout",
    Sandbox.setTimeout(sandbox.id, ttlMs, connectionOptions(options, signal)),
    signal,
  );
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/** The latest sample of E2B's metrics; a fresh sandbox has none for a few seconds, so it waits briefly. */
export async function sandboxMetrics(
  options: ResolvedE2BOptions,
  sandbox: E2BDriverSandbox,
  signal: AbortSignal,
): Promise<SandboxMetrics> {
  const { Sandbox } = await loadE2B(options);
  for (let attempt = 1; ; attempt++) {
    const samples = await boundedCall(
      options,
      "metrics",
      Sandbox.getMetrics(sandbox.id, connectionOptions(options, signal)),
      signal,
    );
    const last = samples.at(-1);
    if (last) {
      return {
        cpuPercent: last.cpuUsedPct,
        memoryBytes: last.memUsed,
        memoryLimitBytes: last.memTotal,
        diskBytes: last.diskUsed,
        at: last.timestamp,
      };
    }
    if (attempt >= METRICS_ATTEMPTS || signal.aborted) {
      throw new SandboxError(
        "InvalidState",
        `e2b metrics ${sandbox.id}: E2B has no metrics sample for the sandbox yet`,
        {
          retryable: true,
        },
      );
    }
    await sleep(METRICS_RETRY_MS, signal);
  }
}

/** `fork`: `count` new sandboxes from a memory snapshot of this one; all or nothing. */
export async function forkSandbox(
  options: ResolvedE2BOptions,
  sandbox: E2BDriverSandbox,
  count: number,
  signal: AbortSignal,
): Promise<E2BDriverSandbox[]> {
  if (!(Number.isInteger(count) && count >= 1)) {
    throw new SandboxError("Validation", `fork count must be a positive integer, got ${String(count)}`);
  }
  const { Sandbox } = await loadE2B(options);
  const results = await Sandbox.fork(sandbox.id, {
    ...connectionOptions(options, signal),
    count,
    timeoutMs: options.timeoutMs,
  });
  const made = results.filter((r): r is E2BSandbox => !(r instanceof Error));
  const failed = results.find((r): r is Error => r instanceof Error);
  if (failed || made.length !== count) {
    // A partial fork is not what was asked for: remove the forks that did start.
    await Promise.all(
      made.map((fork) => Sandbox.kill(fork.sandboxId, connectionOptions(options)).catch(() => false)),
    );
    throw failed ?? new SandboxError("Provider", `E2B made ${made.length} of ${count} forks`);
  }
  return made.map((fork) => wrap(options, fork));
}
