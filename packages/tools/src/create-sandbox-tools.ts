import type { CapabilityMap, Sandbox } from "@sbox/core";
import { SandboxError } from "@sbox/core";
import { z } from "zod";
import { CommandPolicy } from "./policy/command-rules.js";
import { parseToolPolicy } from "./policy/parse-policy.js";
import { PathPolicy } from "./policy/path-rules.js";
import type { ApprovalHook, AuditHook, ToolPolicy } from "./policy/policy-types.js";
import { SandboxPaths } from "./policy/sandbox-paths.js";
import { decideCall, executeCall, type ToolCallSetup } from "./tool-call.js";
import { TOOL_CATALOGUE, type ToolName, type ToolRisk } from "./tool-catalogue.js";
import type { JsonSchemaObject, SandboxTool, SandboxToolSet, ToolAnnotations } from "./tool-types.js";
import { editFileTool } from "./tools/edit-file-tool.js";
import { exposePortTool } from "./tools/expose-port-tool.js";
import {
  extendTimeoutTool,
  pauseSandboxTool,
  resumeSandboxTool,
  stopSandboxTool,
} from "./tools/lifecycle-tools.js";
import { listFilesTool } from "./tools/list-files-tool.js";
import { readFileTool } from "./tools/read-file-tool.js";
import { removeFileTool } from "./tools/remove-file-tool.js";
import { runCodeTool } from "./tools/run-code-tool.js";
import { runCommandTool } from "./tools/run-command-tool.js";
import { searchFilesTool } from "./tools/search-files-tool.js";
import { setEgressTool } from "./tools/set-egress-tool.js";
import { createSnapshotTool, listSnapshotsTool, restoreSnapshotTool } from "./tools/snapshot-tools.js";
import type { AnyToolDefinition, ResolvedLimits, ToolContext } from "./tools/tool-definition.js";
import { writeFileTool } from "./tools/write-file-tool.js";

/** Options of {@link createSandboxTools}. */
export interface SandboxToolsOptions<TPolicy extends ToolPolicy = ToolPolicy> {
  /** The policy (default: no command or path rules beyond the working directory; destructive tools off). */
  policy?: TPolicy | undefined;
  /** Decides about calls a rule marks `ask`; without it they are denied. */
  approve?: ApprovalHook | undefined;
  /** Receives every call and its outcome. */
  audit?: AuditHook | undefined;
}

const DEFINITIONS: readonly AnyToolDefinition[] = [
  runCommandTool,
  runCodeTool,
  readFileTool,
  writeFileTool,
  editFileTool,
  listFilesTool,
  searchFilesTool,
  removeFileTool,
  exposePortTool,
  createSnapshotTool,
  listSnapshotsTool,
  restoreSnapshotTool,
  extendTimeoutTool,
  pauseSandboxTool,
  resumeSandboxTool,
  stopSandboxTool,
  setEgressTool,
];

const TOOL_SET = Symbol.for("sbox.tools.set");

// One resolver per sandbox and root, shared by every tool set made for it: the working directory and the
// root's real path are asked once. Keeping the first real path of the root also means code in the sandbox
// cannot move the root later by swapping a symlink.
const RESOLVERS = new WeakMap<Sandbox, Map<string, SandboxPaths>>();

function sandboxPathsFor(sandbox: Sandbox, root: string | undefined): SandboxPaths {
  let byRoot = RESOLVERS.get(sandbox);
  if (!byRoot) {
    byRoot = new Map();
    RESOLVERS.set(sandbox, byRoot);
  }
  const key = root ?? "";
  let paths = byRoot.get(key);
  if (!paths) {
    paths = new SandboxPaths(sandbox, root);
    byRoot.set(key, paths);
  }
  return paths;
}

/** Limits after defaults. */
export function resolveLimits(policy: ToolPolicy): ResolvedLimits {
  const limits = policy.limits ?? {};
  const timeoutMs = limits.timeoutMs ?? 60_000;
  return {
    maxOutputBytes: limits.maxOutputBytes ?? 32_768,
    maxOutputLines: limits.maxOutputLines ?? 400,
    timeoutMs,
    maxTimeoutMs: Math.max(timeoutMs, limits.maxTimeoutMs ?? 600_000),
  };
}

function annotationsOf(name: ToolName): ToolAnnotations {
  const entry = TOOL_CATALOGUE[name];
  return {
    title: entry.title,
    readOnlyHint: entry.risk === "read",
    destructiveHint: entry.risk === "destructive",
    idempotentHint: entry.idempotent,
    openWorldHint: name === "expose_port" || name === "set_egress",
  };
}

function enabled(name: ToolName, policy: ToolPolicy): boolean {
  const rule = policy.tools?.[name];
  if (rule === "deny") return false;
  if (TOOL_CATALOGUE[name].risk !== "destructive") return true;
  return policy.destructive === true || rule === "allow" || rule === "ask";
}

function available(name: ToolName, sandbox: Sandbox): boolean {
  const requires = TOOL_CATALOGUE[name].requires;
  return requires === undefined || sandbox.can(requires);
}

function toJsonSchema(schema: z.ZodType): JsonSchemaObject {
  const json = z.toJSONSchema(schema, { target: "draft-7", io: "input", unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
  delete json.$schema;
  return { ...json, type: "object" } as JsonSchemaObject;
}

/** What a tool is, without a sandbox to run it on (for listing tools before a sandbox exists). */
export interface SandboxToolInfo {
  readonly name: ToolName;
  readonly description: string;
  readonly risk: ToolRisk;
  readonly annotations: ToolAnnotations;
  readonly inputSchema: z.ZodType<unknown>;
  readonly jsonSchema: JsonSchemaObject;
}

/** The capability check the definitions use, over a plain capability map. */
function capabilityView(map: CapabilityMap): Sandbox {
  return {
    can: (capability: keyof CapabilityMap) => map[capability] !== "unsupported",
  } as unknown as Sandbox;
}

function infoOf(definition: AnyToolDefinition, sandbox: Sandbox, limits: ResolvedLimits): SandboxToolInfo {
  const name: ToolName = definition.name;
  const schema = definition.schema({ sandbox }) as z.ZodType<unknown>;
  return {
    name,
    description: definition.description({ sandbox, limits }),
    risk: TOOL_CATALOGUE[name].risk,
    annotations: annotationsOf(name),
    inputSchema: schema,
    jsonSchema: toJsonSchema(schema),
  };
}

/**
 * The tools a sandbox with these capabilities would get under `policy`, without a sandbox: what an MCP
 * server lists before its session's sandbox is created. Same names, descriptions and schemas as
 * {@link createSandboxTools}.
 */
export function describeSandboxTools(
  capabilities: { readonly map: CapabilityMap },
  options: { policy?: ToolPolicy | undefined } = {},
): SandboxToolInfo[] {
  const policy = parseToolPolicy(options.policy ?? {});
  const view = capabilityView(capabilities.map);
  const limits = resolveLimits(policy);
  return DEFINITIONS.filter(
    (definition) => available(definition.name, view) && enabled(definition.name, policy),
  ).map((definition) => infoOf(definition, view, limits));
}

/** True for what {@link createSandboxTools} returned. */
export function isSandboxToolSet(value: unknown): value is SandboxToolSet {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[TOOL_SET] === true;
}

const TOOL_CONTEXT = Symbol("sbox.tools.context");

/** The policy context of a tool set, for adapters that implement framework interfaces (shell, editor). */
export function toolContextOf(tools: SandboxToolSet): ToolContext {
  const context = (tools as unknown as Record<symbol, ToolContext | undefined>)[TOOL_CONTEXT];
  if (!context) throw new SandboxError("Validation", "not a tool set made by createSandboxTools");
  return context;
}

/** The sandbox a tool set works on. */
export function sandboxOfToolSet(tools: SandboxToolSet): Sandbox {
  return (tools as unknown as Record<symbol, Sandbox>)[Symbol.for("sbox.tools.sandbox")]!;
}

/**
 * The tools of one sandbox, framework-neutral: each with a name, a description written for a model, zod
 * and JSON-schema input, a risk level and MCP annotations, and an `execute` that applies the policy. Tools
 * appear only where the sandbox's capabilities allow them (and, for destructive ones, the policy enables
 * them), in the returned type as at runtime.
 */
export function createSandboxTools<
  TCaps extends CapabilityMap,
  const TPolicy extends ToolPolicy = Record<never, never>,
>(sandbox: Sandbox<TCaps>, options: SandboxToolsOptions<TPolicy> = {}): SandboxToolSet<TCaps, TPolicy> {
  if (typeof sandbox !== "object" || sandbox === null || typeof (sandbox as Sandbox).can !== "function") {
    throw new SandboxError(
      "Validation",
      "createSandboxTools needs a Sandbox from client.create() or client.connect()",
    );
  }
  const policy = parseToolPolicy(options.policy ?? {});
  const anySandbox = sandbox as unknown as Sandbox;
  const limits = resolveLimits(policy);
  const pathPolicy = new PathPolicy(policy.paths);
  const paths = sandboxPathsFor(anySandbox, pathPolicy.root);
  const context: ToolContext = {
    sandbox: anySandbox,
    paths,
    pathPolicy,
    commandPolicy: new CommandPolicy(policy.commands),
    limits,
    async checkPath(input, access, checkOptions = {}) {
      const root = await paths.root();
      // The root itself was resolved once; nothing more to ask the sandbox.
      if (input === undefined) return root;
      const lexical = await paths.lexical(input);
      // Lexical escapes are refused before anything runs in the sandbox.
      pathPolicy.check({ lexical, real: root.real }, root, access);
      const resolved = await paths.resolve(lexical, checkOptions.followLast ?? true);
      pathPolicy.check(resolved, root, access);
      return resolved;
    },
  };
  const set: Record<string, SandboxTool> = {};
  for (const definition of DEFINITIONS) {
    const name: ToolName = definition.name;
    if (!available(name, anySandbox) || !enabled(name, policy)) continue;
    const info = infoOf(definition, anySandbox, limits);
    const schema = info.inputSchema;
    const setup: ToolCallSetup = {
      definition,
      schema,
      context,
      toolRule: policy.tools?.[name],
      approve: options.approve,
      audit: options.audit,
      errors: policy.errors ?? "result",
    };
    set[name] = Object.freeze({
      ...info,
      decide: (input: unknown) => decideCall(setup, input),
      execute: (input: unknown, callOptions?: Parameters<SandboxTool["execute"]>[1]) =>
        executeCall(setup, input, callOptions),
    }) as unknown as SandboxTool;
  }
  Object.defineProperty(set, TOOL_SET, { value: true });
  Object.defineProperty(set, Symbol.for("sbox.tools.sandbox"), { value: sandbox });
  Object.defineProperty(set, TOOL_CONTEXT, { value: context });
  return Object.freeze(set) as unknown as SandboxToolSet<TCaps, TPolicy>;
}
