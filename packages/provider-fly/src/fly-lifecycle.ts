import {
  type DriverSandbox,
  type DriverSandboxInfo,
  type ListFilter,
  SandboxError,
  type SandboxSpec,
} from "@sbox/core/spec";
import type { FlyMachine } from "./fly-api-types.js";
import { hasStatus } from "./fly-errors.js";
import type { FlyHttp } from "./fly-http.js";
import { createMachineRequest } from "./fly-machine-config.js";
import {
  acquireLease,
  createMachine,
  destroyMachine,
  getMachine,
  listMachines,
  machineAction,
  releaseLease,
  waitForState,
} from "./fly-machines-api.js";
import { FLY_IDEMPOTENCY_METADATA_KEY, FLY_MANAGED_METADATA_KEY } from "./fly-names.js";
import type { ResolvedFlyOptions } from "./fly-options.js";
import { retryDelayMs, sleepUnlessAborted } from "./fly-retry.js";
import { sandboxStateOf } from "./fly-states.js";

/** What `sandbox.raw()` returns for a Fly sandbox: the app, and the machine as last read by this handle. */
export interface FlyMachineHandle {
  /** The Fly App the machine belongs to. */
  readonly app: string;
  /** The machine as the API described it when the handle was made (state may have moved on since). */
  readonly machine: FlyMachine;
  /** The machine's create-time env, passed to every exec. */
  readonly env: Readonly<Record<string, string>>;
}

/** Time allowed to destroy a machine whose create failed half-way. */
const CLEANUP_TIMEOUT_MS = 30_000;
/** How long this provider holds a machine's lease while it changes the machine (seconds). */
const LEASE_TTL_SECONDS = 30;

/** Why a failed machine failed, from its newest events. */
function failureOf(machine: FlyMachine | undefined): string {
  for (const event of machine?.events ?? []) {
    if (event.status === "failed" || event.type === "exit") {
      const detail = event.request?.error ?? event.request?.exit_event;
      return detail === undefined
        ? `${event.type ?? "event"} ${event.status ?? ""}`.trim()
        : JSON.stringify(detail);
    }
  }
  return "no reason recorded";
}

/** Machine ids are short lowercase hex on Fly; anything outside this alphabet cannot name a machine. */
const MACHINE_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

function notFound(id: string, app: string): SandboxError {
  return new SandboxError("NotFound", `no Fly machine ${JSON.stringify(id)} in app ${app}`, { status: 404 });
}

function isGone(machine: FlyMachine): boolean {
  return machine.state === "destroyed" || machine.state === "destroying";
}

/** Lifecycle driver methods over the Machines API. */
export interface FlyLifecycle {
  create(spec: SandboxSpec, signal: AbortSignal): Promise<DriverSandbox<FlyMachineHandle>>;
  connect(id: string, signal: AbortSignal): Promise<DriverSandbox<FlyMachineHandle>>;
  destroy(id: string, signal: AbortSignal): Promise<void>;
  getInfo(id: string, signal: AbortSignal): Promise<DriverSandboxInfo>;
  list(filter: ListFilter, signal: AbortSignal): AsyncIterable<DriverSandboxInfo>;
  stop(id: string, signal: AbortSignal): Promise<void>;
  pause(id: string, signal: AbortSignal): Promise<void>;
  resume(id: string, signal: AbortSignal): Promise<void>;
}

/** Builds the lifecycle methods. */
export function flyLifecycle(http: FlyHttp, options: ResolvedFlyOptions): FlyLifecycle {
  const handleOf = (machine: FlyMachine): DriverSandbox<FlyMachineHandle> => ({
    id: machine.id,
    native: { app: http.app(), machine, env: { ...(machine.config?.env ?? {}) } },
  });

  const infoOf = (machine: FlyMachine): DriverSandboxInfo => {
    const info: DriverSandboxInfo = {
      id: machine.id,
      state: sandboxStateOf(machine.state),
      metadata: { ...(machine.config?.metadata ?? {}) },
      raw: machine,
    };
    const created = machine.created_at ? new Date(machine.created_at) : undefined;
    if (created && !Number.isNaN(created.getTime())) info.createdAt = created;
    return info;
  };

  /**
   * Waits for a boot: `started`, or `failed` — a machine that cannot boot (an image Fly cannot pull, a
   * crashing init) fails at once instead of running out the whole start timeout.
   */
  const startedBy = async (
    id: string,
    deadline: number,
    signal: AbortSignal,
    version?: string,
  ): Promise<void> => {
    const state = await waitForState(http, id, "started", {
      deadline,
      signal,
      budgetMs: options.startTimeoutMs,
      orFailed: true,
      version,
    });
    if (state !== "failed") return;
    const machine = await getMachine(http, id, signal).catch(() => undefined);
    throw new SandboxError("Provider", `machine ${id} failed to start: ${failureOf(machine)}`, {
      retryable: false,
    });
  };

  /**
   * Runs a change of machine `id` under its lease, as Fly's own clients do: the lease is taken (a 409
   * means another client holds it: reported as `Conflict`, nothing is changed), its nonce goes with the
   * change, and the lease is released afterwards.
   */
  const leased = async <T>(
    id: string,
    what: string,
    signal: AbortSignal,
    change: (nonce: string) => Promise<T>,
  ): Promise<T> => {
    const nonce = await acquireLease(http, id, LEASE_TTL_SECONDS, `sbox ${what}`, signal);
    try {
      return await change(nonce);
    } finally {
      await releaseLease(http, id, nonce, AbortSignal.timeout(CLEANUP_TIMEOUT_MS)).catch(() => undefined);
    }
  };

  const findByIdempotencyKey = async (key: string, signal: AbortSignal): Promise<FlyMachine | undefined> => {
    const machines = await listMachines(
      http,
      { metadata: { [FLY_IDEMPOTENCY_METADATA_KEY]: key, [FLY_MANAGED_METADATA_KEY]: "true" } },
      signal,
    );
    return machines.find(
      (m) => !isGone(m) && m.state !== "failed" && m.config?.metadata?.[FLY_IDEMPOTENCY_METADATA_KEY] === key,
    );
  };

  /**
   * Without an idempotency key a create is sent once (429 aside): a lost answer to a create that
   * succeeded must not make a second machine. With a key, a failed attempt is followed by a look-up of
   * the key before the next attempt, so a repeat finds the machine the lost answer described.
   */
  const createOnce = async (spec: SandboxSpec, signal: AbortSignal): Promise<FlyMachine> => {
    const body = createMachineRequest(spec, options);
    const key = spec.idempotencyKey;
    if (key === undefined) return createMachine(http, body, signal, "refused-only");
    for (let attempt = 0; ; attempt++) {
      const existing = await findByIdempotencyKey(key, signal);
      if (existing) return existing;
      try {
        return await createMachine(http, body, signal, "refused-only");
      } catch (error) {
        const retryable = SandboxError.isInstance(error) && error.retryable && error.status !== 408;
        if (!retryable || attempt >= options.retry.retries) throw error;
        await sleepUnlessAborted(retryDelayMs(attempt + 1, options.retry, null), signal, "create machine");
      }
    }
  };

  const getOrNotFound = async (id: string, signal: AbortSignal): Promise<FlyMachine> => {
    const app = http.app();
    if (!MACHINE_ID.test(id)) throw notFound(id, app);
    try {
      return await getMachine(http, id, signal);
    } catch (error) {
      if (hasStatus(error, 404)) throw notFound(id, app);
      throw error;
    }
  };

  return {
    async create(spec, signal) {
      const deadline = Date.now() + options.startTimeoutMs;
      const machine = await createOnce(spec, signal);
      try {
        await startedBy(machine.id, deadline, signal, machine.version ?? machine.instance_id);
      } catch (error) {
        // A machine that never came up is still billed while it exists: remove it before reporting.
        await destroyMachine(http, machine.id, AbortSignal.timeout(CLEANUP_TIMEOUT_MS)).catch(() => {});
        throw error;
      }
      return handleOf(machine);
    },

    async connect(id, signal) {
      const machine = await getOrNotFound(id, signal);
      if (isGone(machine)) throw notFound(id, http.app());
      return handleOf(machine);
    },

    async destroy(id, signal) {
      if (!MACHINE_ID.test(id)) return;
      let nonce: string;
      try {
        nonce = await acquireLease(http, id, LEASE_TTL_SECONDS, "sbox destroy", signal);
      } catch (error) {
        // Gone already (404), or destroyed and lingering (412): destroy is idempotent.
        if (hasStatus(error, 404) || hasStatus(error, 412)) return;
        throw error;
      }
      // The lease ends with the machine; releasing it afterwards is only for a destroy that failed.
      try {
        await destroyMachine(http, id, signal, nonce);
      } catch (error) {
        await releaseLease(http, id, nonce, AbortSignal.timeout(CLEANUP_TIMEOUT_MS)).catch(() => undefined);
        throw error;
      }
    },

    async getInfo(id, signal) {
      try {
        return infoOf(await getOrNotFound(id, signal));
      } catch (error) {
        if (SandboxError.isInstance(error) && error.code === "NotFound") {
          return { id, state: "destroyed", metadata: {} };
        }
        throw error;
      }
    },

    list(filter, signal) {
      return {
        async *[Symbol.asyncIterator]() {
          const metadata = { ...(filter.metadata ?? {}), [FLY_MANAGED_METADATA_KEY]: "true" };
          for (const machine of await listMachines(http, { metadata }, signal)) {
            // Fly filters too; checking again keeps the app's other machines out whatever it honours.
            const labels = machine.config?.metadata ?? {};
            if (Object.entries(metadata).some(([k, v]) => labels[k] !== v)) continue;
            yield infoOf(machine);
          }
        },
      };
    },

    async stop(id, signal) {
      const machine = await getOrNotFound(id, signal);
      if (machine.state === "stopped" || machine.state === "created") return;
      if (isGone(machine)) throw notFound(id, http.app());
      if (machine.state !== "stopping") {
        await leased(id, "stop", signal, (nonce) => machineAction(http, id, "stop", signal, nonce));
      }
      await waitForState(http, id, "stopped", {
        deadline: Date.now() + options.stopTimeoutMs,
        signal,
        version: machine.version ?? machine.instance_id,
        budgetMs: options.stopTimeoutMs,
      });
    },

    async pause(id, signal) {
      const machine = await getOrNotFound(id, signal);
      if (machine.state === "suspended") return;
      if (machine.state !== "started" && machine.state !== "suspending") {
        throw new SandboxError(
          "InvalidState",
          `only a running machine can be paused; machine ${id} is ${machine.state}`,
        );
      }
      if (machine.state === "started") {
        await leased(id, "pause", signal, (nonce) => machineAction(http, id, "suspend", signal, nonce));
      }
      await waitForState(http, id, "suspended", {
        deadline: Date.now() + options.stopTimeoutMs,
        signal,
        version: machine.version ?? machine.instance_id,
        budgetMs: options.stopTimeoutMs,
      });
    },

    async resume(id, signal) {
      const machine = await getOrNotFound(id, signal);
      if (isGone(machine)) throw notFound(id, http.app());
      const deadline = Date.now() + options.startTimeoutMs;
      if (machine.state !== "started" && machine.state !== "starting") {
        await leased(id, "resume", signal, (nonce) => machineAction(http, id, "start", signal, nonce));
      }
      await startedBy(id, deadline, signal, machine.version ?? machine.instance_id);
    },
  };
}
