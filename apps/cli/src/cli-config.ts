import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import { SandboxError } from "@sbox/core";

/**
 * What `$SBOX_HOME/config.json` (or the file `SBOX_CONFIG` names) may say: the default provider and
 * default options per provider, e.g. `{ "provider": "docker", "providers": { "docker": { "image":
 * "sbox-busybox:latest" } } }`. `--provider`, `SBOX_PROVIDER` and `-o` win over it; the provider checks
 * the options like any others.
 */
export interface CliConfig {
  readonly provider?: string | undefined;
  readonly providers?: Readonly<Record<string, Readonly<Record<string, unknown>>>> | undefined;
}

/** The config file the CLI reads. */
export function configPath(env: Readonly<Record<string, string | undefined>>): string {
  const explicit = env.SBOX_CONFIG?.trim();
  if (explicit) return explicit;
  const home = env.SBOX_HOME && env.SBOX_HOME.trim() !== "" ? env.SBOX_HOME : join(homedir(), ".sbox");
  return join(home, "config.json");
}

function invalid(path: string, message: string): SandboxError {
  return new SandboxError("Validation", `${path}: ${message}`, { retryable: false });
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Reads the config file: `{}` when there is none; a `Validation` error naming the file when it is malformed. */
export function readCliConfig(env: Readonly<Record<string, string | undefined>>): CliConfig {
  const path = configPath(env);
  if (env.SBOX_CONFIG !== undefined && env.SBOX_CONFIG.trim() !== "" && !isAbsolute(path)) {
    throw invalid(path, "SBOX_CONFIG must be an absolute path");
  }
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT" && env.SBOX_CONFIG === undefined) return {};
    throw invalid(path, `cannot read the config file (${(error as Error).message})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw invalid(path, `not valid JSON (${(error as Error).message})`);
  }
  if (!isRecord(parsed)) throw invalid(path, "the config must be a JSON object");
  for (const key of Object.keys(parsed)) {
    if (key !== "provider" && key !== "providers") {
      throw invalid(path, `unknown key ${JSON.stringify(key)}; the keys are provider, providers`);
    }
  }
  if (parsed.provider !== undefined && (typeof parsed.provider !== "string" || parsed.provider === "")) {
    throw invalid(path, '"provider" must be a provider name');
  }
  if (parsed.providers !== undefined) {
    if (!isRecord(parsed.providers)) throw invalid(path, '"providers" must map provider names to options');
    for (const [name, options] of Object.entries(parsed.providers)) {
      if (!isRecord(options)) throw invalid(path, `"providers.${name}" must be an object of options`);
    }
  }
  return parsed as CliConfig;
}
