import { existsSync } from "node:fs";
import { mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import {
  type DriverCallOptions,
  type DriverExecRequest,
  type DriverExecResult,
  type DriverOutputCallbacks,
  type DriverSandbox,
  type DriverSandboxInfo,
  defineProvider,
  type EgressPolicy,
  type ListFilter,
  type PortInfo,
  type ProviderDriver,
  type SandboxProvider,
  type SandboxSpec,
  type SpecField,
} from "@sbox/core/spec";
import {
  connectBackground,
  killBackground,
  listBackground,
  ProcessRegistry,
  spawnBackground,
} from "./local-background.js";
import { localCapabilities, localFlags, localUnisolatedCapabilities } from "./local-capabilities.js";
import { cgroupSupport, enforcedLimits } from "./local-cgroups.js";
import { type CommandSettings, type CommandTarget, viewOf } from "./local-command.js";
import { type DiskSupport, diskSupport, ensureDiskMounted, pathsWithDisk } from "./local-disk.js";
import { LOCAL_PROVIDER_NAME, localError, throwIfAborted, toLocalError } from "./local-errors.js";
import { type CommandContext, runForeground } from "./local-exec.js";
import { LocalExpiryTimers } from "./local-expiry-timers.js";
import {
  listSandboxDirectory,
  makeSandboxDirectory,
  readSandboxFile,
  readSandboxFileStream,
  removeSandboxPath,
  renameSandboxPath,
  statSandboxPath,
  writeSandboxFile,
  writeSandboxFileStream,
} from "./local-files.js";
import { applyEgress, liveHolder } from "./local-holder.js";
import { HolderCache } from "./local-holder-cache.js";
import { hostIdentity, SANDBOX_USER } from "./local-identity.js";
import { assertLocalId, newLocalId } from "./local-ids.js";
import { type ResolvedIsolation, resolveIsolation } from "./local-isolation.js";
import { recordedCgroup, sandboxCgroupFor, sandboxResources } from "./local-launch.js";
import {
  destroySandbox,
  finishAbandonedDestroys,
  isExpired,
  pauseSandbox,
  removeSandboxDirectory,
  resumeSandbox,
  stopSandbox,
} from "./local-lifecycle.js";
import { describeEnforcement, resolveResources } from "./local-limits.js";
import { sandboxMetrics } from "./local-metrics.js";
import { addPortForward, networkSupport, noNetworkError, removePortForward } from "./local-network.js";
import {
  type LocalEgress,
  type LocalOptions,
  normalizedMounts,
  pathsOverlap,
  resolveStateRoot,
  validateLocalOptions,
} from "./local-options.js";
import { createPty } from "./local-pty.js";
import { seccompProgram } from "./local-seccomp.js";
import {
  copyTree,
  createSnapshot,
  deleteSnapshot,
  listSnapshots,
  restoreSnapshot,
} from "./local-snapshots.js";
import {
  createSandboxDirectories,
  type LocalSandboxRecord,
  readRecord,
  sandboxPaths,
  updateRecord,
} from "./local-state.js";
import { watchSandboxPath } from "./local-watch.js";

/** What `sandbox.raw()` returns for a local sandbox: where it lives on the host. */
export interface LocalSandboxHandle {
  /** The native id (a directory name under the state root). */
  readonly id: string;
  /** `<root>/<id>` on the host. */
  readonly dir: string;
  /** Host directory behind `/workspace` (with an unprivileged host's disk image, the image's, below `dir/disk`). */
  readonly workspace: string;
  /** Host directory behind the sandbox's `/tmp`. */
  readonly tmp: string;
  /** Host directory behind `/home/user`. */
  readonly home: string;
}

/** A spec field the local provider honours (`template`, `volumes`, `resources` fail to type-check in `create`). */
export type LocalHonouredField = Extract<
  SpecField,
  "name" | "env" | "metadata" | "ttlMs" | "ports" | "network"
>;

/**
 * The local provider with capability map `TCaps`. Its type also says what the map cannot: it can unexpose
 * a port (`sandbox.ports.unexpose` is always there), and which spec fields it honours.
 */
export type LocalProvider<TCaps extends typeof localCapabilities | typeof localUnisolatedCapabilities> =
  SandboxProvider<TCaps, LocalSandboxHandle> & {
    readonly doUnexposePort: NonNullable<ProviderDriver<LocalSandboxHandle>["doUnexposePort"]>;
    readonly honours: readonly LocalHonouredField[];
  };

const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const MAX_FORK_COUNT = 64;

type Sandbox = DriverSandbox<LocalSandboxHandle>;

/**
 * The driver handle of sandbox `id`. Without isolation every sandbox's commands see the host's `/tmp`, so
 * the core's emulations (used in primitives-only mode) keep their state in the sandbox's own tmp directory
 * instead of a `/tmp/.sbox` shared by all of them.
 */
function handleOf(
  id: string,
  root: string,
  unisolated: boolean,
  disk?: "image" | "fuse" | undefined,
): Sandbox {
  // With a FUSE disk the host directories behind the sandbox's are the image's own (nothing is bound over them).
  const paths = pathsWithDisk(sandboxPaths(root, id), { disk });
  const native = { id, dir: paths.dir, workspace: paths.workspace, tmp: paths.tmp, home: paths.home };
  return unisolated ? { id, native, emulationStateDir: join(paths.tmp, ".sbox") } : { id, native };
}

function rejectUnhonoured(spec: SandboxSpec): void {
  for (const field of ["template", "volumes", "region", "secrets"] as const) {
    if (spec[field] !== undefined)
      throw localError("Validation", `${field} is not supported by the local provider`);
  }
}

function validatePort(port: unknown): number {
  if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw localError("Validation", `port must be an integer from 1 to 65535, got ${String(port)}`);
  }
  return port;
}

function urlOf(port: number): string {
  return `http://127.0.0.1:${port}`;
}

let limitsWarned = false;

/** Says once per process, at the first sandbox created without cgroups, what its limits are enforced by. */
function warnAboutRlimits(reason: string): void {
  if (limitsWarned) return;
  limitsWarned = true;
  process.emitWarning(
    `sbox local: no cgroup can be made here (${reason}); sandbox limits are rlimits: processes and file sizes are limited, memory per process only, CPU not at all. getInfo().raw.limits says what each sandbox gets.`,
    { code: "SBOX_LOCAL_RLIMITS" },
  );
}

let noDiskImageWarned = false;

/** Says once per process that sandboxes get no total disk limit here, and why. */
function warnAboutNoDiskImage(reason: string): void {
  if (noDiskImageWarned) return;
  noDiskImageWarned = true;
  process.emitWarning(
    `sbox local: no disk image can be made for sandboxes here (${reason}); each file a sandbox writes is limited to resources.diskMB, not their total. getInfo().raw.limits.enforced.disk says what each sandbox gets.`,
    { code: "SBOX_LOCAL_NO_DISK_IMAGE" },
  );
}

let noNetworkWarned = false;

/** Says once per process that sandboxes get no network by default here, why, and how to change that. */
function warnAboutNoNetwork(reason: string): void {
  if (noNetworkWarned) return;
  noNetworkWarned = true;
  process.emitWarning(
    `sbox local: no user-mode network stack is usable here (${reason}); new sandboxes get egress "block-all" (no network) unless asked otherwise, and an explicit "allow-all" is refused. local({ network: { hostNetwork: true } }) lets them share the host's network instead. getInfo().raw.network says what each sandbox has.`,
    { code: "SBOX_LOCAL_NO_NETWORK" },
  );
}

/**
 * The embedded default provider: each sandbox is a directory under a state root (default `~/.sbox/local`,
 * or `$SBOX_HOME/local`) and its commands are host processes, isolated with bubblewrap when it is available.
 * Sandboxes survive the program that created them: any other program can `connect(id)` or `list()` them.
 *
 * `isolation: "none"` declares `egressControl` unsupported (there is no network namespace); with `"auto"`
 * on a host without bubblewrap, blocking egress fails at runtime with an error naming why.
 *
 * Creating the provider does no I/O; bubblewrap is probed on first use.
 */
export function local(
  options: LocalOptions & { isolation: "none" },
): LocalProvider<typeof localUnisolatedCapabilities>;
export function local(options?: LocalOptions): LocalProvider<typeof localCapabilities>;
export function local(
  options: LocalOptions = {},
): LocalProvider<typeof localCapabilities> | LocalProvider<typeof localUnisolatedCapabilities> {
  validateLocalOptions(options);
  const requested = options.isolation ?? "auto";
  const root = resolveStateRoot(options);
  const shell = options.shell ?? "/bin/sh";
  const egressCapable = requested !== "none";
  const registry = new ProcessRegistry();

  let isolationResult: { value: ResolvedIsolation } | { error: unknown } | undefined;
  const isolation = (): ResolvedIsolation => {
    if (!isolationResult) {
      try {
        isolationResult = { value: resolveIsolation(requested, { bwrapPath: options.bwrapPath, shell }) };
      } catch (error) {
        isolationResult = { error };
      }
    }
    if ("error" in isolationResult) throw isolationResult.error;
    return isolationResult.value;
  };

  /** Whether commands run without isolation (a bubblewrap that cannot be used fails elsewhere, not here). */
  const unisolated = (): boolean => {
    try {
      return isolation().mode === "none";
    } catch {
      return false;
    }
  };

  const holders = new HolderCache();
  const mounts = normalizedMounts(options);
  const hostLoopback = options.network?.hostLoopback === true;
  const hostNetwork = options.network?.hostNetwork === true;
  const settings = (): CommandSettings => ({
    shell,
    // Under bubblewrap the host's PATH names directories the sandbox does not have (a user's ~/.local/bin).
    path: options.path ?? (unisolated() ? (process.env.PATH ?? DEFAULT_PATH) : DEFAULT_PATH),
    mounts,
    stateRoot: root,
    startTimeoutMs: options.startTimeoutMs,
  });
  const context = (): CommandContext => ({ settings: settings(), isolation: isolation(), holders });

  /** Mounts name host paths that must exist, and may not expose the state root (every sandbox's files). */
  const checkMounts = () => {
    for (const mount of mounts) {
      if (!existsSync(mount.host)) {
        throw localError("Validation", `mounts: the host path ${mount.host} does not exist`);
      }
      if (pathsOverlap(mount.host, root)) {
        throw localError(
          "Validation",
          `mounts: ${mount.host} overlaps the state root ${root}, which holds every sandbox's files`,
        );
      }
    }
  };

  /**
   * The egress a sandbox gets for `requested` (`undefined`: the default, allow-all). The network fails closed:
   * under bubblewrap with no usable user-mode stack, the default becomes block-all and an explicit allow-all
   * is refused, unless `hostNetwork` accepts sharing the host's network.
   */
  const grantEgress = (requested: LocalEgress | undefined, operation: string): LocalEgress => {
    const egress = requested ?? "allow-all";
    const resolved = isolation();
    if (resolved.mode !== "bwrap") {
      if (egress === "block-all") {
        throw localError(
          "NotSupported",
          `${operation}: blocking egress needs bubblewrap's network namespace, and this provider runs without isolation (${resolved.reason})`,
        );
      }
      return egress;
    }
    if (egress === "block-all" || hostNetwork) return egress;
    const support = networkSupport(hostIdentity());
    if (support.kind === "slirp4netns") return egress;
    if (requested !== undefined) throw noNetworkError(support.reason, operation);
    warnAboutNoNetwork(support.reason);
    return "block-all";
  };

  /**
   * Whether new sandboxes get a disk image of their own: by default wherever one can be made (as root, under
   * bubblewrap, with loop devices and mkfs.ext4), else each file is limited and the total is not (one
   * warning). `diskImage: true` insists (refused where none can be made), `diskImage: false` opts out.
   */
  const diskFor = (): { support: DiskSupport | undefined; field: { disk?: "image" | "fuse" } } => {
    if (options.diskImage === false) return { support: undefined, field: {} };
    if (unisolated()) {
      if (options.diskImage === undefined) return { support: undefined, field: {} };
      throw localError(
        "NotSupported",
        "local({ diskImage: true }) needs bubblewrap: this provider runs without isolation",
      );
    }
    const support = diskSupport(root, hostIdentity().root);
    if (support.kind !== "none") return { support, field: { disk: support.kind } };
    if (options.diskImage === undefined) {
      warnAboutNoDiskImage(support.reason);
      return { support: undefined, field: {} };
    }
    throw localError(
      "NotSupported",
      `local({ diskImage: true }): no disk image can be made here (${support.reason}); without it each file a sandbox writes is limited to resources.diskMB, not their total`,
    );
  };

  /** Why a sandbox under bubblewrap has no disk image. */
  const diskReason = (): string => {
    if (options.diskImage === false) return "local({ diskImage: false }) opts out of the disk image";
    const support = diskSupport(root, hostIdentity().root);
    return support.kind !== "none" ? "made before disk images were the default" : support.reason;
  };

  /** Why no user-mode network is usable (only called once `grantEgress` fell back to block-all). */
  const networkReason = (): string => {
    const support = networkSupport(hostIdentity());
    return support.kind === "host" ? support.reason : "unknown";
  };

  /** Loads a sandbox fresh from disk; an expired one is stopped first (unless the caller is the stop itself). */
  const loadNow = async (id: string, enforceExpiry = true, withFiles = false): Promise<CommandTarget> => {
    const paths = sandboxPaths(root, assertLocalId(id));
    let record = await readRecord(paths, id);
    if (record.disk === "image") await ensureDiskMounted(paths);
    if (enforceExpiry && record.state !== "stopped" && isExpired(record)) {
      record = await stopSandbox({ id, paths: pathsWithDisk(paths, record), record });
      holders.forget(paths.dir);
    }
    // A FUSE disk runs a daemon: a stopped sandbox has none, until its files are asked for (then it keeps it
    // until it is stopped again or destroyed), or it starts. A live holder kept here was started on the
    // mounted disk (a stop ends the holder before it unmounts), so a command does not ask the daemon first
    // (a FUSE round trip on every call).
    if (
      record.disk === "fuse" &&
      (record.state !== "stopped" || withFiles) &&
      (record.state === "stopped" || !holders.get(paths.dir))
    ) {
      await ensureDiskMounted(paths, "fuse");
    }
    return { id, paths: pathsWithDisk(paths, record), record };
  };

  // Loading an expired sandbox stops it: the timer only has to load it when its time is up.
  const expiry = new LocalExpiryTimers((id) => loadNow(id));
  /** {@link loadNow}, once a stop the sandbox's expiry timer started has finished. */
  const load = async (id: string, enforceExpiry = true): Promise<CommandTarget> => {
    await expiry.settled(id);
    return loadNow(id, enforceExpiry);
  };
  /** {@link load} for an operation on the sandbox's files, which a stopped sandbox has too. */
  const loadFiles = async (id: string): Promise<CommandTarget> => {
    await expiry.settled(id);
    return loadNow(id, true, true);
  };

  /** The host id the sandbox user has, when files the host creates must be handed to it (root hosts). */
  const sandboxOwner = () => {
    const identity = hostIdentity();
    return !unisolated() && identity.root
      ? { uid: identity.sandboxUid, gid: identity.sandboxGid }
      : undefined;
  };

  /** The user-mode network stack of a running sandbox, if it has one now. */
  const runningStackOf = async (target: CommandTarget) =>
    unisolated() ? undefined : (await liveHolder(target))?.stack;

  const requireRunning = (target: CommandTarget, operation: string): void => {
    if (target.record.state !== "running") {
      throw localError(
        "InvalidState",
        `${operation}: local sandbox ${target.id} is ${target.record.state}${target.record.state === "stopped" && isExpired(target.record) ? " (its time to live has passed)" : ""}; resume it first`,
      );
    }
  };

  const infoOf = (target: CommandTarget): DriverSandboxInfo => {
    const { record, paths } = target;
    let isolationMode: string;
    let isolationReason: string | undefined;
    try {
      const resolved = isolation();
      isolationMode = resolved.mode;
      isolationReason = resolved.reason;
    } catch (error) {
      isolationMode = "unavailable";
      isolationReason = (error as Error).message;
    }
    const identity = hostIdentity();
    const bwrap = isolationMode === "bwrap";
    const cgroup = recordedCgroup(target);
    const support = cgroupSupport();
    const limits = describeEnforcement(
      sandboxResources(record),
      cgroup ?? support,
      record.disk !== undefined
        ? { image: true, mount: record.disk === "fuse" ? "fuse" : "loop" }
        : { image: false, reason: bwrap ? diskReason() : "no isolation: commands write as the host user" },
    );
    const network = networkSupport(identity);
    const info: DriverSandboxInfo = {
      id: target.id,
      state: record.state,
      metadata: { ...record.metadata },
      createdAt: new Date(record.createdAt),
      raw: {
        isolation: isolationMode,
        ...(isolationReason === undefined ? {} : { isolationReason }),
        name: record.name,
        dir: paths.dir,
        workspace: paths.workspace,
        tmp: paths.tmp,
        home: paths.home,
        egress: record.egress,
        ports: [...record.ports],
        stateRoot: root,
        limits: { ...limits, ...(cgroup ? { cgroup, kernel: enforcedLimits(cgroup) } : {}) },
        ...(bwrap
          ? {
              user: {
                name: SANDBOX_USER.name,
                uid: SANDBOX_USER.uid,
                hostUid: identity.sandboxUid,
                home: SANDBOX_USER.home,
              },
              network:
                network.kind === "slirp4netns"
                  ? { mode: "user-mode", stack: "slirp4netns", hostLoopback: record.hostLoopback === true }
                  : // No stack of its own: the host's network only where the user accepted it, else none.
                    {
                      mode: record.egress === "allow-all" && record.hostNetwork === true ? "host" : "none",
                      reason: network.reason,
                    },
              seccomp: seccompProgram() ? "docker-like default" : `none (no filter for ${process.arch})`,
            }
          : {}),
      },
    };
    if (record.expiresAt !== undefined) info.expiresAt = new Date(record.expiresAt);
    return info;
  };

  const newRecord = (
    id: string,
    spec: SandboxSpec,
    egress: LocalEgress,
    ports: readonly number[],
  ): LocalSandboxRecord => ({
    resources: resolveResources(spec),
    ...(hostLoopback ? { hostLoopback } : {}),
    ...(hostNetwork ? { hostNetwork } : {}),
    version: 1,
    id,
    ...(spec.name === undefined ? {} : { name: spec.name }),
    createdAt: new Date().toISOString(),
    metadata: { ...(spec.metadata ?? {}) },
    env: { ...(spec.env ?? {}) },
    state: "running",
    ...(spec.ttlMs === undefined ? {} : { expiresAt: new Date(Date.now() + spec.ttlMs).toISOString() }),
    egress,
    ports: [...ports],
  });

  const runExec = async (
    sandbox: Sandbox,
    request: DriverExecRequest,
    output: DriverOutputCallbacks,
    operation: string,
  ) => {
    const target = await load(sandbox.id);
    requireRunning(target, operation);
    return runForeground(context(), target, request, output);
  };

  const background = () => ({ ...context(), registry });

  const driver: ProviderDriver<LocalSandboxHandle> = {
    async doCreate(spec, { signal }) {
      throwIfAborted(signal, "create");
      rejectUnhonoured(spec);
      const egressPolicy: EgressPolicy | undefined = spec.network?.egress ?? options.network?.egress;
      if (egressPolicy !== undefined && typeof egressPolicy !== "string") {
        throw localError(
          "NotSupported",
          "egress allow-lists are not supported by the local provider (only allow-all and block-all)",
        );
      }
      isolation();
      // Once per provider: what a program that died while destroying left behind is finished.
      sweptRoot ??= readdir(root)
        .then((names) => finishAbandonedDestroys(root, names))
        .catch(() => {});
      await sweptRoot;
      const egress = grantEgress(egressPolicy, "create");
      checkMounts();
      const record = newRecord("pending", spec, egress, []);
      const support = cgroupSupport();
      if (support.kind === "none") warnAboutRlimits(support.reason);
      const ports = [...new Set((spec.ports ?? []).map(validatePort))];
      if (ports.length > 0 && egress === "block-all") {
        if (egressPolicy === undefined) throw noNetworkError(networkReason(), "create with ports");
        throw localError(
          "Validation",
          "ports cannot be exposed when egress is blocked: the sandbox has its own network namespace",
        );
      }
      const id = newLocalId();
      const paths = sandboxPaths(root, id);
      await mkdir(root, { recursive: true, mode: 0o700 });
      const disk = diskFor();
      const created = { ...record, id, ports, ...disk.field };
      await createSandboxDirectories(paths, created, sandboxOwner(), disk.support);
      // The limits exist from the start (they are read back by getInfo), not from the first command.
      try {
        await sandboxCgroupFor({ id, paths, record: created }, created.resources!);
      } catch (error) {
        // A create that fails leaves nothing: no directory, no disk mounted (nor its daemon).
        await removeSandboxDirectory(paths).catch(() => {});
        throw error;
      }
      if (created.expiresAt !== undefined) expiry.arm(id, Date.parse(created.expiresAt));
      return handleOf(id, root, unisolated(), created.disk);
    },

    async doConnect(id, { signal }) {
      throwIfAborted(signal, "connect");
      const target = await load(assertLocalId(id));
      return handleOf(id, root, unisolated(), target.record.disk);
    },

    async doDestroy(sandbox, { signal }) {
      throwIfAborted(signal, "destroy");
      const paths = sandboxPaths(root, sandbox.id);
      let target: CommandTarget;
      try {
        target = await load(sandbox.id, false);
      } catch (error) {
        if ((error as { code?: string }).code === "NotFound") return;
        throw error;
      }
      expiry.disarm(sandbox.id);
      holders.forget(paths.dir);
      await destroySandbox(target);
    },

    async doGetInfo(sandbox, { signal }) {
      throwIfAborted(signal, "getInfo");
      return infoOf(await load(sandbox.id));
    },

    async doExec(sandbox, request): Promise<DriverExecResult> {
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      const exit = await runExec(
        sandbox,
        request,
        {
          onStdout: (chunk) => stdout.push(Buffer.from(chunk as Uint8Array)),
          onStderr: (chunk) => stderr.push(Buffer.from(chunk as Uint8Array)),
        },
        "exec",
      );
      return { ...exit, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr) };
    },

    doExecStream: (sandbox, request) => runExec(sandbox, request, request, "exec"),

    async doSpawn(sandbox, request) {
      const target = await load(sandbox.id);
      requireRunning(target, "spawn");
      return spawnBackground(background(), target, request);
    },

    async doListProcesses(sandbox, { signal }) {
      throwIfAborted(signal, "commands.list");
      return listBackground(await load(sandbox.id));
    },

    async doConnectProcess(sandbox, pid, request) {
      throwIfAborted(request.signal, "commands.connect");
      return connectBackground(background(), await load(sandbox.id), pid, request);
    },

    async doKillProcess(sandbox, pid, signal, { signal: abort }) {
      throwIfAborted(abort, "commands.kill");
      await killBackground(background(), await load(sandbox.id), pid, signal);
    },

    async doCreatePty(sandbox, request) {
      const target = await load(sandbox.id);
      requireRunning(target, "pty.create");
      return createPty(context(), target, request);
    },

    async doReadFile(sandbox, path, { signal }) {
      return readSandboxFile(viewOf(await loadFiles(sandbox.id), isolation()), path, signal);
    },
    async doWriteFile(sandbox, path, data, options) {
      return writeSandboxFile(viewOf(await loadFiles(sandbox.id), isolation()), path, data, options);
    },
    async doReadFileStream(sandbox, path, { signal }) {
      return readSandboxFileStream(viewOf(await loadFiles(sandbox.id), isolation()), path, signal);
    },
    async doWriteFileStream(sandbox, path, data, options) {
      return writeSandboxFileStream(viewOf(await loadFiles(sandbox.id), isolation()), path, data, options);
    },
    async doListFiles(sandbox, path, { signal }) {
      return listSandboxDirectory(viewOf(await loadFiles(sandbox.id), isolation()), path, signal);
    },
    async doStat(sandbox, path, { signal }) {
      return statSandboxPath(viewOf(await loadFiles(sandbox.id), isolation()), path, signal);
    },
    async doMkdir(sandbox, path, options) {
      return makeSandboxDirectory(viewOf(await loadFiles(sandbox.id), isolation()), path, options);
    },
    async doRemove(sandbox, path, options) {
      return removeSandboxPath(viewOf(await loadFiles(sandbox.id), isolation()), path, options);
    },
    async doRename(sandbox, from, to, { signal }) {
      return renameSandboxPath(viewOf(await loadFiles(sandbox.id), isolation()), from, to, signal);
    },
    async doWatch(sandbox, path, options) {
      return watchSandboxPath(viewOf(await loadFiles(sandbox.id), isolation()), path, options);
    },

    doList: (filter: ListFilter, { signal }: DriverCallOptions) => listSandboxes(filter, signal),

    async doStop(sandbox, { signal }) {
      throwIfAborted(signal, "stop");
      const target = await load(sandbox.id, false);
      await stopSandbox(target);
      holders.forget(target.paths.dir);
    },
    async doPause(sandbox, { signal }) {
      throwIfAborted(signal, "pause");
      const target = await load(sandbox.id);
      if (target.record.state === "paused") return;
      const resolved = isolation();
      await pauseSandbox(
        target,
        resolved.mode === "bwrap" ? [resolved.bwrapPath, resolved.programs.nsenter] : [],
      );
    },
    async doResume(sandbox, { signal }) {
      throwIfAborted(signal, "resume");
      const target = await load(sandbox.id, false);
      // A sandbox whose time ran out stays stopped until it gets a new time to live.
      if (isExpired(target.record)) {
        throw localError(
          "InvalidState",
          `local sandbox ${sandbox.id} has expired; call setTimeout() to give it more time first`,
        );
      }
      if (target.record.state === "running") return;
      await resumeSandbox(target);
    },
    async doSetTimeout(sandbox, ttlMs, { signal }) {
      throwIfAborted(signal, "setTimeout");
      if (typeof ttlMs !== "number" || !Number.isFinite(ttlMs) || ttlMs <= 0) {
        throw localError("Validation", "ttlMs must be a positive number of milliseconds");
      }
      const target = await load(sandbox.id, false);
      const expiresAt = Date.now() + ttlMs;
      await updateRecord(target.paths, target.id, (record) => ({
        ...record,
        expiresAt: new Date(expiresAt).toISOString(),
      }));
      expiry.arm(target.id, expiresAt);
    },
    async doMetrics(sandbox, { signal }) {
      return sandboxMetrics(await load(sandbox.id), signal);
    },

    async doExposePort(sandbox, port, { signal, private: isPrivate }) {
      throwIfAborted(signal, "ports.expose");
      validatePort(port);
      if (isPrivate)
        throw localError("NotSupported", "private ports are not supported by the local provider");
      const target = await load(sandbox.id);
      if (target.record.egress === "block-all") {
        throw localError(
          "InvalidState",
          "ports cannot be exposed while egress is blocked: the sandbox's network namespace is unreachable from the host",
        );
      }
      // With the user-mode network a running sandbox gets the forward at once; one started later gets
      // every recorded port when its network starts.
      const stack = await runningStackOf(target);
      if (stack) await addPortForward(stack, port);
      await updateRecord(target.paths, target.id, (record) => ({
        ...record,
        ports: record.ports.includes(port) ? record.ports : [...record.ports, port],
      }));
      return { port, url: urlOf(port) };
    },
    async doListPorts(sandbox, { signal }) {
      throwIfAborted(signal, "ports.list");
      const target = await load(sandbox.id);
      return target.record.ports.map((port): PortInfo => ({ port, url: urlOf(port) }));
    },
    async doUnexposePort(sandbox, port, { signal }) {
      throwIfAborted(signal, "ports.unexpose");
      const target = await load(sandbox.id);
      const stack = await runningStackOf(target);
      if (stack) await removePortForward(stack, port);
      await updateRecord(target.paths, target.id, (record) => ({
        ...record,
        ports: record.ports.filter((p) => p !== port),
      }));
    },
    async doFetchPort(sandbox, port, request) {
      validatePort(port);
      const target = await load(sandbox.id);
      if (target.record.egress === "block-all") {
        throw localError("InvalidState", "the sandbox's ports are unreachable while its egress is blocked");
      }
      const source = new URL(request.url);
      const init: RequestInit & { duplex?: "half" } = {
        method: request.method,
        headers: request.headers,
        redirect: "manual",
        signal: request.signal,
      };
      if (request.body) {
        init.body = request.body;
        init.duplex = "half";
      }
      return fetch(`${urlOf(port)}${source.pathname}${source.search}`, init);
    },

    async doCreateSnapshot(sandbox, { signal, name }) {
      throwIfAborted(signal, "snapshots.create");
      return createSnapshot((await loadFiles(sandbox.id)).paths, name);
    },
    async doRestoreSnapshot(sandbox, ref, { signal }) {
      throwIfAborted(signal, "snapshots.restore");
      await restoreSnapshot((await loadFiles(sandbox.id)).paths, ref, sandboxOwner());
    },
    async doListSnapshots(sandbox, { signal }) {
      throwIfAborted(signal, "snapshots.list");
      return listSnapshots((await load(sandbox.id)).paths);
    },
    async doDeleteSnapshot(sandbox, ref, { signal }) {
      throwIfAborted(signal, "snapshots.delete");
      await deleteSnapshot((await load(sandbox.id)).paths, ref);
    },
    async doFork(sandbox, { signal, count }) {
      throwIfAborted(signal, "fork");
      if (!Number.isInteger(count) || count < 1 || count > MAX_FORK_COUNT) {
        throw localError("Validation", `fork count must be an integer from 1 to ${MAX_FORK_COUNT}`);
      }
      const source = await loadFiles(sandbox.id);
      const disk = diskFor();
      const forks: Sandbox[] = [];
      try {
        for (let i = 0; i < count; i++) {
          throwIfAborted(signal, "fork");
          const id = newLocalId();
          const paths = sandboxPaths(root, id);
          // Ports are host ports: a copy cannot hold the same ones.
          const { disk: _sourceDisk, ...inherited } = source.record;
          await createSandboxDirectories(
            paths,
            {
              ...inherited,
              ...disk.field,
              id,
              createdAt: new Date().toISOString(),
              state: "running",
              ports: [],
            },
            sandboxOwner(),
            disk.support,
          );
          forks.push(handleOf(id, root, unisolated(), disk.field.disk));
          await copyTree(source.paths.workspace, pathsWithDisk(paths, disk.field).workspace, sandboxOwner());
        }
      } catch (error) {
        await Promise.all(
          forks.map((fork) => removeSandboxDirectory(sandboxPaths(root, fork.id)).catch(() => {})),
        );
        throw error;
      }
      return forks;
    },

    doDispose: async () => {
      expiry.clear();
      registry.detachAll();
      holders.clear();
    },
  };

  let sweptRoot: Promise<void> | undefined;

  async function* listSandboxes(filter: ListFilter, signal: AbortSignal): AsyncGenerator<DriverSandboxInfo> {
    let names: string[];
    try {
      names = await readdir(root);
    } catch (error) {
      if ((error as { code?: string }).code === "ENOENT") return;
      throw localError("Provider", `cannot read the state root ${root}`, error);
    }
    await finishAbandonedDestroys(root, names);
    const states =
      filter.state === undefined ? undefined : Array.isArray(filter.state) ? filter.state : [filter.state];
    for (const name of names.sort()) {
      throwIfAborted(signal, "list");
      let id: string;
      try {
        id = assertLocalId(name);
      } catch {
        continue; // not a sandbox (a directory being deleted, a stray file)
      }
      let target: CommandTarget;
      try {
        // Listing never stops anything: client.reap() must still see expired sandboxes as running.
        target = await load(id, false);
      } catch {
        continue; // destroyed meanwhile, or not a sandbox
      }
      const info = infoOf(target);
      if (states && !states.includes(info.state)) continue;
      if (
        filter.metadata &&
        Object.entries(filter.metadata).some(([key, value]) => info.metadata[key] !== value)
      )
        continue;
      yield info;
    }
  }

  const honours: LocalHonouredField[] = ["name", "env", "metadata", "ttlMs", "ports"];
  if (egressCapable) honours.push("network");
  const declaration = {
    specificationVersion: "v1" as const,
    name: LOCAL_PROVIDER_NAME,
    flags: localFlags,
    honours,
    ...(requested === "bwrap" ? { workdir: "/workspace" } : {}),
    // Its execs hand `handle.kill()` a way to signal the command's tree (local-exec.ts).
    execSignals: true,
    // What a driver method throws leaves through here (defineProvider): errno codes a sandbox on disk gives.
    mapError: (error: unknown, { operation }: { operation: string }) => toLocalError(error, operation),
  };
  if (egressCapable) {
    return defineProvider({
      ...declaration,
      capabilities: localCapabilities,
      ...driver,
      async doSetEgress(sandbox, policy, { signal }) {
        throwIfAborted(signal, "network.setEgress");
        if (typeof policy !== "string") {
          throw localError(
            "NotSupported",
            "egress allow-lists are not supported by the local provider (only allow-all and block-all)",
          );
        }
        grantEgress(policy, "network.setEgress");
        const target = await load(sandbox.id);
        if (policy === "block-all" && target.record.ports.length > 0) {
          throw localError(
            "InvalidState",
            `unexpose ports ${target.record.ports.join(", ")} first: they cannot be reached once egress is blocked`,
          );
        }
        const updated = await updateRecord(target.paths, target.id, (record) => ({
          ...record,
          egress: policy,
          // This provider accepted the host's network for allow-all: commands of the sandbox may use it.
          ...(hostNetwork ? { hostNetwork } : {}),
        }));
        const resolved = isolation();
        if (resolved.mode === "bwrap") await applyEgress(resolved, { ...target, record: updated });
      },
    }) as LocalProvider<typeof localCapabilities>;
  }
  return defineProvider({
    ...declaration,
    capabilities: localUnisolatedCapabilities,
    ...driver,
  }) as LocalProvider<typeof localUnisolatedCapabilities>;
}
