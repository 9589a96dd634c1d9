import { usageError } from "./usage-error.js";

const KEY = /^[A-Za-z_][A-Za-z0-9_.\-/]*$/;
const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Parses repeated `k=v` labels into a record; the value may contain `=`; the key may not be empty. */
export function parseLabels(items: readonly string[], optionName = "--label"): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const item of items) {
    const equals = item.indexOf("=");
    if (equals <= 0) throw usageError(`${optionName} expects KEY=VALUE, got ${JSON.stringify(item)}`);
    const key = item.slice(0, equals);
    if (!KEY.test(key)) throw usageError(`${optionName}: invalid key ${JSON.stringify(key)}`);
    labels[key] = item.slice(equals + 1);
  }
  return labels;
}

/**
 * Parses repeated `--env K=V` (or `--env K`, which copies K from the host environment, like `docker -e K`).
 */
export function parseEnv(
  items: readonly string[],
  hostEnv: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const item of items) {
    const equals = item.indexOf("=");
    const key = equals === -1 ? item : item.slice(0, equals);
    if (!ENV_KEY.test(key)) throw usageError(`--env: invalid variable name ${JSON.stringify(key)}`);
    if (equals === -1) {
      const value = hostEnv[key];
      if (value === undefined)
        throw usageError(`--env ${key}: not set in this environment (use ${key}=VALUE)`);
      env[key] = value;
    } else {
      env[key] = item.slice(equals + 1);
    }
  }
  return env;
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses a duration: `500ms`, `30s`, `5m`, `2h`, `1d`; a bare number is seconds. */
export function parseDuration(text: string, optionName: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!match)
    throw usageError(`${optionName} expects a duration like 30s, 5m, 2h or 1d, got ${JSON.stringify(text)}`);
  const ms = Number(match[1]) * (UNITS[match[2] ?? "s"] ?? 1000);
  if (!Number.isFinite(ms) || ms <= 0) throw usageError(`${optionName} must be greater than zero`);
  return Math.round(ms);
}

/** Parses a positive integer (ports, pids, counts) within `[min, max]`. */
export function parseInteger(text: string, what: string, min: number, max: number): number {
  if (!/^\d+$/.test(text)) throw usageError(`${what} must be a whole number, got ${JSON.stringify(text)}`);
  const value = Number(text);
  if (value < min || value > max) throw usageError(`${what} must be between ${min} and ${max}, got ${value}`);
  return value;
}

/**
 * Parses `-o KEY=VALUE` provider options: `true`/`false` and plain numbers become booleans and numbers, a
 * value that starts with `{` or `[` is parsed as JSON, the rest stays a string.
 */
export function parseProviderOptions(items: readonly string[]): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  for (const item of items) {
    const equals = item.indexOf("=");
    if (equals <= 0) throw usageError(`--provider-option expects KEY=VALUE, got ${JSON.stringify(item)}`);
    const key = item.slice(0, equals);
    const raw = item.slice(equals + 1);
    let value: unknown = raw;
    if (raw === "true" || raw === "false") value = raw === "true";
    else if (/^-?\d+(\.\d+)?$/.test(raw)) value = Number(raw);
    else if (raw.startsWith("{") || raw.startsWith("[")) {
      try {
        value = JSON.parse(raw);
      } catch {
        throw usageError(`--provider-option ${key}: invalid JSON`);
      }
    }
    options[key] = value;
  }
  return options;
}
