/**
 * The tools sbox offers an agent, with what each risks and which capability it needs. The one table that
 * the factory, the policy and the types read.
 */
import type { CapabilityName } from "@sbox/core";

/** How much a tool can change: nothing, the sandbox's state, or something that cannot be undone. */
export type ToolRisk = "read" | "write" | "destructive";

/** One catalogue entry. */
export interface ToolCatalogueEntry {
  /** The risk level. */
  readonly risk: ToolRisk;
  /** The capability the sandbox must have (native or emulated), when any. */
  readonly requires: CapabilityName | undefined;
  /** A human title (MCP `title`). */
  readonly title: string;
  /** Calling it twice with the same input has no further effect (MCP `idempotentHint`). */
  readonly idempotent: boolean;
}

/** Every tool, by name. */
export const TOOL_CATALOGUE = {
  run_command: { risk: "write", requires: undefined, title: "Run a command", idempotent: false },
  run_code: { risk: "write", requires: "codeInterpreter", title: "Run code", idempotent: false },
  read_file: { risk: "read", requires: undefined, title: "Read a file", idempotent: true },
  write_file: { risk: "write", requires: undefined, title: "Write a file", idempotent: true },
  edit_file: { risk: "write", requires: undefined, title: "Edit a file", idempotent: false },
  list_files: { risk: "read", requires: undefined, title: "List files", idempotent: true },
  search_files: { risk: "read", requires: undefined, title: "Search files", idempotent: true },
  remove_file: { risk: "destructive", requires: undefined, title: "Remove a file", idempotent: true },
  expose_port: { risk: "write", requires: "exposePort", title: "Expose a port", idempotent: true },
  create_snapshot: { risk: "write", requires: "snapshot", title: "Create a snapshot", idempotent: false },
  list_snapshots: { risk: "read", requires: "snapshot", title: "List snapshots", idempotent: true },
  restore_snapshot: {
    risk: "destructive",
    requires: "snapshot",
    title: "Restore a snapshot",
    idempotent: false,
  },
  extend_timeout: {
    risk: "write",
    requires: "setTimeout",
    title: "Extend the sandbox's time",
    idempotent: true,
  },
  pause_sandbox: { risk: "write", requires: "pause", title: "Pause the sandbox", idempotent: true },
  resume_sandbox: { risk: "write", requires: "pause", title: "Resume the sandbox", idempotent: true },
  stop_sandbox: { risk: "destructive", requires: "stop", title: "Stop the sandbox", idempotent: true },
  set_egress: {
    risk: "destructive",
    requires: "egressControl",
    title: "Set outbound network access",
    idempotent: true,
  },
} as const;

/** The name of one tool. */
export type ToolName = keyof typeof TOOL_CATALOGUE;

/** Every tool name, in catalogue order. */
export const TOOL_NAMES: readonly ToolName[] = Object.keys(TOOL_CATALOGUE) as ToolName[];

/** True when `value` names a tool. */
export function isToolName(value: unknown): value is ToolName {
  return typeof value === "string" && Object.hasOwn(TOOL_CATALOGUE, value);
}

// Every entry has the shape of a catalogue entry (checked here, without widening the literal types).
TOOL_CATALOGUE satisfies Record<string, ToolCatalogueEntry>;
