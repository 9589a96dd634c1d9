import type { EgressPolicy, SandboxSpec } from "@sbox/core";
import type { OptionSpecs } from "../args/option-spec.js";
import type { OptionValues } from "../args/parse-command-line.js";
import { stringListOption, stringOption } from "../args/parse-command-line.js";
import { usageError } from "../args/usage-error.js";
import { parseDuration, parseEnv, parseInteger, parseLabels } from "../args/value-parsers.js";

/** Options that describe a sandbox to create (`create`, `run`). Only the given ones reach the spec. */
export const SPEC_OPTIONS: OptionSpecs = {
  template: {
    type: "string",
    short: "t",
    valueName: "REF",
    description: "image / template in the provider's terms",
  },
  name: {
    type: "string",
    valueName: "NAME",
    description: "name, unique per provider; other commands then take --name NAME for the id",
  },
  env: {
    type: "string",
    short: "e",
    multiple: true,
    valueName: "K=V",
    description: "environment variable for every command (K alone copies it from here)",
  },
  label: {
    type: "string",
    short: "l",
    multiple: true,
    valueName: "K=V",
    description: "label (metadata), repeatable",
  },
  ttl: { type: "string", valueName: "DURATION", description: "time to live, e.g. 30m, 2h" },
  port: { type: "string", multiple: true, valueName: "PORT", description: "port to publish at create time" },
  cpus: { type: "string", valueName: "N", description: "virtual CPUs" },
  memory: { type: "string", valueName: "MIB", description: "memory limit in MiB" },
  disk: { type: "string", valueName: "MIB", description: "disk size in MiB" },
  network: {
    type: "string",
    valueName: "POLICY",
    description: "egress: allow-all, block-all, or a comma-separated allow-list of hosts/CIDRs",
  },
  region: { type: "string", valueName: "REGION", description: "region to place the sandbox in" },
};

function positiveNumber(text: string, what: string): number {
  const value = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !(value > 0)) throw usageError(`${what} must be a positive number`);
  return value;
}

/** Builds a SandboxSpec from `SPEC_OPTIONS` values; fields not given are left out, never defaulted. */
export function buildSpec(
  values: OptionValues,
  hostEnv: Readonly<Record<string, string | undefined>>,
): SandboxSpec {
  const spec: {
    -readonly [K in keyof SandboxSpec]: SandboxSpec[K];
  } = {};
  const template = stringOption(values, "template");
  if (template !== undefined) spec.template = template;
  const name = stringOption(values, "name");
  if (name !== undefined) spec.name = name;
  const envItems = stringListOption(values, "env");
  if (envItems.length > 0) spec.env = parseEnv(envItems, hostEnv);
  const labelItems = stringListOption(values, "label");
  if (labelItems.length > 0) spec.metadata = parseLabels(labelItems);
  const ttl = stringOption(values, "ttl");
  if (ttl !== undefined) spec.ttlMs = parseDuration(ttl, "--ttl");
  const ports = stringListOption(values, "port");
  if (ports.length > 0) spec.ports = ports.map((port) => parseInteger(port, "--port", 1, 65535));
  const resources: { vcpus?: number; memoryMB?: number; diskMB?: number } = {};
  const cpus = stringOption(values, "cpus");
  if (cpus !== undefined) resources.vcpus = positiveNumber(cpus, "--cpus");
  const memory = stringOption(values, "memory");
  if (memory !== undefined) resources.memoryMB = parseInteger(memory, "--memory", 1, Number.MAX_SAFE_INTEGER);
  const disk = stringOption(values, "disk");
  if (disk !== undefined) resources.diskMB = parseInteger(disk, "--disk", 1, Number.MAX_SAFE_INTEGER);
  if (Object.keys(resources).length > 0) spec.resources = resources;
  const network = stringOption(values, "network");
  if (network !== undefined) spec.network = { egress: parseEgress(network) };
  const region = stringOption(values, "region");
  if (region !== undefined) spec.region = region;
  return spec;
}

function parseEgress(text: string): EgressPolicy {
  if (text === "allow-all" || text === "block-all") return text;
  const allow = text
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
  if (allow.length === 0) throw usageError("--network expects allow-all, block-all or a list of hosts");
  return { allow };
}
