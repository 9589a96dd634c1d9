/**
 * A machine's configuration as the Machines API keeps it (`fly.MachineConfig`): the request is checked
 * like Fly checks it (400 for what it refuses: no image, non-string env or metadata, CPUs that are not
 * whole, memory that is not a multiple of 256 MiB, bad service ports, an unknown restart policy) and then
 * normalised — the defaults Fly fills in are filled in (`guest` shared-cpu-1x with 256 MiB, `init: {}`,
 * `restart: on-failure`), so a machine's JSON describes the configuration it runs with, not an echo of the
 * request.
 */

/** A machine configuration, with the fields the emulator acts on typed. */
export interface FlyMachineConfig {
  image: string;
  env?: Record<string, string>;
  metadata?: Record<string, string>;
  init: { exec?: string[]; entrypoint?: string[]; cmd?: string[]; tty?: boolean; [key: string]: unknown };
  guest: { cpu_kind: string; cpus: number; memory_mb: number; [key: string]: unknown };
  restart: { policy: "no" | "always" | "on-failure"; max_retries?: number };
  services?: FlyService[];
  auto_destroy?: boolean;
  rootfs?: { persist?: string; size_gb?: number };
  [key: string]: unknown;
}

/** A service the Fly Proxy routes to. */
export interface FlyService {
  protocol: "tcp" | "udp";
  internal_port: number;
  ports?: { port?: number; start_port?: number; end_port?: number; handlers?: string[] }[];
  [key: string]: unknown;
}

/** A configuration Fly would refuse, with its 400 message. */
export class FlyConfigError extends Error {}

function isStringRecord(value: unknown): value is Record<string, string> {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((v) => typeof v === "string")
  );
}

function stringArray(value: unknown, field: string): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) {
    throw new FlyConfigError(`${field} must be a list of strings`);
  }
  return [...value] as string[];
}

/** Drops `undefined` and `null` members (Fly does not store them). */
function compact<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null)) as T;
}

/** Checks and normalises a `config` of a create or update request. */
export function normaliseConfig(raw: unknown): FlyMachineConfig {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new FlyConfigError("config is required");
  }
  const input = raw as Record<string, unknown>;
  if (typeof input.image !== "string" || input.image.trim() === "") {
    throw new FlyConfigError("invalid config.image: an image is required");
  }
  if (input.env !== undefined && input.env !== null && !isStringRecord(input.env)) {
    throw new FlyConfigError("invalid config.env: values must be strings");
  }
  if (input.metadata !== undefined && input.metadata !== null && !isStringRecord(input.metadata)) {
    throw new FlyConfigError("invalid config.metadata: values must be strings");
  }
  const guestIn = (input.guest ?? {}) as Record<string, unknown>;
  if (typeof guestIn !== "object" || Array.isArray(guestIn)) throw new FlyConfigError("invalid config.guest");
  const cpus = guestIn.cpus ?? 1;
  if (typeof cpus !== "number" || !Number.isInteger(cpus) || cpus < 1 || cpus > 64) {
    throw new FlyConfigError("invalid config.guest.cpus: a whole number of CPUs from 1 to 64");
  }
  const memory = guestIn.memory_mb ?? 256;
  if (typeof memory !== "number" || !Number.isInteger(memory) || memory < 256 || memory % 256 !== 0) {
    throw new FlyConfigError("invalid config.guest.memory_mb: a multiple of 256, at least 256");
  }
  const cpuKind = guestIn.cpu_kind ?? "shared";
  if (cpuKind !== "shared" && cpuKind !== "performance") {
    throw new FlyConfigError('invalid config.guest.cpu_kind: "shared" or "performance"');
  }
  const initIn = (input.init ?? {}) as Record<string, unknown>;
  if (typeof initIn !== "object" || Array.isArray(initIn)) throw new FlyConfigError("invalid config.init");
  const init = compact({
    ...initIn,
    exec: stringArray(initIn.exec, "config.init.exec"),
    entrypoint: stringArray(initIn.entrypoint, "config.init.entrypoint"),
    cmd: stringArray(initIn.cmd, "config.init.cmd"),
  });
  const restartIn = (input.restart ?? {}) as Record<string, unknown>;
  const policy = restartIn.policy === undefined || restartIn.policy === "" ? "on-failure" : restartIn.policy;
  if (policy !== "no" && policy !== "always" && policy !== "on-failure") {
    throw new FlyConfigError('invalid config.restart.policy: "no", "always" or "on-failure"');
  }
  const restart: FlyMachineConfig["restart"] = { policy };
  if (policy === "on-failure") {
    const retries = restartIn.max_retries ?? 10;
    if (typeof retries !== "number" || !Number.isInteger(retries) || retries < 0) {
      throw new FlyConfigError("invalid config.restart.max_retries");
    }
    restart.max_retries = retries;
  }
  let services: FlyService[] | undefined;
  if (input.services !== undefined && input.services !== null) {
    if (!Array.isArray(input.services)) throw new FlyConfigError("invalid config.services");
    services = input.services.map((entry, index) => {
      const service = entry as FlyService;
      if (service.protocol !== "tcp" && service.protocol !== "udp") {
        throw new FlyConfigError(`invalid config.services[${index}].protocol: "tcp" or "udp"`);
      }
      if (
        !Number.isInteger(service.internal_port) ||
        service.internal_port < 1 ||
        service.internal_port > 65_535
      ) {
        throw new FlyConfigError(`invalid config.services[${index}].internal_port`);
      }
      for (const port of service.ports ?? []) {
        if (
          port.port !== undefined &&
          (!Number.isInteger(port.port) || port.port < 1 || port.port > 65_535)
        ) {
          throw new FlyConfigError(`invalid config.services[${index}].ports: bad port ${String(port.port)}`);
        }
      }
      return { ...service };
    });
  }
  if (input.auto_destroy !== undefined && typeof input.auto_destroy !== "boolean") {
    throw new FlyConfigError("invalid config.auto_destroy: a boolean");
  }
  return compact({
    ...input,
    image: input.image.trim(),
    env: input.env === null ? undefined : (input.env as Record<string, string> | undefined),
    metadata: input.metadata === null ? undefined : (input.metadata as Record<string, string> | undefined),
    init,
    guest: compact({ ...guestIn, cpu_kind: cpuKind, cpus, memory_mb: memory }) as FlyMachineConfig["guest"],
    restart,
    services,
  }) as FlyMachineConfig;
}

/** `image_ref` as Fly reports it: the image reference split into registry, repository and tag. */
export function imageRefOf(image: string): Record<string, unknown> {
  let rest = image;
  let digest = "";
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  const slash = rest.indexOf("/");
  const first = slash < 0 ? "" : rest.slice(0, slash);
  const hasRegistry = first.includes(".") || first.includes(":") || first === "localhost";
  const registry = hasRegistry ? first : "registry-1.docker.io";
  let repository = hasRegistry ? rest.slice(slash + 1) : rest;
  let tag = "latest";
  const colon = repository.lastIndexOf(":");
  if (colon > repository.lastIndexOf("/")) {
    tag = repository.slice(colon + 1);
    repository = repository.slice(0, colon);
  }
  if (!repository.includes("/") && registry === "registry-1.docker.io") repository = `library/${repository}`;
  return { registry, repository, tag, digest, labels: {} };
}

/**
 * What stands for an image's own command when the config names none: offline, the image's CMD is not
 * known (images map to backend templates), so the machine runs a process that waits until it is
 * signalled — as a server image's CMD would — and signals, kills and restart policies act on it.
 */
export const STAND_IN_MAIN_COMMAND: readonly string[] = ["sh", "-c", "while :; do sleep 3600; done"];

/** The command a machine's init runs: `exec`, else `entrypoint` + `cmd`, else {@link STAND_IN_MAIN_COMMAND}. */
export function mainCommandOf(config: FlyMachineConfig): string[] {
  if (config.init.exec && config.init.exec.length > 0) return config.init.exec;
  const command = [...(config.init.entrypoint ?? []), ...(config.init.cmd ?? [])];
  return command.length > 0 ? command : [...STAND_IN_MAIN_COMMAND];
}
