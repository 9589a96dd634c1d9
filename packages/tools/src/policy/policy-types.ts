import type { ToolName, ToolRisk } from "../tool-catalogue.js";
import type { CommandRules, PolicyAction } from "./command-rules.js";
import type { PathRules } from "./path-rules.js";

/** Output and time limits of tool calls. */
export interface ToolLimits {
  /** Bytes of output a result may carry, head and tail together (default 32 768). */
  maxOutputBytes?: number | undefined;
  /** Lines of output a result may carry, head and tail together (default 400). */
  maxOutputLines?: number | undefined;
  /** Time a call may take when the model asks for none, in ms (default 60 000). */
  timeoutMs?: number | undefined;
  /** Largest time the model may ask a command for, in ms (default 600 000). */
  maxTimeoutMs?: number | undefined;
}

/**
 * A policy for the tools of one sandbox. It fails closed: destructive tools are off unless enabled, a rule
 * that says `ask` without an approval hook denies, anything the policy cannot check is asked, and every
 * path must resolve inside the root. Plain data, so it can be kept in a JSON file.
 */
export interface ToolPolicy {
  /** Turn on every destructive tool (`remove_file`, `restore_snapshot`, `stop_sandbox`, `set_egress`). */
  destructive?: boolean | undefined;
  /**
   * Per-tool decisions. `deny` removes the tool from the set; `allow` or `ask` on a destructive tool turns
   * it on (with approval for `ask`).
   */
  tools?: { readonly [K in ToolName]?: PolicyAction | undefined } | undefined;
  /** Argv-aware command rules for `run_command`. */
  commands?: CommandRules | undefined;
  /** Path rules for every tool that takes a path (and the `cwd` of commands). */
  paths?: PathRules | undefined;
  /** Output and time limits. */
  limits?: ToolLimits | undefined;
  /** `result` (default): a failed call is a result the model reads. `throw`: it rejects into the loop. */
  errors?: "result" | "throw" | undefined;
}

/** What an approval hook is asked. */
export interface ApprovalRequest {
  /** The tool called. */
  readonly tool: ToolName;
  /** Its input, as validated. */
  readonly input: unknown;
  /** The tool's risk. */
  readonly risk: ToolRisk;
  /** Why approval is needed. */
  readonly reason: string;
  /** The framework's id of the call, when it gave one. */
  readonly callId: string | undefined;
}

/** Decides about a call a rule marked `ask`; anything but `true` denies. */
export type ApprovalHook = (request: ApprovalRequest) => boolean | Promise<boolean>;

/** How a call was decided. */
export interface PolicyDecision {
  readonly action: PolicyAction;
  readonly reason: string;
}

/** One audit record: `call` before a tool runs, `result` after, for every call including denied ones. */
export interface ToolAuditEvent {
  readonly phase: "call" | "result";
  /** The sandbox the tool set works on. */
  readonly sandboxId: string;
  readonly tool: string;
  readonly callId: string | undefined;
  /** The input as the model sent it; values of `env` are replaced by `"[redacted]"`. */
  readonly input: unknown;
  /** The decision (absent when the input did not validate). */
  readonly decision: (PolicyDecision & { readonly approved?: boolean | undefined }) | undefined;
  /** On `result`: whether the call succeeded, and the error code when not. */
  readonly outcome?:
    | { readonly ok: boolean; readonly code?: string | undefined; readonly truncated: boolean }
    | undefined;
  readonly durationMs?: number | undefined;
  readonly at: Date;
}

/**
 * Receives every audit event. When the `call` event throws, the call is refused (an action that cannot be
 * audited does not run); an error from the `result` event is ignored.
 */
export type AuditHook = (event: ToolAuditEvent) => void | Promise<void>;
