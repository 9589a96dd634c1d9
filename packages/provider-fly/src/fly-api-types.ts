/**
 * The JSON shapes of the Fly Machines REST API that this provider sends and reads, after the public
 * reference (https://fly.io/docs/machines/api/machines-resource/ and the OpenAPI document at
 * https://docs.machines.dev). Only the fields the provider uses are typed; the rest is kept as received.
 */

/** A Machine lifecycle state as the API reports it (`created`, `started`, `stopped`, `suspended`, ...). */
export type FlyMachineStateName =
  | "created"
  | "creating"
  | "starting"
  | "started"
  | "stopping"
  | "stopped"
  | "suspending"
  | "suspended"
  | "restarting"
  | "updating"
  | "replacing"
  | "destroying"
  | "destroyed"
  | "failed"
  | "launch_failed"
  | "replaced"
  | "migrated"
  | (string & {});

/** One port of a service: the port the Fly Proxy accepts traffic on, and its handlers. */
export interface FlyMachinePort {
  port?: number | undefined;
  handlers?: string[] | undefined;
  force_https?: boolean | undefined;
}

/** A network service of a Machine (`config.services[]`): how the Fly Proxy reaches a port inside it. */
export interface FlyMachineService {
  protocol: "tcp" | "udp";
  internal_port: number;
  ports?: FlyMachinePort[] | undefined;
  autostart?: boolean | undefined;
  autostop?: string | boolean | undefined;
}

/** Resources of a Machine (`config.guest`). */
export interface FlyMachineGuest {
  cpu_kind?: string | undefined;
  cpus?: number | undefined;
  memory_mb?: number | undefined;
}

/** The Machine configuration (`config`). */
export interface FlyMachineConfig {
  image: string;
  env?: Record<string, string> | undefined;
  metadata?: Record<string, string> | undefined;
  guest?: FlyMachineGuest | undefined;
  services?: FlyMachineService[] | undefined;
  init?: { exec?: string[] | undefined; cmd?: string[] | undefined } | undefined;
  restart?: { policy: "no" | "on-failure" | "always"; max_retries?: number | undefined } | undefined;
  auto_destroy?: boolean | undefined;
}

/** Body of `POST /v1/apps/{app}/machines`. */
export interface FlyCreateMachineRequest {
  name?: string | undefined;
  region?: string | undefined;
  config: FlyMachineConfig;
  skip_launch?: boolean | undefined;
}

/** A Machine as `GET /v1/apps/{app}/machines/{id}` (and create, and list) return it. */
export interface FlyMachine {
  id: string;
  name?: string | undefined;
  state: FlyMachineStateName;
  region?: string | undefined;
  instance_id?: string | undefined;
  /** The machine's version (the same value as `instance_id`, which is deprecated). */
  version?: string | undefined;
  private_ip?: string | undefined;
  config?: FlyMachineConfig | undefined;
  created_at?: string | undefined;
  updated_at?: string | undefined;
  /** Newest first; a failed boot says why here. */
  events?: FlyMachineEvent[] | undefined;
}

/** An entry of a machine's event log. */
export interface FlyMachineEvent {
  type?: string | undefined;
  status?: string | undefined;
  timestamp?: number | undefined;
  request?: Record<string, unknown> | undefined;
}

/** Answer of `GET .../wait` (`WaitMachineResponse`). */
export interface FlyWaitResponse {
  ok?: boolean | undefined;
  state?: FlyMachineStateName | undefined;
  version?: string | undefined;
  event_id?: string | undefined;
}

/** A lease (`Lease`; fly-go reads the same fields under `data`). */
export interface FlyLease {
  nonce?: string | undefined;
  owner?: string | undefined;
  expires_at?: number | undefined;
  description?: string | undefined;
  data?:
    | { nonce?: string | undefined; owner?: string | undefined; expires_at?: number | undefined }
    | undefined;
}

/** Body of `POST /v1/apps/{app}/machines/{id}/exec` (`MachineExecRequest`; the string `cmd` is deprecated). */
export interface FlyExecRequest {
  /** argv: no shell is involved. */
  command: string[];
  /** Seconds before the command is stopped. */
  timeout?: number | undefined;
  /** Text fed to stdin (a JSON string, so text only). */
  stdin?: string | undefined;
}

/** Response of the exec route (`flydv1.ExecResponse`). */
export interface FlyExecResponse {
  stdout?: string | undefined;
  stderr?: string | undefined;
  exit_code?: number | undefined;
  exit_signal?: number | undefined;
}

/** Error body of the API: `{ "error": "...", "status": "insufficient_capacity" }`. */
export interface FlyErrorBody {
  error?: string | undefined;
  /** Fly's machine-readable code (`unknown`, `insufficient_capacity`, `name_taken`...). */
  status?: string | undefined;
}
