import { SandboxError } from "@sbox/core/spec";
import { toE2BError } from "./e2b-errors.js";
import type { ResolvedE2BOptions } from "./e2b-options.js";
import { connectionOptions, loadE2B } from "./e2b-sdk.js";

/** What every call into a sandbox needs: the provider's resolved options. */
export interface CommandContext {
  readonly options: ResolvedE2BOptions;
}

/** How long the state probe after a failed daemon call may take. */
const PROBE_TIMEOUT_MS = 10_000;

type ProbedState = "gone" | "paused" | "running" | undefined;

async function probeState(options: ResolvedE2BOptions, id: string): Promise<ProbedState> {
  try {
    const { Sandbox } = await loadE2B();
    const info = await Sandbox.getInfo(id, connectionOptions(options, AbortSignal.timeout(PROBE_TIMEOUT_MS)));
    return info.state === "paused" ? "paused" : "running";
  } catch (error) {
    return (error as { name?: unknown }).name === "SandboxNotFoundError" ? "gone" : undefined;
  }
}

/**
 * Runs one call into a sandbox's daemon and maps what it throws. E2B's proxy answers for a sandbox that is
 * gone or paused the way it answers a timeout, so such a failure is checked against the control plane:
 * a sandbox E2B no longer knows gives `NotFound`, a paused one `InvalidState`.
 */
export async function sandboxCall<T>(
  ctx: CommandContext,
  sandboxId: string,
  operation: string,
  signal: AbortSignal | undefined,
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (error) {
    // An aborted call reports its abort: defineProvider's mapping does that for what is thrown as is.
    if (signal?.aborted) throw error;
    const mapped = toE2BError(error, { operation, plane: "sandbox" });
    const name = (error as { name?: unknown }).name;
    const suspicious =
      mapped.code === "Timeout" ||
      (mapped.code === "Provider" && mapped.retryable) ||
      name === "SandboxNotFoundError";
    if (suspicious) {
      const state = await probeState(ctx.options, sandboxId);
      if (state === "gone") {
        throw new SandboxError("NotFound", `e2b ${operation}: sandbox ${sandboxId} no longer exists`, {
          cause: error,
        });
      }
      if (state === "paused") {
        throw new SandboxError(
          "InvalidState",
          `e2b ${operation}: sandbox ${sandboxId} is paused; resume() it first`,
          { cause: error },
        );
      }
    }
    throw mapped;
  }
}
