/**
 * The pipeline every tool call goes through, whatever the framework: validate the input, decide with the
 * policy (tool rule, then the tool's own command and path rules), ask for approval where a rule says so,
 * audit, run under a deadline, bound the output, and turn every failure into a result the model can read.
 */
import { SANDBOX_ERROR_CODES, SandboxError } from "@sbox/core";
import type { z } from "zod";
import { boundText } from "./output/bounded-output.js";
import type { PolicyAction } from "./policy/command-rules.js";
import { PathDenied } from "./policy/path-rules.js";
import type { ApprovalHook, AuditHook, PolicyDecision, ToolAuditEvent } from "./policy/policy-types.js";
import { TOOL_CATALOGUE, type ToolName } from "./tool-catalogue.js";
import type { ToolCallOptions, ToolResult } from "./tool-types.js";
import type { AnyToolDefinition, ToolContext, ToolOutput } from "./tools/tool-definition.js";

/** The code of a result the policy refused. */
export const POLICY_DENIED = "PolicyDenied";

const RANK: Record<PolicyAction, number> = { allow: 0, ask: 1, deny: 2 };

/** The stricter of two decisions (deny beats ask beats allow). */
export function stricter(a: PolicyDecision, b: PolicyDecision): PolicyDecision {
  return RANK[b.action] > RANK[a.action] ? b : a;
}

/** Everything one tool's calls need. */
export interface ToolCallSetup {
  readonly definition: AnyToolDefinition;
  readonly schema: z.ZodType<unknown>;
  readonly context: ToolContext;
  readonly toolRule: PolicyAction | undefined;
  readonly approve: ApprovalHook | undefined;
  readonly audit: AuditHook | undefined;
  readonly errors: "result" | "throw";
}

function redactInput(input: unknown): unknown {
  if (typeof input !== "object" || input === null || !("env" in input)) return input;
  const env = (input as { env?: unknown }).env;
  if (typeof env !== "object" || env === null) return input;
  return { ...input, env: Object.fromEntries(Object.keys(env).map((key) => [key, "[redacted]"])) };
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "input"}: ${issue.message}`)
    .join("; ");
}

/** Runs the tool's own check; anything that goes wrong while checking denies (fail closed). */
async function check(
  setup: ToolCallSetup,
  input: unknown,
): Promise<{ decision: PolicyDecision; plan: unknown }> {
  const ruleDecision: PolicyDecision =
    setup.toolRule === undefined
      ? { action: "allow", reason: "allowed" }
      : {
          action: setup.toolRule,
          reason: `the policy says "${setup.toolRule}" for ${setup.definition.name}`,
        };
  if (ruleDecision.action === "deny") return { decision: ruleDecision, plan: undefined };
  if (!setup.definition.check) return { decision: ruleDecision, plan: undefined };
  try {
    const own = await setup.definition.check(input as never, setup.context);
    return { decision: stricter(ruleDecision, own.decision), plan: own.plan };
  } catch (error) {
    if (error instanceof PathDenied)
      return { decision: { action: "deny", reason: error.message }, plan: undefined };
    const message = SandboxError.isInstance(error) ? error.message : "the policy check failed";
    return {
      decision: { action: "deny", reason: `the call could not be checked, so it is refused: ${message}` },
      plan: undefined,
    };
  }
}

/** Decides about an input without running it (for frameworks' approval flows). */
export async function decideCall(setup: ToolCallSetup, rawInput: unknown): Promise<PolicyDecision> {
  const parsed = setup.schema.safeParse(rawInput ?? {});
  if (!parsed.success) return { action: "allow", reason: "invalid input is reported by the call" };
  return (await check(setup, parsed.data)).decision;
}

function resultOf(
  name: ToolName,
  ok: boolean,
  text: string,
  extra: {
    data?: unknown;
    error?: { readonly code: string; readonly message: string } | undefined;
    truncated?: boolean | undefined;
  },
): ToolResult {
  return { ok, tool: name, text, data: extra.data, error: extra.error, truncated: extra.truncated ?? false };
}

async function emit(audit: AuditHook | undefined, event: ToolAuditEvent): Promise<void> {
  if (audit) await audit(event);
}

/** Runs `fn` until it settles, the deadline passes or `signal` aborts; the first to happen wins. */
async function withDeadline<T>(
  fn: (signal: AbortSignal) => Promise<T>,
  deadlineMs: number,
  outer: AbortSignal | undefined,
): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const onAbort = () => controller.abort(outer?.reason);
  outer?.addEventListener("abort", onAbort, { once: true });
  try {
    return await Promise.race([
      fn(controller.signal),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          controller.abort();
          reject(new SandboxError("Timeout", `the call did not finish within ${deadlineMs} ms`));
        }, deadlineMs);
        timer.unref?.();
      }),
      new Promise<never>((_, reject) => {
        if (outer?.aborted) reject(new SandboxError("Aborted", "the call was aborted"));
        outer?.addEventListener("abort", () => reject(new SandboxError("Aborted", "the call was aborted")), {
          once: true,
        });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", onAbort);
  }
}

/** Executes one call through the whole pipeline. */
export async function executeCall(
  setup: ToolCallSetup,
  rawInput: unknown,
  options: ToolCallOptions = {},
): Promise<ToolResult> {
  const name: ToolName = setup.definition.name;
  const started = Date.now();
  const { sandbox, limits } = setup.context;
  const base = { sandboxId: sandbox.id, tool: name, callId: options.callId, input: redactInput(rawInput) };
  const finish = async (result: ToolResult, decision: ToolAuditEvent["decision"]): Promise<ToolResult> => {
    try {
      await emit(setup.audit, {
        ...base,
        phase: "result",
        decision,
        outcome: { ok: result.ok, code: result.error?.code, truncated: result.truncated },
        durationMs: Date.now() - started,
        at: new Date(),
      });
    } catch {
      // The call already happened; a failing result audit cannot undo it.
    }
    if (!result.ok && setup.errors === "throw") {
      const code =
        result.error?.code === POLICY_DENIED ? "Unauthorized" : (result.error?.code as SandboxError["code"]);
      throw new SandboxError(
        SANDBOX_CODES.has(code) ? code : "Provider",
        `${name}: ${result.error?.message ?? result.text}`,
      );
    }
    return result;
  };

  const parsed = setup.schema.safeParse(rawInput ?? {});
  if (!parsed.success) {
    const message = `invalid input for ${name}: ${describeIssues(parsed.error)}`;
    const result = resultOf(name, false, `Error (Validation): ${message}`, {
      error: { code: "Validation", message },
    });
    try {
      await emit(setup.audit, { ...base, phase: "call", decision: undefined, at: new Date() });
    } catch {
      // Nothing runs for invalid input, so there is nothing to refuse.
    }
    return finish(result, undefined);
  }
  const input = parsed.data;
  let { decision, plan } = await check(setup, input);
  let approved: boolean | undefined;
  if (decision.action === "ask") {
    if (options.approved === true) approved = true;
    else if (setup.approve) {
      try {
        approved =
          (await setup.approve({
            tool: name,
            input,
            risk: TOOL_CATALOGUE[name].risk,
            reason: decision.reason,
            callId: options.callId,
          })) === true;
      } catch {
        approved = false;
      }
    } else approved = false;
    if (!approved) {
      decision = {
        action: "deny",
        reason:
          setup.approve || options.approved === false
            ? `not approved: ${decision.reason}`
            : `${decision.reason}, and no approval hook is set`,
      };
    }
  }
  const audited = { ...decision, approved };
  try {
    await emit(setup.audit, { ...base, phase: "call", decision: audited, at: new Date() });
  } catch {
    decision = { action: "deny", reason: "the call could not be audited, so it is refused" };
  }
  if (decision.action === "deny") {
    const message = `denied by policy: ${decision.reason}`;
    return finish(
      resultOf(name, false, `Error (${POLICY_DENIED}): ${message}`, {
        error: { code: POLICY_DENIED, message },
      }),
      {
        ...decision,
        approved,
      },
    );
  }
  // Commands carry their own timeout (they are killed on time); the deadline is a backstop for the rest.
  const deadline = name === "run_command" ? limits.maxTimeoutMs + 30_000 : limits.timeoutMs;
  try {
    const output: ToolOutput = await withDeadline(
      (signal) => setup.definition.run(input as never, setup.context, plan, signal),
      deadline,
      options.signal,
    );
    const bounded = boundText(output.text, {
      maxBytes: limits.maxOutputBytes,
      maxLines: limits.maxOutputLines + 8,
    });
    const truncated = (output.truncated ?? false) || bounded.truncated;
    const ok = output.error === undefined;
    const text = ok ? bounded.text : `Error (${output.error.code}): ${bounded.text}`;
    return finish(resultOf(name, ok, text, { data: output.data, error: output.error, truncated }), audited);
  } catch (error) {
    const code = SandboxError.isInstance(error) ? error.code : "Provider";
    // Only SandboxError messages are shown: they are written for users and never carry credentials.
    const message = SandboxError.isInstance(error) ? error.message : `${name} failed`;
    return finish(
      resultOf(name, false, `Error (${code}): ${message}`, { error: { code, message } }),
      audited,
    );
  }
}

const SANDBOX_CODES: ReadonlySet<string> = new Set<string>(SANDBOX_ERROR_CODES);
