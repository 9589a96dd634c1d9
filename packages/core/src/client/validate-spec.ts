import type { CapabilityMap, CapabilityName } from "../capabilities/capability-names.js";
import { validateEnv } from "../emulation/shell-quote.js";
import { SandboxError } from "../errors/sandbox-error.js";
import type { SandboxProvider } from "../spec/provider-spec.js";
import type { ListFilter, SandboxSpec, SandboxState, SpecField } from "../spec/sandbox-spec.js";
import { SANDBOX_SPEC_FIELDS, SANDBOX_STATES } from "../spec/sandbox-spec-values.js";

/** Metadata key under which the core records the expiry of providers that cannot keep a ttl themselves. */
export const EXPIRES_AT_METADATA_KEY = "sbox-expires-at";

/**
 * Metadata key under which the core records a create's idempotency key for providers that do not honour
 * keys themselves, so that a repeated create finds the sandbox by `list`.
 */
export const IDEMPOTENCY_KEY_METADATA_KEY = "sbox-idempotency-key";

/** Whether the core can keep what a provider cannot (an expiry, an idempotency key) in metadata and list it. */
export function recordsInMetadata(provider: SandboxProvider, capabilities: CapabilityMap): boolean {
  return provider.honours.includes("metadata") && capabilities.list !== "unsupported";
}

const SPEC_KEYS = new Set<string>([...SANDBOX_SPEC_FIELDS, "idempotencyKey", "signal"]);
const RESOURCE_KEYS = new Set(["vcpus", "memoryMB", "diskMB", "gpu"]);

/** Capability a spec field needs on top of being honoured. */
const FIELD_CAPABILITY: Partial<Record<SpecField, CapabilityName>> = {
  "resources.gpu": "gpu",
  region: "region",
  volumes: "volumes",
  secrets: "secretsVault",
};

function invalid(provider: string, message: string): SandboxError {
  return new SandboxError("Validation", message, { provider, retryable: false });
}

function isPositiveNumber(value: unknown): boolean {
  return typeof value === "number" && Number.isFinite(value) && value > 0;
}

function assertStringRecord(provider: string, field: string, value: unknown): void {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalid(provider, `${field} must be an object of strings`);
  }
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== "string") throw invalid(provider, `${field}.${key} must be a string`);
    if (key.length === 0 || key.length > 256)
      throw invalid(provider, `${field} keys must be 1-256 characters`);
  }
}

/**
 * Checks a spec before any provider call: shapes and values are valid, and every field that is set is one
 * the provider honours (and, where it needs one, whose capability is supported). Nothing is dropped silently.
 */
export function validateSpec(
  spec: SandboxSpec,
  provider: SandboxProvider,
  capabilities: CapabilityMap,
): void {
  const name = provider.name;
  if (typeof spec !== "object" || spec === null) throw invalid(name, "spec must be an object");
  for (const key of Object.keys(spec)) {
    if (!SPEC_KEYS.has(key)) throw invalid(name, `unknown spec field ${JSON.stringify(key)}`);
  }
  const used: SpecField[] = [];
  const has = (value: unknown) => value !== undefined;
  if (has(spec.template)) {
    if (typeof spec.template !== "string" || spec.template.length === 0)
      throw invalid(name, "template must be a non-empty string");
    used.push("template");
  }
  if (has(spec.name)) {
    if (typeof spec.name !== "string" || spec.name.length === 0)
      throw invalid(name, "name must be a non-empty string");
    used.push("name");
  }
  if (has(spec.env)) {
    assertStringRecord(name, "env", spec.env);
    try {
      validateEnv(spec.env);
    } catch (error) {
      throw SandboxError.isInstance(error) ? invalid(name, error.message) : error;
    }
    if (Object.keys(spec.env!).length > 0) used.push("env");
  }
  if (has(spec.metadata)) {
    assertStringRecord(name, "metadata", spec.metadata);
    if (Object.keys(spec.metadata!).length > 0) used.push("metadata");
  }
  if (has(spec.ttlMs)) {
    if (!isPositiveNumber(spec.ttlMs)) throw invalid(name, "ttlMs must be a positive number of milliseconds");
    used.push("ttlMs");
  }
  if (has(spec.resources)) {
    if (typeof spec.resources !== "object" || spec.resources === null)
      throw invalid(name, "resources must be an object");
    for (const [key, value] of Object.entries(spec.resources)) {
      if (value === undefined) continue;
      if (!RESOURCE_KEYS.has(key)) throw invalid(name, `unknown resources field ${JSON.stringify(key)}`);
      if (key === "gpu") {
        if (typeof value !== "string" || value.length === 0)
          throw invalid(name, "resources.gpu must be a non-empty string");
      } else if (!isPositiveNumber(value)) {
        throw invalid(name, `resources.${key} must be a positive number`);
      }
      used.push(`resources.${key}` as SpecField);
    }
  }
  if (has(spec.ports)) {
    if (!Array.isArray(spec.ports) || spec.ports.some((p) => !Number.isInteger(p) || p < 1 || p > 65535)) {
      throw invalid(name, "ports must be an array of integers between 1 and 65535");
    }
    if (spec.ports.length > 0) used.push("ports");
  }
  if (has(spec.network)) {
    const egress = spec.network?.egress;
    const valid =
      egress === "allow-all" ||
      egress === "block-all" ||
      (typeof egress === "object" &&
        egress !== null &&
        Array.isArray(egress.allow) &&
        egress.allow.every((entry) => typeof entry === "string" && entry.length > 0));
    if (!valid) throw invalid(name, 'network.egress must be "allow-all", "block-all" or { allow: string[] }');
    if (egress !== "allow-all") {
      if (capabilities.egressControl === "unsupported") {
        throw invalid(
          name,
          `network.egress ${JSON.stringify(egress)} needs egressControl, which ${name} does not support`,
        );
      }
      used.push("network");
    }
  }
  if (has(spec.volumes)) {
    if (!Array.isArray(spec.volumes)) throw invalid(name, "volumes must be an array");
    for (const volume of spec.volumes) {
      if (
        typeof volume?.name !== "string" ||
        typeof volume.mountPath !== "string" ||
        !volume.mountPath.startsWith("/")
      ) {
        throw invalid(name, "each volume needs a name and an absolute mountPath");
      }
    }
    if (spec.volumes.length > 0) used.push("volumes");
  }
  if (has(spec.region)) {
    if (typeof spec.region !== "string" || spec.region.length === 0)
      throw invalid(name, "region must be a non-empty string");
    used.push("region");
  }
  if (has(spec.secrets)) {
    if (!Array.isArray(spec.secrets) || spec.secrets.some((s) => typeof s !== "string" || s.length === 0)) {
      throw invalid(name, "secrets must be an array of secret names");
    }
    if (spec.secrets.length > 0) used.push("secrets");
  }
  if (has(spec.idempotencyKey)) {
    if (typeof spec.idempotencyKey !== "string" || spec.idempotencyKey.length === 0)
      throw invalid(name, "idempotencyKey must be a non-empty string");
    if (spec.idempotencyKey.length > 256)
      throw invalid(name, "idempotencyKey must be at most 256 characters");
    used.push("idempotencyKey");
  }
  for (const field of used) {
    const capability = FIELD_CAPABILITY[field];
    if (capability && capabilities[capability] === "unsupported") {
      throw invalid(name, `${field} needs the ${capability} capability, which ${name} does not support`);
    }
    if (field === "ttlMs" && !provider.honours.includes("ttlMs")) {
      // The core can keep the expiry in metadata and enforce it with client.reap(), if the provider keeps metadata and lists.
      if (recordsInMetadata(provider, capabilities)) continue;
      throw invalid(
        name,
        `ttlMs cannot be honoured by ${name}: it keeps no expiry and no metadata to record one in`,
      );
    }
    if (field === "idempotencyKey" && !provider.honours.includes("idempotencyKey")) {
      // The core can record the key in metadata and find an earlier create by it with list.
      if (recordsInMetadata(provider, capabilities)) continue;
      throw invalid(
        name,
        `idempotencyKey cannot be honoured by ${name}: it keeps no keys and no metadata to find an earlier create by`,
      );
    }
    if (!provider.honours.includes(field)) {
      throw invalid(name, `${field} is not supported by provider ${name}; remove it from the spec`);
    }
  }
}

/** Checks a list filter; a filter field is never ignored, so a malformed one is an error. */
export function validateListFilter(filter: ListFilter, provider: string): void {
  if (filter.metadata !== undefined) assertStringRecord(provider, "filter.metadata", filter.metadata);
  if (filter.limit !== undefined && (!Number.isInteger(filter.limit) || filter.limit < 0)) {
    throw invalid(provider, "filter.limit must be a non-negative integer");
  }
  if (filter.state !== undefined) {
    const states = Array.isArray(filter.state) ? filter.state : [filter.state];
    for (const state of states) {
      if (!SANDBOX_STATES.includes(state as SandboxState))
        throw invalid(provider, `unknown state ${JSON.stringify(state)} in filter`);
    }
  }
}

/** True when `info` passes the metadata and state parts of `filter`. */
export function matchesFilter(
  info: { state: SandboxState; metadata: Readonly<Record<string, string>> },
  filter: ListFilter,
): boolean {
  if (filter.state !== undefined) {
    const states: readonly SandboxState[] = Array.isArray(filter.state)
      ? filter.state
      : [filter.state as SandboxState];
    if (!states.includes(info.state)) return false;
  }
  for (const [key, value] of Object.entries(filter.metadata ?? {})) {
    if (info.metadata[key] !== value) return false;
  }
  return true;
}
