import { SANDBOX_SPEC_FIELDS, SandboxError, type SandboxProvider, type SandboxSpec } from "@sbox/core/spec";
import { RESERVED_METADATA_PREFIX } from "./manager-labels.js";
import type {
  GitSource,
  ManagedCommand,
  ManagerSpec,
  SeedFile,
  SetupStep,
  StartCommand,
  StoredSpec,
} from "./manager-spec.js";

/** A git source ready to clone: credentials split off into an HTTP header that is never stored. */
export interface PreparedGit {
  url: string;
  ref: string | undefined;
  depth: number | undefined;
  dir: string;
  /** `Authorization: Basic ...`, or undefined for anonymous clones. */
  authorization: string | undefined;
}

/** A setup step with defaults applied. */
export interface PreparedStep {
  name: string;
  argv: readonly string[];
  cwd: string | undefined;
  env: Readonly<Record<string, string>> | undefined;
  timeoutMs: number;
}

/** The main process with defaults applied. */
export interface PreparedStart {
  argv: readonly string[];
  cwd: string | undefined;
  env: Readonly<Record<string, string>> | undefined;
}

/** Everything `create` needs, split into what goes to the provider, what is stored, and what is secret. */
export interface PreparedSpec {
  providerSpec: SandboxSpec;
  stored: StoredSpec;
  git: PreparedGit | undefined;
  files: readonly SeedFile[];
  setup: readonly PreparedStep[];
  start: PreparedStart | undefined;
  ports: readonly number[];
  ttlMs: number | undefined;
  /** Literal secrets to scrub from anything the manager writes (record errors, history). */
  secrets: readonly string[];
}

const DEFAULT_STEP_TIMEOUT_MS = 10 * 60_000;
const MANAGER_FIELDS = new Set(["git", "setup", "start", "files"]);
// Everything a sandbox spec describes, plus the manager's own steps; the create call's `idempotencyKey` and
// `signal` are the manager's to set.
const SPEC_FIELDS = new Set<string>([...SANDBOX_SPEC_FIELDS, ...MANAGER_FIELDS]);

function invalid(message: string): SandboxError {
  return new SandboxError("Validation", `spec: ${message}`, { retryable: false });
}

function checkString(value: unknown, name: string, options: { allowEmpty?: boolean } = {}): string {
  if (typeof value !== "string") throw invalid(`${name} must be a string`);
  if (!options.allowEmpty && value.length === 0) throw invalid(`${name} must not be empty`);
  if (value.includes("\0")) throw invalid(`${name} must not contain NUL`);
  return value;
}

function checkEnv(value: unknown, name: string): Readonly<Record<string, string>> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw invalid(`${name} must be an object`);
  for (const [key, v] of Object.entries(value)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key))
      throw invalid(`${name}: invalid variable name ${JSON.stringify(key)}`);
    checkString(v, `${name}.${key}`, { allowEmpty: true });
  }
  return value as Record<string, string>;
}

function argvOf(command: unknown, name: string): readonly string[] {
  if (typeof command === "string") {
    if (command.trim() === "") throw invalid(`${name} must not be empty`);
    checkString(command, name);
    return ["sh", "-c", command];
  }
  if (Array.isArray(command)) {
    if (command.length === 0) throw invalid(`${name} must not be an empty argv`);
    for (const [i, arg] of command.entries()) checkString(arg, `${name}[${i}]`, { allowEmpty: i > 0 });
    return command as readonly string[];
  }
  throw invalid(`${name} must be a string or an argv array`);
}

function describeCommand(command: ManagedCommand): string {
  const text = typeof command === "string" ? command : command.join(" ");
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function checkRelativeOrAbsolute(value: unknown, name: string): string {
  const path = checkString(value, name);
  return path;
}

/** Splits userinfo out of an http(s) URL; other URL kinds pass unchanged. */
function splitUserinfo(url: string): { url: string; username?: string; password?: string } {
  if (!/^https?:\/\//i.test(url)) return { url };
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid("git.url is not a valid URL");
  }
  if (!parsed.username && !parsed.password) return { url };
  const username = decodeURIComponent(parsed.username);
  const password = decodeURIComponent(parsed.password);
  parsed.username = "";
  parsed.password = "";
  return { url: parsed.toString(), username, password };
}

function prepareGit(git: GitSource): { prepared: PreparedGit; stored: StoredSpec["git"]; secrets: string[] } {
  if (typeof git !== "object" || git === null) throw invalid("git must be an object");
  for (const key of Object.keys(git)) {
    if (!["url", "ref", "depth", "dir", "credentials"].includes(key))
      throw invalid(`git: unknown field ${JSON.stringify(key)}`);
  }
  const raw = checkString(git.url, "git.url");
  if (raw.startsWith("-")) throw invalid("git.url must not start with '-'");
  if (/[\s]/.test(raw)) throw invalid("git.url must not contain whitespace");
  const split = splitUserinfo(raw);
  const ref = git.ref === undefined ? undefined : checkString(git.ref, "git.ref");
  if (ref !== undefined && (ref.startsWith("-") || /[\s~^:?*[\\]/.test(ref) || ref.includes(".."))) {
    throw invalid(`git.ref ${JSON.stringify(ref)} is not a valid ref`);
  }
  if (git.depth !== undefined && (!Number.isInteger(git.depth) || git.depth < 1)) {
    throw invalid("git.depth must be a positive integer");
  }
  const dir = git.dir === undefined ? "repo" : checkString(git.dir, "git.dir");
  const credentials = git.credentials;
  let username = split.username;
  let password = split.password;
  if (credentials !== undefined) {
    if (typeof credentials !== "object" || credentials === null)
      throw invalid("git.credentials must be an object");
    if (credentials.username !== undefined)
      username = checkString(credentials.username, "git.credentials.username");
    const secret = credentials.password ?? credentials.token;
    if (secret !== undefined) password = checkString(secret, "git.credentials.password");
    if (secret === undefined && credentials.username === undefined) {
      throw invalid("git.credentials needs a password or a token");
    }
  }
  const secrets: string[] = [];
  let authorization: string | undefined;
  if (password !== undefined || (username !== undefined && username !== "")) {
    if (!/^https?:\/\//i.test(split.url)) {
      throw invalid(
        "git.credentials are only used with http(s) URLs; use an ssh key in the sandbox for ssh remotes",
      );
    }
    const user = username && username.length > 0 ? username : "x-access-token";
    const basic = Buffer.from(`${user}:${password ?? ""}`).toString("base64");
    authorization = `Authorization: Basic ${basic}`;
    secrets.push(basic);
    if (password) secrets.push(password);
  }
  const stored: NonNullable<StoredSpec["git"]> = {
    url: split.url,
    dir,
    authenticated: authorization !== undefined,
  };
  if (ref !== undefined) stored.ref = ref;
  if (git.depth !== undefined) stored.depth = git.depth;
  return { prepared: { url: split.url, ref, depth: git.depth, dir, authorization }, stored, secrets };
}

function prepareStep(step: ManagedCommand | SetupStep, index: number): PreparedStep {
  if (typeof step === "string") {
    return {
      name: describeCommand(step),
      argv: argvOf(step, `setup[${index}]`),
      cwd: undefined,
      env: undefined,
      timeoutMs: DEFAULT_STEP_TIMEOUT_MS,
    };
  }
  if (typeof step !== "object" || step === null)
    throw invalid(`setup[${index}] must be a string or an object`);
  if (Array.isArray(step)) {
    return {
      name: describeCommand(step),
      argv: argvOf(step, `setup[${index}]`),
      cwd: undefined,
      env: undefined,
      timeoutMs: DEFAULT_STEP_TIMEOUT_MS,
    };
  }
  return prepareStepObject(step as SetupStep, index);
}

function prepareStepObject(step: SetupStep, index: number): PreparedStep {
  const argv = argvOf(step.run, `setup[${index}].run`);
  const timeoutMs = step.timeoutMs ?? DEFAULT_STEP_TIMEOUT_MS;
  if (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw invalid(`setup[${index}].timeoutMs must be a positive number`);
  }
  return {
    name:
      step.name === undefined ? describeCommand(step.run) : checkString(step.name, `setup[${index}].name`),
    argv,
    cwd: step.cwd === undefined ? undefined : checkRelativeOrAbsolute(step.cwd, `setup[${index}].cwd`),
    env: checkEnv(step.env, `setup[${index}].env`),
    timeoutMs,
  };
}

/** Validates the main process of a spec (also used again by `resume`). */
export function prepareStart(start: ManagedCommand | StartCommand): PreparedStart {
  if (typeof start === "string" || Array.isArray(start))
    return { argv: argvOf(start, "start"), cwd: undefined, env: undefined };
  if (typeof start !== "object" || start === null)
    throw invalid("start must be a string, an argv or an object");
  const command = start as StartCommand;
  return {
    argv: argvOf(command.run, "start.run"),
    cwd: command.cwd === undefined ? undefined : checkRelativeOrAbsolute(command.cwd, "start.cwd"),
    env: checkEnv(command.env, "start.env"),
  };
}

/** Validates seed files (also used by `writeFiles`). */
export function prepareFiles(files: unknown): SeedFile[] {
  if (files === undefined) return [];
  if (!Array.isArray(files)) throw invalid("files must be an array of { path, content, mode? }");
  return files.map((file, i) => {
    if (typeof file !== "object" || file === null) throw invalid(`files[${i}] must be an object`);
    const f = file as SeedFile;
    checkString(f.path, `files[${i}].path`);
    if (typeof f.content !== "string" && !(f.content instanceof Uint8Array)) {
      throw invalid(`files[${i}].content must be a string or a Uint8Array`);
    }
    if (f.mode !== undefined && (!Number.isInteger(f.mode) || f.mode < 0 || f.mode > 0o7777)) {
      throw invalid(`files[${i}].mode must be a permission number such as 0o644`);
    }
    return f;
  });
}

/**
 * Validates a manager spec against the provider it goes to, and splits it: the sandbox spec for the
 * provider (with `ttlMs` removed: the manager enforces expiry), the spec to store (without credentials or
 * file contents), and the steps to run.
 */
export function prepareSpec(spec: ManagerSpec, provider: SandboxProvider): PreparedSpec {
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) throw invalid("must be an object");
  for (const key of Object.keys(spec)) {
    if (!SPEC_FIELDS.has(key)) throw invalid(`unknown field ${JSON.stringify(key)}`);
  }
  for (const key of Object.keys(spec.metadata ?? {})) {
    if (key.startsWith(RESERVED_METADATA_PREFIX))
      throw invalid(`metadata key ${JSON.stringify(key)} is reserved for the manager`);
  }
  const ttlMs = spec.ttlMs;
  if (ttlMs !== undefined && (typeof ttlMs !== "number" || !Number.isFinite(ttlMs) || ttlMs <= 0)) {
    throw invalid("ttlMs must be a positive number of milliseconds");
  }
  checkEnv(spec.env, "env");
  const ports = spec.ports ?? [];
  if (!Array.isArray(ports)) throw invalid("ports must be an array of port numbers");
  for (const port of ports) {
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw invalid(`port ${String(port)} is not 1-65535`);
  }
  if (ports.length > 0 && provider.capabilities.exposePort === "unsupported") {
    throw invalid(`ports: provider ${provider.name} cannot expose ports`);
  }
  if (spec.setup !== undefined && !Array.isArray(spec.setup)) throw invalid("setup must be an array");
  const git = spec.git === undefined ? undefined : prepareGit(spec.git);
  const setup = (spec.setup ?? []).map(prepareStep);
  const start = spec.start === undefined ? undefined : prepareStart(spec.start);
  if (start && provider.capabilities.background === "unsupported") {
    throw invalid(`start: provider ${provider.name} cannot run background processes`);
  }
  const files = prepareFiles(spec.files);

  const providerSpec: SandboxSpec = {};
  const stored: StoredSpec = {};
  for (const [key, value] of Object.entries(spec)) {
    if (MANAGER_FIELDS.has(key) || key === "ttlMs" || value === undefined) continue;
    if (key === "ports" && !provider.honours.includes("ports")) {
      (stored as Record<string, unknown>)[key] = value;
      continue;
    }
    (providerSpec as Record<string, unknown>)[key] = value;
    (stored as Record<string, unknown>)[key] = value;
  }
  if (ttlMs !== undefined) stored.ttlMs = ttlMs;
  if (git) stored.git = git.stored;
  if (spec.setup !== undefined) stored.setup = spec.setup;
  if (spec.start !== undefined) stored.start = spec.start;
  if (files.length > 0) {
    stored.files = files.map((f) => ({
      path: f.path,
      size: typeof f.content === "string" ? Buffer.byteLength(f.content) : f.content.byteLength,
      ...(f.mode === undefined ? {} : { mode: f.mode }),
    }));
  }
  return {
    providerSpec,
    stored,
    git: git?.prepared,
    files,
    setup,
    start,
    ports,
    ttlMs,
    secrets: git?.secrets ?? [],
  };
}
