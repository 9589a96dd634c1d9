import {
  loadSetting,
  optionRules,
  type ProviderOptionRules,
  readEnv,
  settingParsers,
  validateProviderOptions,
} from "@sbox/core/spec";
import type Dockerode from "dockerode";
import { DOCKER_PROVIDER_NAME } from "./docker-labels.js";

/** Options of {@link docker}. Every field is optional; without any, the engine of `DOCKER_HOST` or the local socket is used. */
export interface DockerProviderOptions {
  /** A ready dockerode client; `socketPath` and `host` are ignored when it is given. */
  docker?: Dockerode | undefined;
  /**
   * Image used when `spec.template` is not set (default: the `SBOX_DOCKER_IMAGE` environment variable, else
   * `debian:bookworm-slim`, pulled when missing).
   */
  image?: string | undefined;
  /** Path of the engine's unix socket, e.g. `/var/run/docker.sock`. */
  socketPath?: string | undefined;
  /** Engine address: `unix:///path`, `tcp://host:2375`, `http://host:2375` or `ssh://user@host`. */
  host?: string | undefined;
  /** Network new sandboxes join (default `bridge`); also the network `setEgress("allow-all")` reconnects. */
  network?: string | undefined;
  /** Extra labels on every container; `list` and `connect` only see containers that carry them too. */
  labels?: Readonly<Record<string, string>> | undefined;
  /** Upper bound for every engine call that is not a running command's stream, in ms (default 30 000). */
  requestTimeoutMs?: number | undefined;
  /** Upper bound for pulling a missing image, in ms (default 300 000). */
  pullTimeoutMs?: number | undefined;
  /** Process limit of each sandbox's cgroup (default 4096). */
  pidsLimit?: number | undefined;
  /** Host address published ports bind to (default `127.0.0.1`). */
  publishAddress?: string | undefined;
  /** Host name used in port URLs (default: the engine's host for tcp/ssh engines, else `127.0.0.1`). */
  publicHost?: string | undefined;
}

/** Options after defaults. */
export interface ResolvedDockerOptions {
  readonly image: string;
  readonly network: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly requestTimeoutMs: number;
  readonly pullTimeoutMs: number;
  readonly pidsLimit: number;
  readonly publishAddress: string;
  readonly publicHost: string;
}

/** The default image when neither `spec.template`, `image` nor `SBOX_DOCKER_IMAGE` is given. */
export const DEFAULT_IMAGE = "debian:bookworm-slim";

/** The environment variable that names the default image (for machines without a registry). */
export const DEFAULT_IMAGE_ENV = "SBOX_DOCKER_IMAGE";

const milliseconds = () => optionRules.positiveNumber("a positive number of milliseconds");

/** Every option of {@link docker} and what it takes: anything else is refused, not ignored. */
const DOCKER_OPTION_RULES: ProviderOptionRules = {
  docker: optionRules.custom("a dockerode client", (value) =>
    typeof value === "object" && value !== null && typeof (value as Dockerode).getContainer === "function"
      ? undefined
      : "must be a dockerode client (new Docker(...))",
  ),
  image: optionRules.nonEmptyString(),
  socketPath: optionRules.nonEmptyString(),
  host: optionRules.nonEmptyString(),
  network: optionRules.nonEmptyString(),
  labels: optionRules.stringRecord(),
  requestTimeoutMs: milliseconds(),
  pullTimeoutMs: milliseconds(),
  pidsLimit: optionRules.positiveInteger(),
  publishAddress: optionRules.nonEmptyString(),
  publicHost: optionRules.nonEmptyString(),
};

/** Checks the options (unknown keys and bad values are `Validation` errors) and fills in defaults. */
export function resolveDockerOptions(
  options: DockerProviderOptions,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ResolvedDockerOptions {
  validateProviderOptions(DOCKER_PROVIDER_NAME, options, DOCKER_OPTION_RULES);
  const number = (option: string, value: number | undefined, fallback: number, integer = false): number =>
    loadSetting(
      DOCKER_PROVIDER_NAME,
      { option, value, parse: integer ? settingParsers.nonNegativeInteger : settingParsers.positiveNumber },
      fallback,
    );
  const envImage = env[DEFAULT_IMAGE_ENV]?.trim();
  return {
    image: options.image ?? (envImage || DEFAULT_IMAGE),
    network: options.network ?? "bridge",
    labels: { ...(options.labels ?? {}) },
    requestTimeoutMs: number("requestTimeoutMs", options.requestTimeoutMs, 30_000),
    pullTimeoutMs: number("pullTimeoutMs", options.pullTimeoutMs, 300_000),
    pidsLimit: number("pidsLimit", options.pidsLimit, 4096, true),
    publishAddress: options.publishAddress ?? "127.0.0.1",
    publicHost:
      options.publicHost ??
      engineHostName(options.host ?? (options.docker ? undefined : readEnv("DOCKER_HOST"))),
  };
}

function engineHostName(host: string | undefined): string {
  if (!host || host.startsWith("unix:") || host.startsWith("npipe:")) return "127.0.0.1";
  try {
    const url = new URL(host.includes("://") ? host : `tcp://${host}`);
    return url.hostname || "127.0.0.1";
  } catch {
    return "127.0.0.1";
  }
}
