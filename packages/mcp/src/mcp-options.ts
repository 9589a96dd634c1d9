import type { SandboxClient, SandboxProvider, SandboxSpec } from "@sbox/core";
import type { SandboxManager } from "@sbox/manager";
import type { ApprovalHook, AuditHook, ToolPolicy } from "@sbox/tools";

/** Something that happened in a session, for logs (the CLI prints these on stderr). */
export type McpServerEvent =
  | { readonly type: "session-started"; readonly session: string }
  | {
      readonly type: "sandbox-created";
      readonly session: string;
      readonly sandboxId: string;
      readonly kept: boolean;
    }
  | { readonly type: "sandbox-destroyed"; readonly session: string; readonly sandboxId: string }
  | {
      readonly type: "sandbox-kept";
      readonly session: string;
      readonly sandboxId: string;
      readonly recordId: string;
    }
  | { readonly type: "session-ended"; readonly session: string; readonly reason: string }
  | { readonly type: "error"; readonly session: string; readonly code: string; readonly message: string };

/** Keep sandboxes when their session ends, recorded by a manager so they are never lost. */
export interface KeepOptions {
  /** The manager that creates and records the sandboxes (its store is the caller's to close). */
  readonly manager: SandboxManager;
  /** The manager's key of the provider to create with (default: the manager's default). */
  readonly provider?: string | undefined;
}

/** Options of `createSandboxMcpServer`. Give exactly one of `client` and `provider`. */
export interface SandboxMcpServerOptions {
  /** The client sandboxes are created with (the caller disposes it). */
  client?: SandboxClient | undefined;
  /** A provider; the server makes its own client and disposes it on `close()`. */
  provider?: SandboxProvider | undefined;
  /** The spec of every sandbox the server creates (e.g. `{ template: "python:3.12" }`). */
  spec?: SandboxSpec | undefined;
  /** The @sbox/tools policy every call is held to. */
  policy?: ToolPolicy | undefined;
  /** Decides calls a rule marks `ask` (without it they are denied). */
  approve?: ApprovalHook | undefined;
  /** Receives every tool call and its outcome. */
  audit?: AuditHook | undefined;
  /** Add tools to create, list, select and destroy more sandboxes in one session. */
  multi?: boolean | undefined;
  /** Keep each session's sandboxes when it ends, recorded by `keep.manager` (default: destroy them). */
  keep?: KeepOptions | undefined;
  /** Tool calls one session may run at once; more are refused with `QuotaExceeded` (default 4). */
  maxConcurrentCalls?: number | undefined;
  /** Name and version the server reports to clients. */
  name?: string | undefined;
  version?: string | undefined;
  /** Called with what happens in sessions. */
  onEvent?: ((event: McpServerEvent) => void) | undefined;
}
