import { abortErrorOf, SandboxError } from "@sbox/core/spec";
import type {
  FlyCreateMachineRequest,
  FlyExecRequest,
  FlyExecResponse,
  FlyLease,
  FlyMachine,
  FlyMachineStateName,
  FlyWaitResponse,
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

/** The states the wait route can wait for (in every published version of the Machines API spec). */
export type FlyWaitState = "started" | "stopped" | "suspended" | "destroyed";

/**
 * How long one wait call of a boot lasts, in seconds, before the machine is looked at for `failed`: the
 * published spec's wait route cannot wait for `failed`, so a boot that cannot succeed is found by a
 * `GET` between short waits instead of running out the whole start timeout.
 */
export const FLY_FAILED_CHECK_SECONDS = 5;

/**
 * Waits until machine `id` is in `state`, through `GET .../wait?state=...&timeout=...` calls of at most
 * {@link FLY_WAIT_MAX_SECONDS} each, until `deadline` (epoch ms). Fly answers 408 when one call's timeout
 * passes; the loop then asks again. With `orFailed` (a boot) the calls last
 * {@link FLY_FAILED_CHECK_SECONDS} and the machine is read after each: a `failed` machine resolves with
 * `"failed"` at once. Past the deadline it rejects with `Timeout`, naming the last state seen. The machine's
 * `version` is sent when known (the API's `instance_id` is its deprecated name). Resolves with the state
 * reached.
 */
export async function waitForState(
  http: FlyHttp,
  id: string,
  state: FlyWaitState,
  options: {
    deadline: number;
    signal: AbortSignal;
    version?: string | undefined;
    budgetMs: number;
    orFailed?: boolean | undefined;
  },
): Promise<FlyMachineStateName> {
  for (;;) {
    const remaining = options.deadline - Date.now();
    if (remaining <= 0) break;
    const longest = options.orFailed ? FLY_FAILED_CHECK_SECONDS : FLY_WAIT_MAX_SECONDS;
    const seconds = Math.max(1, Math.min(longest, Math.ceil(remaining / 1000)));
    const query: [string, string][] = [
      ["state", state],
      ["timeout", String(seconds)],
    ];
    if (options.version) query.push(["version", options.version]);
    try {
      // The call's deadline is its own `timeout` plus the request deadline: a server that ignores
      // `timeout` cannot hold it longer.
      const answer = await http.request<FlyWaitResponse | undefined>({
        method: "GET",
        path: `${machinePath(id)}/wait`,
        query,
        signal: options.signal,
        operation: `wait for machine ${id} to be ${state}`,
        retry: "idempotent",
        waitsMs: Math.min(remaining, seconds * 1000),
      });
      return answer?.state ?? state;
    } catch (error) {
      if (options.signal.aborted)
        throw abortErrorOf(options.signal, `waiting for machine ${id} to be ${state}`);
      if (!(hasStatus(error, 408) || (SandboxError.isInstance(error) && error.code === "Timeout")))
        throw error;
      if (options.orFailed) {
        const now = await getMachine(http, id, options.signal).catch(() => undefined);
        if (now?.state === "failed") return "failed";
      }
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

/** The header a lease's nonce travels in. */
export const LEASE_NONCE_HEADER = "fly-machine-lease-nonce";

function nonceHeaders(nonce: string | undefined): Record<string, string> | undefined {
  return nonce ? { [LEASE_NONCE_HEADER]: nonce } : undefined;
}

/** `POST .../stop`, `.../suspend` or `.../start`, under the lease `nonce` when one is held. */
export function machineAction(
  http: FlyHttp,
  id: string,
  action: "stop" | "suspend" | "start",
  signal: AbortSignal,
  nonce?: string | undefined,
): Promise<unknown> {
  return http.request<unknown>({
    method: "POST",
    path: `${machinePath(id)}/${action}`,
    headers: nonceHeaders(nonce),
    signal,
    operation: `${action} machine ${id}`,
    retry: "refused-only",
  });
}

/** `POST .../lease`: takes the machine's lease for `ttlSeconds`; its nonce. */
export async function acquireLease(
  http: FlyHttp,
  id: string,
  ttlSeconds: number,
  description: string,
  signal: AbortSignal,
): Promise<string> {
  const lease = await http.request<FlyLease | undefined>({
    method: "POST",
    path: `${machinePath(id)}/lease`,
    body: { ttl: ttlSeconds, description },
    signal,
    operation: `lease machine ${id}`,
    retry: "refused-only",
  });
  const nonce = lease?.nonce ?? lease?.data?.nonce;
  if (typeof nonce !== "string" || nonce === "") {
    throw new SandboxError(
      "Provider",
      `lease machine ${id}: the Fly Machines API answered a lease without a nonce`,
      {},
    );
  }
  return nonce;
}

/** `DELETE .../lease` with the nonce; a lease that already ended is no error. */
export async function releaseLease(
  http: FlyHttp,
  id: string,
  nonce: string,
  signal: AbortSignal,
): Promise<void> {
  try {
    await http.request<unknown>({
      method: "DELETE",
      path: `${machinePath(id)}/lease`,
      headers: nonceHeaders(nonce),
      signal,
      operation: `release the lease of machine ${id}`,
      retry: "idempotent",
    });
  } catch (error) {
    if (hasStatus(error, 404) || hasStatus(error, 409)) return;
    throw error;
  }
}

/** `DELETE /v1/apps/{app}/machines/{id}?force=true`; resolves when the machine is already gone (404). */
export async function destroyMachine(
  http: FlyHttp,
  id: string,
  signal: AbortSignal,
  nonce?: string | undefined,
): Promise<void> {
  try {
    await http.request<unknown>({
      method: "DELETE",
      path: machinePath(id),
      query: [["force", "true"]],
      headers: nonceHeaders(nonce),
      signal,
      operation: `destroy machine ${id}`,
      retry: "idempotent",
    });
  } catch (error) {
    if (hasStatus(error, 404)) return;
    throw error;
  }
}
