import { SandboxError } from "@sbox/core/spec";
import { toE2BError } from "./e2b-errors.js";
import type { ResolvedE2BOptions } from "./e2b-options.js";
import { boundedBy, boundedCall, connectionOptions, deadlineSignal, loadE2B } from "./e2b-sdk.js";

/** What every call into a sandbox needs: the provider's resolved options. */
export interface CommandContext {
  readonly options: ResolvedE2BOptions;
}

/** How long the state probe after a failed daemon call may take. */
const PROBE_TIMEOUT_MS = 10_000;

type ProbedState = "gone" | "paused" | "running" | undefined;

async function probeState(options: ResolvedE2BOptions, id: string): Promise<ProbedState> {
  try {
    const { Sandbox } = await loadE2B(options);
    // Half a request deadline at most: the call that failed already took one.
    const budget = Math.min(PROBE_TIMEOUT_MS, Math.max(1_000, (options.requestTimeoutMs ?? 60_000) / 2));
    // Held by a timer of its own too: the SDK's signal alone can be lost (see `boundedCall`), and a probe
    // that never ends would hold the failed call for ever (the kit's deadline case saw a command pending).
    const info = await boundedBy(
      budget + 1_000,
      "state probe",
      Sandbox.getInfo(id, connectionOptions(options, deadlineSignal(budget))),
    );
    return info.state === "paused" ? "paused" : "running";
  } catch (error) {
    return (error as { name?: unknown }).name === "SandboxNotFoundError" ? "gone" : undefined;
  }
}

/**
 * Why a sandbox's daemon does not answer, as the control plane sees it: `NotFound` when E2B no longer
 * knows the sandbox, `InvalidState` when it is paused, undefined when neither can be told.
 */
export async function unreachableSandboxError(
  ctx: CommandContext,
  sandboxId: string,
  operation: string,
  cause: unknown,
): Promise<SandboxError | undefined> {
  const state = await probeState(ctx.options, sandboxId);
  if (state === "gone") {
    return new SandboxError("NotFound", `e2b ${operation}: sandbox ${sandboxId} no longer exists`, { cause });
  }
  if (state === "paused") {
    return new SandboxError(
      "InvalidState",
      `e2b ${operation}: sandbox ${sandboxId} is paused; resume() it first`,
      {
        cause,
      },
    );
  }
  return undefined;
}

/** How {@link sandboxCall} holds a call. */
export interface SandboxCallOptions {
  /**
   * The call may rightly take longer than one request deadline (a streamed upload, whose idle time the
   * SDK bounds itself): no timer of the provider's own ends it.
   */
  readonly unbounded?: boolean;
}

/**
 * Runs one call into a sandbox's daemon and maps what it throws. The call answers within the request
 * deadline (plus a short grace) or fails with `Timeout`, by a timer of the provider's own (`boundedCall`).
 * E2B's proxy answers for a sandbox that is gone or paused the way it answers a timeout, so such a failure
 * is checked against the control plane: a sandbox E2B no longer knows gives `NotFound`, a paused one
 * `InvalidState`.
 */
export async function sandboxCall<T>(
  ctx: CommandContext,
  sandboxId: string,
  operation: string,
  signal: AbortSignal | undefined,
  call: () => Promise<T>,
  options: SandboxCallOptions = {},
): Promise<T> {
  try {
    return await (options.unbounded ? call() : boundedCall(ctx.options, operation, call(), signal));
  } catch (error) {
    // An aborted call reports its abort: defineProvider's mapping does that for what is thrown as is.
    if (signal?.aborted) throw error;
    const mapped = toE2BError(error, { operation, plane: "sandbox" });
    const name = (error as { name?: unknown }).name;
    const suspicious =
      mapped.code === "Timeout" ||
      (mapped.code === "Provider" && mapped.retryable) ||
      name === "SandboxNotFoundError";
    throw (
      (suspicious ? await unreachableSandboxError(ctx, sandboxId, operation, error) : undefined) ?? mapped
    );
  }
}
