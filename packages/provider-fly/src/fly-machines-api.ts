import { abortErrorOf, SandboxError } from "@sbox/core/spec";
import type {
  FlyCreateMachineRequest,
  FlyExecRequest,
  FlyExecResponse,
  FlyMachine,
  FlyMachineStateName,
} from "./fly-api-types.js";
import { hasStatus } from "./fly-errors.js";
import type { FlyHttp } from "./fly-http.js";

/** The longest `timeout` the wait route accepts in one call, in seconds. */
export const FLY_WAIT_MAX_SECONDS = 60;

const machinePath = (id: string): string => `/${encodeURIComponent(id)}`;

/** `POST /v1/apps/{app}/machines`: creates (and by default boots) a machine. */
export function createMachine(
  http: FlyHttp,
  body: FlyCreateMachineRequest,
  signal: AbortSignal,
  retry: "idempotent" | "refused-only",
): Promise<FlyMachine> {
  return http.request<FlyMachine>({
    method: "POST",
    path: "",
    body,
    signal,
    operation: "create machine",
    retry,
  });
}

/** `GET /v1/apps/{app}/machines/{id}`. */
export function getMachine(http: FlyHttp, id: string, signal: AbortSignal): Promise<FlyMachine> {
  return http.request<FlyMachine>({
    method: "GET",
    path: machinePath(id),
    signal,
    operation: `get machine ${id}`,
    retry: "idempotent",
  });
}

/** `GET /v1/apps/{app}/machines?metadata.{key}={value}...`: the app's machines, filtered by Fly. */
export async function listMachines(
  http: FlyHttp,
  filter: { metadata?: Readonly<Record<string, string>> | undefined; region?: string | undefined },
  signal: AbortSignal,
): Promise<FlyMachine[]> {
  const query: [string, string][] = [];
  for (const [key, value] of Object.entries(filter.metadata ?? {})) query.push([`metadata.${key}`, value]);
  if (filter.region !== undefined) query.push(["region", filter.region]);
  const machines = await http.request<FlyMachine[] | null | undefined>({
    method: "GET",
    path: "",
    query,
    signal,
    operation: "list machines",
    retry: "idempotent",
  });
  if (machines !== undefined && machines !== null && !Array.isArray(machines)) {
    throw new SandboxError(
      "Provider",
      "list machines: the Fly Machines API answered something not a list",
      {},
    );
  }
  return machines ?? [];
}

/** The states the wait route can wait for. */
export type FlyWaitState = "started" | "stopped" | "suspended" | "destroyed";

/**
 * Waits until machine `id` is in `state`, through `GET .../wait?state=...&timeout=...` calls of at most
 * {@link FLY_WAIT_MAX_SECONDS} each, until `deadline` (epoch ms). Fly answers 408 when one call's timeout
 * passes; the loop then asks again. Past the deadline it rejects with `Timeout`, naming the last state
 * seen. `instanceId` is sent when known (Fly requires it to wait for `stopped`).
 */
export async function waitForState(
  http: FlyHttp,
  id: string,
  state: FlyWaitState,
  options: { deadline: number; signal: AbortSignal; instanceId?: string | undefined; budgetMs: number },
): Promise<void> {
  for (;;) {
    const remaining = options.deadline - Date.now();
    if (remaining <= 0) break;
    const seconds = Math.max(1, Math.min(FLY_WAIT_MAX_SECONDS, Math.ceil(remaining / 1000)));
    const query: [string, string][] = [
      ["state", state],
      ["timeout", String(seconds)],
    ];
    if (options.instanceId) query.push(["instance_id", options.instanceId]);
    try {
      // The call's deadline is its own `timeout` plus the request deadline: a server that ignores
      // `timeout` cannot hold it longer.
      await http.request<unknown>({
        method: "GET",
        path: `${machinePath(id)}/wait`,
        query,
        signal: options.signal,
        operation: `wait for machine ${id} to be ${state}`,
        retry: "idempotent",
        waitsMs: Math.min(remaining, seconds * 1000),
      });
      return;
    } catch (error) {
      if (options.signal.aborted)
        throw abortErrorOf(options.signal, `waiting for machine ${id} to be ${state}`);
      if (hasStatus(error, 408) || (SandboxError.isInstance(error) && error.code === "Timeout")) continue;
      throw error;
    }
  }
  let last: FlyMachineStateName | "unknown" = "unknown";
  try {
    last = (await getMachine(http, id, options.signal)).state;
  } catch {
    // The timeout is what matters; the last state only makes the message more useful.
  }
  throw new SandboxError(
    "Timeout",
    `machine ${id} did not become ${state} within ${options.budgetMs} ms (its state is ${last})`,
  );
}

/**
 * `POST /v1/apps/{app}/machines/{id}/exec`: runs argv to completion, returns buffered output. The call may
 * take the command's whole time limit (`body.timeout`); meanwhile the machine is checked every half
 * request deadline, so a Fly that stopped answering (`Timeout`) or a machine that is no longer started
 * (`InvalidState`) ends the wait within one deadline, instead of after the command's time limit.
 */
export async function execMachine(
  http: FlyHttp,
  id: string,
  body: FlyExecRequest,
  signal: AbortSignal,
): Promise<FlyExecResponse> {
  const liveness = new AbortController();
  const interval = Math.max(500, http.requestTimeoutMs / 2);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const check = async () => {
    try {
      const machine = await getMachine(http, id, liveness.signal);
      if (machine.state !== "started") {
        liveness.abort(
          new SandboxError("InvalidState", `exec on machine ${id}: the machine is ${machine.state}`),
        );
        return;
      }
    } catch (error) {
      if (liveness.signal.aborted) return;
      if (SandboxError.isInstance(error) && error.code === "Timeout") {
        const lost = `exec on machine ${id}: the Fly Machines API stopped answering while the command ran`;
        liveness.abort(new SandboxError("Timeout", lost, { retryable: false, cause: error }));
        return;
      }
      // Any other failure of the check says nothing about the exec: keep waiting for its answer.
    }
    if (!liveness.signal.aborted) timer = setTimeout(check, interval);
  };
  timer = setTimeout(check, interval);
  try {
    return await http.request<FlyExecResponse>({
      method: "POST",
      path: `${machinePath(id)}/exec`,
      body,
      signal: AbortSignal.any([signal, liveness.signal]),
      operation: `exec on machine ${id}`,
      retry: "refused-only",
      waitsMs: (body.timeout ?? 0) * 1000,
    });
  } finally {
    clearTimeout(timer);
    if (!liveness.signal.aborted) liveness.abort();
  }
}

/** `POST .../stop`, `.../suspend` or `.../start`. */
export function machineAction(
  http: FlyHttp,
  id: string,
  action: "stop" | "suspend" | "start",
  signal: AbortSignal,
): Promise<unknown> {
  return http.request<unknown>({
    method: "POST",
    path: `${machinePath(id)}/${action}`,
    signal,
    operation: `${action} machine ${id}`,
    retry: "refused-only",
  });
}

/** `DELETE /v1/apps/{app}/machines/{id}?force=true`; resolves when the machine is already gone (404). */
export async function destroyMachine(http: FlyHttp, id: string, signal: AbortSignal): Promise<void> {
  try {
    await http.request<unknown>({
      method: "DELETE",
      path: machinePath(id),
      query: [["force", "true"]],
      signal,
      operation: `destroy machine ${id}`,
      retry: "idempotent",
    });
  } catch (error) {
    if (hasStatus(error, 404)) return;
    throw error;
  }
}
