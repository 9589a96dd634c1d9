import { SandboxError } from "../errors/sandbox-error.js";

/**
 * How one provider option is checked: returns why a (defined) value is wrong, or undefined when it is
 * fine. `describe` says what the option takes, for messages (`"a positive number of milliseconds"`).
 */
export interface ProviderOptionRule {
  readonly describe: string;
  check(value: unknown): string | undefined;
  /** For an object option: the rules of its own keys (checked like the top level, names dotted). */
  readonly fields?: ProviderOptionRules | undefined;
}

/** The options a provider factory takes, by name. */
export type ProviderOptionRules = Readonly<Record<string, ProviderOptionRule>>;

function show(value: unknown): string {
  if (typeof value === "string")
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}...` : value);
  if (typeof value === "function") return "a function";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object" && value !== null) return "an object";
  return String(value);
}

function rule(describe: string, ok: (value: unknown) => boolean): ProviderOptionRule {
  return { describe, check: (value) => (ok(value) ? undefined : `must be ${describe}, got ${show(value)}`) };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Rules for the kinds of value provider options take. */
export const optionRules: {
  /** Any string (empty included). */
  string(): ProviderOptionRule;
  /** A string with at least one character and no NUL. */
  nonEmptyString(): ProviderOptionRule;
  /** A credential: a non-empty string, whose value never appears in a message. */
  secret(): ProviderOptionRule;
  boolean(): ProviderOptionRule;
  /** A finite number above zero, e.g. a duration in ms (`what` names the unit). */
  positiveNumber(what?: string): ProviderOptionRule;
  /** A whole number above zero. */
  positiveInteger(what?: string): ProviderOptionRule;
  /** One of the listed strings. */
  oneOf(values: readonly string[]): ProviderOptionRule;
  /** An object of strings. */
  stringRecord(): ProviderOptionRule;
  /** A function. */
  function(): ProviderOptionRule;
  /** An object whose own keys are checked by `rules` (unknown keys refused, as at the top level). */
  object(rules: ProviderOptionRules): ProviderOptionRule;
  /** A value checked by the provider itself: `check` returns the problem, or undefined. */
  custom(describe: string, check: (value: unknown) => string | undefined): ProviderOptionRule;
} = {
  string: () => rule("a string", (value) => typeof value === "string"),
  nonEmptyString: () =>
    rule("a non-empty string", (value) => typeof value === "string" && value !== "" && !value.includes("\0")),
  secret: () => ({
    describe: "a non-empty string",
    check: (value) => (typeof value === "string" && value !== "" ? undefined : "must be a non-empty string"),
  }),
  boolean: () => rule("true or false", (value) => typeof value === "boolean"),
  positiveNumber: (what = "a positive number") =>
    rule(what, (value) => typeof value === "number" && Number.isFinite(value) && value > 0),
  positiveInteger: (what = "a positive whole number") =>
    rule(what, (value) => typeof value === "number" && Number.isInteger(value) && value > 0),
  oneOf: (values) =>
    rule(
      `one of ${values.map((value) => JSON.stringify(value)).join(", ")}`,
      (value) => typeof value === "string" && values.includes(value),
    ),
  stringRecord: () =>
    rule(
      "an object of strings",
      (value) => isRecord(value) && Object.values(value).every((entry) => typeof entry === "string"),
    ),
  function: () => rule("a function", (value) => typeof value === "function"),
  object: (rules) => ({
    describe: `an object with ${Object.keys(rules).join(", ")}`,
    check: (value) => (isRecord(value) ? undefined : `must be an object, got ${show(value)}`),
    fields: rules,
  }),
  custom: (describe, check) => ({ describe, check }),
};

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j += 1) {
      const current = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length]!;
}

/** The problem with one object of options (first found); nested keys are named `prefix.key`. */
function problemOf(
  options: Record<string, unknown>,
  rules: ProviderOptionRules,
  prefix = "",
): string | undefined {
  const known = Object.keys(rules).map((key) => `${prefix}${key}`);
  for (const [key, value] of Object.entries(options)) {
    const name = `${prefix}${key}`;
    if (!Object.hasOwn(rules, key)) {
      const close = known
        .map((candidate) => ({
          candidate,
          distance: editDistance(name.toLowerCase(), candidate.toLowerCase()),
        }))
        .sort((a, b) => a.distance - b.distance)[0];
      const hint =
        close && close.distance <= Math.max(1, Math.floor(key.length / 4))
          ? ` (did you mean ${JSON.stringify(close.candidate)}?)`
          : "";
      return `unknown option ${JSON.stringify(name)}${hint}; the options are ${known.join(", ") || "none"}`;
    }
    // `x?: T | undefined`: an option set to undefined is an option not given.
    if (value === undefined) continue;
    const rule = rules[key]!;
    const problem = rule.check(value);
    if (problem !== undefined) return `option ${name} ${problem}`;
    if (rule.fields && isRecord(value)) {
      const nested = problemOf(value, rule.fields, `${name}.`);
      if (nested !== undefined) return nested;
    }
  }
  return undefined;
}

/**
 * Checks the options object of a provider factory against its rules, before the provider does anything:
 * an unknown key (a typo such as `isolaton`) or a bad value is a `Validation` error naming the key and
 * the accepted ones, never an option accepted and ignored. Keys set to `undefined` count as not given.
 *
 * ```ts
 * validateProviderOptions("docker", options, {
 *   image: optionRules.nonEmptyString(),
 *   requestTimeoutMs: optionRules.positiveNumber("a positive number of milliseconds"),
 * });
 * ```
 */
export function validateProviderOptions(
  provider: string,
  options: unknown,
  rules: ProviderOptionRules,
): void {
  if (options === undefined) return;
  if (!isRecord(options)) {
    throw new SandboxError("Validation", `${provider}() options must be an object, got ${show(options)}`, {
      provider,
      retryable: false,
    });
  }
  const problem = problemOf(options, rules);
  if (problem !== undefined) {
    throw new SandboxError("Validation", `${provider}(): ${problem}`, { provider, retryable: false });
  }
}
