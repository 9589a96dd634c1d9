/**
 * One MCP session: its sandboxes (created lazily on the first call, destroyed or kept when the session
 * ends), their tool sets, and the calls in flight, which are aborted (their commands killed) at the end.
 */
import { randomUUID } from "node:crypto";
import { type Sandbox, type SandboxClient, SandboxError } from "@sbox/core";
import { type ApprovalRequest, createSandboxTools, type SandboxTool, type SandboxToolSet } from "@sbox/tools";
import type { SandboxMcpServerOptions } from "./mcp-options.js";
import { failure, fromToolResult, type McpToolResult, success } from "./mcp-results.js";

interface SessionSandbox {
  readonly sandbox: Sandbox;
  readonly tools: SandboxToolSet;
  /** The manager's record id when the sandbox is kept. */
  readonly recordId: string | undefined;
}

/** Session tools of `--multi` servers. */
export const MULTI_TOOLS = ["create_sandbox", "list_sandboxes", "select_sandbox", "destroy_sandbox"] as const;

/** One session's state. */
export class McpSandboxSession {
  readonly id: string = randomUUID();
  readonly #client: SandboxClient;
  readonly #options: SandboxMcpServerOptions;
  readonly #sandboxes = new Map<string, SessionSandbox>();
  readonly #inflight = new Set<AbortController>();
  #current: string | undefined;
  #creating: Promise<SessionSandbox> | undefined;
  #ended: Promise<void> | undefined;
  /** Asks the session's user through the client (MCP elicitation), when the client can. */
  #elicit: ((request: ApprovalRequest) => Promise<boolean>) | undefined;

  constructor(client: SandboxClient, options: SandboxMcpServerOptions) {
    this.#client = client;
    this.#options = options;
  }

  /**
   * Lets `ask` rules ask the user through the client (MCP elicitation) when no `approve` hook is set.
   * Without either, `ask` denies.
   */
  useElicitation(elicit: (request: ApprovalRequest) => Promise<boolean>): void {
    this.#elicit = elicit;
  }

  /** Whether `end()` was called. */
  get ended(): boolean {
    return this.#ended !== undefined;
  }

  /** Ids of the session's sandboxes. */
  get sandboxIds(): string[] {
    return [...this.#sandboxes.keys()];
  }

  /** The current sandbox, created when there is none yet. */
  async current(): Promise<SessionSandbox> {
    if (this.#current !== undefined) return this.#sandboxes.get(this.#current)!;
    this.#creating ??= this.#create().finally(() => {
      this.#creating = undefined;
    });
    return this.#creating;
  }

  /** The current sandbox when one exists (nothing is created). */
  existing(): SessionSandbox | undefined {
    return this.#current === undefined ? undefined : this.#sandboxes.get(this.#current);
  }

  async #create(): Promise<SessionSandbox> {
    if (this.ended) throw new SandboxError("InvalidState", "the session has ended");
    const keep = this.#options.keep;
    let sandbox: Sandbox;
    let recordId: string | undefined;
    if (keep) {
      const record = await keep.manager.create({
        spec: this.#options.spec ?? {},
        ...(keep.provider === undefined ? {} : { provider: keep.provider }),
        labels: { "sbox.mcp-session": this.id },
      });
      if (!record.sandboxId)
        throw new SandboxError("Provider", `the manager's record ${record.id} has no sandbox`);
      recordId = record.id;
      sandbox = await this.#client.connect(record.sandboxId);
    } else {
      sandbox = await this.#client.create(this.#options.spec ?? {});
    }
    const entry: SessionSandbox = {
      sandbox,
      tools: createSandboxTools(sandbox, {
        policy: this.#options.policy,
        approve: this.#options.approve ?? (this.#elicit ? (request) => this.#elicit!(request) : undefined),
        audit: this.#options.audit,
      }) as SandboxToolSet,
      recordId,
    };
    this.#sandboxes.set(sandbox.id, entry);
    this.#current = sandbox.id;
    this.#options.onEvent?.({
      type: "sandbox-created",
      session: this.id,
      sandboxId: sandbox.id,
      kept: keep !== undefined,
    });
    // The session may have ended while the sandbox was being created: do not leave it behind.
    if (this.ended) {
      this.#sandboxes.delete(sandbox.id);
      this.#current = undefined;
      await this.#release(entry);
      throw new SandboxError("InvalidState", "the session has ended");
    }
    return entry;
  }

  /** Runs one tool call with the session's limits; never throws for tool failures. */
  async call(name: string, args: unknown, signal: AbortSignal, callId: string): Promise<McpToolResult> {
    const max = this.#options.maxConcurrentCalls ?? 4;
    if (this.#inflight.size >= max) {
      return failure(
        name,
        new SandboxError("QuotaExceeded", `at most ${max} tool calls may run at once in a session`),
      );
    }
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    this.#inflight.add(controller);
    try {
      if ((MULTI_TOOLS as readonly string[]).includes(name) && this.#options.multi) {
        return await this.#sessionTool(name, args);
      }
      const { tools } = await this.current();
      const tool = (tools as Record<string, SandboxTool | undefined>)[name];
      if (!tool) {
        return failure(name, new SandboxError("NotSupported", `${name} is not available for this sandbox`));
      }
      return fromToolResult(await tool.execute(args, { signal: controller.signal, callId }));
    } catch (error) {
      return failure(name, error);
    } finally {
      signal.removeEventListener("abort", onAbort);
      this.#inflight.delete(controller);
    }
  }

  async #sessionTool(name: string, args: unknown): Promise<McpToolResult> {
    const id =
      typeof (args as { id?: unknown } | undefined)?.id === "string"
        ? (args as { id: string }).id
        : undefined;
    switch (name) {
      case "create_sandbox": {
        this.#current = undefined;
        const { sandbox } = await this.current();
        return success(name, `Created sandbox ${sandbox.id}; it is now the current sandbox.`, {
          id: sandbox.id,
        });
      }
      case "list_sandboxes": {
        const ids = this.sandboxIds;
        const lines = ids.map(
          (sandboxId) => `${sandboxId}${sandboxId === this.#current ? " (current)" : ""}`,
        );
        return success(
          name,
          ids.length === 0 ? "No sandbox yet (one is created on the first call)." : lines.join("\n"),
          {
            sandboxes: ids,
            current: this.#current,
          },
        );
      }
      case "select_sandbox": {
        if (!id || !this.#sandboxes.has(id))
          throw new SandboxError("NotFound", `no sandbox ${id ?? "(none given)"} in this session`);
        this.#current = id;
        return success(name, `The current sandbox is now ${id}.`, { id });
      }
      case "destroy_sandbox": {
        const entry = id === undefined ? undefined : this.#sandboxes.get(id);
        if (!entry || !id)
          throw new SandboxError("NotFound", `no sandbox ${id ?? "(none given)"} in this session`);
        this.#sandboxes.delete(id);
        if (this.#current === id) this.#current = undefined;
        await entry.sandbox.destroy();
        this.#options.onEvent?.({ type: "sandbox-destroyed", session: this.id, sandboxId: id });
        return success(name, `Destroyed sandbox ${id}.`, { id });
      }
      default:
        throw new SandboxError("Validation", `unknown session tool ${name}`);
    }
  }

  async #release(entry: SessionSandbox): Promise<void> {
    const id = entry.sandbox.id;
    if (entry.recordId !== undefined) {
      this.#options.onEvent?.({
        type: "sandbox-kept",
        session: this.id,
        sandboxId: id,
        recordId: entry.recordId,
      });
      return;
    }
    try {
      await entry.sandbox.destroy();
      this.#options.onEvent?.({ type: "sandbox-destroyed", session: this.id, sandboxId: id });
    } catch (error) {
      const code = SandboxError.isInstance(error) ? error.code : "Provider";
      const message = SandboxError.isInstance(error) ? error.message : "destroy failed";
      this.#options.onEvent?.({
        type: "error",
        session: this.id,
        code,
        message: `destroying ${id}: ${message}`,
      });
    }
  }

  /** Ends the session: aborts calls in flight (killing their commands), destroys or keeps its sandboxes. */
  end(reason: string): Promise<void> {
    this.#ended ??= (async () => {
      for (const controller of this.#inflight)
        controller.abort(new SandboxError("Aborted", "the MCP session ended"));
      // A sandbox still being created is released by #create itself once it exists.
      await this.#creating?.catch(() => undefined);
      const entries = [...this.#sandboxes.values()];
      this.#sandboxes.clear();
      this.#current = undefined;
      await Promise.all(entries.map((entry) => this.#release(entry)));
      this.#options.onEvent?.({ type: "session-ended", session: this.id, reason });
    })();
    return this.#ended;
  }
}
