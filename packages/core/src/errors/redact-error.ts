import { scrubHostPaths } from "./host-paths.js";
import { redactSecrets } from "./redact.js";
import { SandboxError } from "./sandbox-error.js";

/** How deep the cause chain (and an error's own properties) are looked at. */
const MAX_DEPTH = 8;
/** How many values one scan of an error's properties reads at most. */
const MAX_SCANNED = 2_000;

/**
 * A cause that carried credential or host-path text, rebuilt without it. It keeps what debugging needs of
 * the native error (its `name`, `code`, `status`, `errno`, `syscall`, a scrubbed message and stack, and its
 * own cause, scrubbed the same way) and drops everything else (request objects, headers, bodies), which is
 * where an SDK keeps what it sent.
 */
export class RedactedCause extends Error {
  // Declared, not initialised: a field the native error did not have stays absent (inspect shows less).
  /** The native error's code (`"ECONNREFUSED"`, `"UND_ERR_SOCKET"`, ...), when it had one. */
  declare readonly code?: string | number | undefined;
  /** The native error's HTTP status, when it had one. */
  declare readonly status?: number | undefined;
  /** The native error's errno, when it had one. */
  declare readonly errno?: number | undefined;
  /** The native error's syscall, when it had one. */
  declare readonly syscall?: string | undefined;

  constructor(original: object, clean: (text: string) => string, cause: unknown) {
    const e = original as Record<string, unknown>;
    super(clean(typeof e.message === "string" ? e.message : String(original)));
    this.name = typeof e.name === "string" ? e.name : "Error";
    const self = this as { -readonly [K in "code" | "status" | "errno" | "syscall"]?: RedactedCause[K] };
    if (typeof e.code === "string" || typeof e.code === "number") self.code = e.code;
    const status = typeof e.status === "number" ? e.status : e.statusCode;
    if (typeof status === "number") self.status = status;
    if (typeof e.errno === "number") self.errno = e.errno;
    if (typeof e.syscall === "string") self.syscall = clean(e.syscall);
    this.stack = typeof e.stack === "string" ? clean(e.stack) : `${this.name}: ${this.message}`;
    if (cause !== undefined)
      Object.defineProperty(this, "cause", { value: cause, configurable: true, writable: true });
  }
}

/** The text cleaner for a set of secrets: literal secrets and credential patterns, then engine host paths. */
function cleanerFor(secrets: readonly (string | undefined)[]): Clean {
  return (text) => scrubHostPaths(redactSecrets(text, secrets));
}

/** Whether anything a logger would print of `value` changes under `clean` (bounded walk, cycle-safe). */
function isTainted(value: unknown, clean: Clean): boolean {
  const seen = new Set<unknown>();
  let budget = MAX_SCANNED;
  const walk = (v: unknown, depth: number): boolean => {
    if (budget-- <= 0) return true; // Too large to be sure: treat as tainted and rebuild.
    if (typeof v === "string") return clean(v) !== v;
    if (typeof v !== "object" || v === null || seen.has(v) || depth > MAX_DEPTH) return false;
    seen.add(v);
    const own = v instanceof Error ? ["message", "stack", ...Object.keys(v)] : Object.keys(v);
    for (const key of own) {
      if (key === "cause") continue; // Handled as the chain, below.
      let inner: unknown;
      try {
        inner = (v as Record<string, unknown>)[key];
      } catch {
        continue;
      }
      if (walk(inner, depth + 1)) return true;
    }
    return false;
  };
  return walk(value, 0);
}

/** The links of one chain: those being cleaned (to cut loops) and those done (with what replaced them). */
interface Walk {
  readonly onPath: Set<unknown>;
  readonly done: Map<unknown, unknown>;
}

type Clean = (text: string) => string;

/**
 * Cleans one link of a cause chain: a SandboxError in place (message, stack, its causes), a native error
 * replaced by a {@link RedactedCause} when anything about it would show a secret or a host path, a string
 * cleaned, anything else kept. A link back into the part of the chain being cleaned is cut: following it
 * would print the uncleaned original.
 */
function cleanCause(cause: unknown, clean: Clean, depth: number, walk: Walk): unknown {
  if (typeof cause === "string") return clean(cause);
  if (typeof cause !== "object" || cause === null) return cause;
  if (walk.done.has(cause)) return walk.done.get(cause);
  if (walk.onPath.has(cause)) return SandboxError.isInstance(cause) ? cause : undefined;
  walk.onPath.add(cause);
  const cleaned = cleanLink(cause, clean, depth, walk);
  walk.onPath.delete(cause);
  walk.done.set(cause, cleaned);
  return cleaned;
}

function cleanLink(cause: object, clean: Clean, depth: number, walk: Walk): unknown {
  if (SandboxError.isInstance(cause)) {
    cleanInPlace(cause, clean, depth, walk);
    return cause;
  }
  const e = cause as { cause?: unknown; errors?: unknown };
  const inner =
    depth < MAX_DEPTH && e.cause !== undefined ? cleanCause(e.cause, clean, depth + 1, walk) : e.cause;
  const errors = Array.isArray(e.errors)
    ? e.errors.map((item: unknown) => cleanCause(item, clean, depth + 1, walk))
    : undefined;
  const innerChanged = inner !== e.cause || errors?.some((x, i) => x !== (e.errors as unknown[])[i]) === true;
  if (!innerChanged && !isTainted(cause, clean)) return cause;
  const rebuilt = new RedactedCause(cause, clean, inner);
  if (errors !== undefined) Object.defineProperty(rebuilt, "errors", { value: errors, configurable: true });
  return rebuilt;
}

function cleanInPlace(error: SandboxError, clean: Clean, depth: number, walk: Walk): void {
  const message = clean(error.message);
  if (message !== error.message) error.message = message;
  if (typeof error.stack === "string") {
    const stack = clean(error.stack);
    if (stack !== error.stack) error.stack = stack;
  }
  const { cause } = error as { cause?: unknown };
  if (cause !== undefined && depth < MAX_DEPTH) {
    const cleaned = cleanCause(cause, clean, depth + 1, walk);
    if (cleaned !== cause)
      Object.defineProperty(error, "cause", { value: cleaned, configurable: true, writable: true });
  }
}

/**
 * The one redaction path for every error that leaves the SDK: removes `secrets` (and anything that looks
 * like a credential: bearer tokens, `key=value` pairs with secret-looking keys, passwords in URLs) and the
 * host paths of container engines' storage from the error's message and stack, and from its whole cause
 * chain (`cause`, an `AggregateError`'s `errors`). Native causes that would show such text in
 * `util.inspect` are rebuilt as {@link RedactedCause}s; clean ones are kept as they are. Returns `error`.
 */
export function redactError<E extends SandboxError>(
  error: E,
  secrets: readonly (string | undefined)[] = [],
): E {
  cleanInPlace(error, cleanerFor(secrets), 0, { onPath: new Set([error]), done: new Map() });
  return error;
}
