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
import { guardLocal, LOCAL_PROVIDER_NAME, localError, throwIfAborted } from "./local-errors.js";
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
import { addPortForward, networkSupport, removePortForward } from "./local-network.js";
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
  /** Host directory behind `/workspace`. */
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
function handleOf(id: string, root: string, unisolated: boolean): Sandbox {
  const paths = sandboxPaths(root, id);
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
  const settings = (): CommandSettings => ({
    shell,
    // Under bubblewrap the host's PATH names directories the sandbox does not have (a user's ~/.local/bin).
    path: options.path ?? (unisolated() ? (process.env.PATH ?? DEFAULT_PATH) : DEFAULT_PATH),
    mounts,
    stateRoot: root,
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

  const requireEgress = (egress: LocalEgress, operation: string) => {
    if (egress !== "block-all") return;
    const resolved = isolation();
    if (resolved.mode !== "bwrap") {
      throw localError(
        "NotSupported",
        `${operation}: blocking egress needs bubblewrap's network namespace, and this provider runs without isolation (${resolved.reason})`,
      );
    }
  };

  /** Loads a sandbox fresh from disk; an expired one is stopped first (unless the caller is the stop itself). */
  const loadNow = async (id: string, enforceExpiry = true): Promise<CommandTarget> => {
    const paths = sandboxPaths(root, assertLocalId(id));
    let record = await readRecord(paths, id);
    if (enforceExpiry && record.state !== "stopped" && isExpired(record)) {
      record = await stopSandbox({ id, paths, record });
      holders.forget(paths.dir);
    }
    return { id, paths, record };
  };

  // Loading an expired sandbox stops it: the timer only has to load it when its time is up.
  const expiry = new LocalExpiryTimers((id) => loadNow(id));
  /** {@link loadNow}, once a stop the sandbox's expiry timer started has finished. */
  const load = async (id: string, enforceExpiry = true): Promise<CommandTarget> => {
    await expiry.settled(id);
    return loadNow(id, enforceExpiry);
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
    const limits = describeEnforcement(sandboxResources(record), cgroup ?? support);
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
                  : { mode: "host", reason: network.reason },
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
    doCreate: (spec, { signal }) =>
      guardLocal("create", async () => {
        throwIfAborted(signal, "create");
        rejectUnhonoured(spec);
        const egressPolicy: EgressPolicy = spec.network?.egress ?? options.network?.egress ?? "allow-all";
        if (typeof egressPolicy !== "string") {
          throw localError(
            "NotSupported",
            "egress allow-lists are not supported by the local provider (only allow-all and block-all)",
          );
        }
        const egress: LocalEgress = egressPolicy;
        isolation();
        // Once per provider: what a program that died while destroying left behind is finished.
        sweptRoot ??= readdir(root)
          .then((names) => finishAbandonedDestroys(root, names))
          .catch(() => {});
        await sweptRoot;
        requireEgress(egress, "create");
        checkMounts();
        const record = newRecord("pending", spec, egress, []);
        const support = cgroupSupport();
        if (support.kind === "none") warnAboutRlimits(support.reason);
        const ports = [...new Set((spec.ports ?? []).map(validatePort))];
        if (ports.length > 0 && egress === "block-all") {
          throw localError(
            "Validation",
            "ports cannot be exposed when egress is blocked: the sandbox has its own network namespace",
          );
        }
        const id = newLocalId();
        const paths = sandboxPaths(root, id);
        await mkdir(root, { recursive: true, mode: 0o700 });
        const created = { ...record, id, ports };
        await createSandboxDirectories(paths, created, sandboxOwner());
        // The limits exist from the start (they are read back by getInfo), not from the first command.
        await sandboxCgroupFor({ id, paths, record: created }, created.resources!);
        if (created.expiresAt !== undefined) expiry.arm(id, Date.parse(created.expiresAt));
        return handleOf(id, root, unisolated());
      }),

    doConnect: (id, { signal }) =>
      guardLocal("connect", async () => {
        throwIfAborted(signal, "connect");
        await load(assertLocalId(id));
        return handleOf(id, root, unisolated());
      }),

    doDestroy: (sandbox, { signal }) =>
      guardLocal("destroy", async () => {
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
      }),

    doGetInfo: (sandbox, { signal }) =>
      guardLocal("getInfo", async () => {
        throwIfAborted(signal, "getInfo");
        return infoOf(await load(sandbox.id));
      }),

    doExec: (sandbox, request) =>
      guardLocal("exec", async (): Promise<DriverExecResult> => {
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
      }),

    doExecStream: (sandbox, request) => guardLocal("exec", () => runExec(sandbox, request, request, "exec")),

    doSpawn: (sandbox, request) =>
      guardLocal("spawn", async () => {
        const target = await load(sandbox.id);
        requireRunning(target, "spawn");
        return spawnBackground(background(), target, request);
      }),

    doListProcesses: (sandbox, { signal }) =>
      guardLocal("commands.list", async () => {
        throwIfAborted(signal, "commands.list");
        return listBackground(await load(sandbox.id));
      }),

    doConnectProcess: (sandbox, pid, request) =>
      guardLocal("commands.connect", async () => {
        throwIfAborted(request.signal, "commands.connect");
        return connectBackground(background(), await load(sandbox.id), pid, request);
      }),

    doKillProcess: (sandbox, pid, signal, { signal: abort }) =>
      guardLocal("commands.kill", async () => {
        throwIfAborted(abort, "commands.kill");
        await killBackground(background(), await load(sandbox.id), pid, signal);
      }),

    doCreatePty: (sandbox, request) =>
      guardLocal("pty.create", async () => {
        const target = await load(sandbox.id);
        requireRunning(target, "pty.create");
        return createPty(context(), target, request);
      }),

    doReadFile: (sandbox, path, { signal }) =>
      guardLocal(`files.read ${path}`, async () =>
        readSandboxFile(viewOf(await load(sandbox.id), isolation()), path, signal),
      ),
    doWriteFile: (sandbox, path, data, options) =>
      guardLocal(`files.write ${path}`, async () =>
        writeSandboxFile(viewOf(await load(sandbox.id), isolation()), path, data, options),
      ),
    doReadFileStream: (sandbox, path, { signal }) =>
      guardLocal(`files.readStream ${path}`, async () =>
        readSandboxFileStream(viewOf(await load(sandbox.id), isolation()), path, signal),
      ),
    doWriteFileStream: (sandbox, path, data, options) =>
      guardLocal(`files.write ${path}`, async () =>
        writeSandboxFileStream(viewOf(await load(sandbox.id), isolation()), path, data, options),
      ),
    doListFiles: (sandbox, path, { signal }) =>
      guardLocal(`files.list ${path}`, async () =>
        listSandboxDirectory(viewOf(await load(sandbox.id), isolation()), path, signal),
      ),
    doStat: (sandbox, path, { signal }) =>
      guardLocal(`files.stat ${path}`, async () =>
        statSandboxPath(viewOf(await load(sandbox.id), isolation()), path, signal),
      ),
    doMkdir: (sandbox, path, options) =>
      guardLocal(`files.mkdir ${path}`, async () =>
        makeSandboxDirectory(viewOf(await load(sandbox.id), isolation()), path, options),
      ),
    doRemove: (sandbox, path, options) =>
      guardLocal(`files.remove ${path}`, async () =>
        removeSandboxPath(viewOf(await load(sandbox.id), isolation()), path, options),
      ),
    doRename: (sandbox, from, to, { signal }) =>
      guardLocal(`files.rename ${from}`, async () =>
        renameSandboxPath(viewOf(await load(sandbox.id), isolation()), from, to, signal),
      ),
    doWatch: (sandbox, path, options) =>
      guardLocal(`files.watch ${path}`, async () =>
        watchSandboxPath(viewOf(await load(sandbox.id), isolation()), path, options),
      ),

    doList: (filter: ListFilter, { signal }: DriverCallOptions) => listSandboxes(filter, signal),

    doStop: (sandbox, { signal }) =>
      guardLocal("stop", async () => {
        throwIfAborted(signal, "stop");
        const target = await load(sandbox.id, false);
        await stopSandbox(target);
        holders.forget(target.paths.dir);
      }),
    doPause: (sandbox, { signal }) =>
      guardLocal("pause", async () => {
        throwIfAborted(signal, "pause");
        const target = await load(sandbox.id);
        if (target.record.state === "paused") return;
        const resolved = isolation();
        await pauseSandbox(
          target,
          resolved.mode === "bwrap" ? [resolved.bwrapPath, resolved.programs.nsenter] : [],
        );
      }),
    doResume: (sandbox, { signal }) =>
      guardLocal("resume", async () => {
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
      }),
    doSetTimeout: (sandbox, ttlMs, { signal }) =>
      guardLocal("setTimeout", async () => {
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
      }),
    doMetrics: (sandbox, { signal }) =>
      guardLocal("metrics", async () => {
        return sandboxMetrics(await load(sandbox.id), signal);
      }),

    doExposePort: (sandbox, port, { signal, private: isPrivate }) =>
      guardLocal("ports.expose", async () => {
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
      }),
    doListPorts: (sandbox, { signal }) =>
      guardLocal("ports.list", async () => {
        throwIfAborted(signal, "ports.list");
        const target = await load(sandbox.id);
        return target.record.ports.map((port): PortInfo => ({ port, url: urlOf(port) }));
      }),
    doUnexposePort: (sandbox, port, { signal }) =>
      guardLocal("ports.unexpose", async () => {
        throwIfAborted(signal, "ports.unexpose");
        const target = await load(sandbox.id);
        const stack = await runningStackOf(target);
        if (stack) await removePortForward(stack, port);
        await updateRecord(target.paths, target.id, (record) => ({
          ...record,
          ports: record.ports.filter((p) => p !== port),
        }));
      }),
    doFetchPort: (sandbox, port, request) =>
      guardLocal("ports.fetch", async () => {
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
      }),

    doCreateSnapshot: (sandbox, { signal, name }) =>
      guardLocal("snapshots.create", async () => {
        throwIfAborted(signal, "snapshots.create");
        return createSnapshot((await load(sandbox.id)).paths, name);
      }),
    doRestoreSnapshot: (sandbox, ref, { signal }) =>
      guardLocal("snapshots.restore", async () => {
        throwIfAborted(signal, "snapshots.restore");
        await restoreSnapshot((await load(sandbox.id)).paths, ref, sandboxOwner());
      }),
    doListSnapshots: (sandbox, { signal }) =>
      guardLocal("snapshots.list", async () => {
        throwIfAborted(signal, "snapshots.list");
        return listSnapshots((await load(sandbox.id)).paths);
      }),
    doDeleteSnapshot: (sandbox, ref, { signal }) =>
      guardLocal("snapshots.delete", async () => {
        throwIfAborted(signal, "snapshots.delete");
        await deleteSnapshot((await load(sandbox.id)).paths, ref);
      }),
    doFork: (sandbox, { signal, count }) =>
      guardLocal("fork", async () => {
        throwIfAborted(signal, "fork");
        if (!Number.isInteger(count) || count < 1 || count > MAX_FORK_COUNT) {
          throw localError("Validation", `fork count must be an integer from 1 to ${MAX_FORK_COUNT}`);
        }
        const source = await load(sandbox.id);
        const forks: Sandbox[] = [];
        try {
          for (let i = 0; i < count; i++) {
            throwIfAborted(signal, "fork");
            const id = newLocalId();
            const paths = sandboxPaths(root, id);
            // Ports are host ports: a copy cannot hold the same ones.
            await createSandboxDirectories(
              paths,
              { ...source.record, id, createdAt: new Date().toISOString(), state: "running", ports: [] },
              sandboxOwner(),
            );
            forks.push(handleOf(id, root, unisolated()));
            await copyTree(source.paths.workspace, paths.workspace, sandboxOwner());
          }
        } catch (error) {
          await Promise.all(
            forks.map((fork) => removeSandboxDirectory(sandboxPaths(root, fork.id)).catch(() => {})),
          );
          throw error;
        }
        return forks;
      }),

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
  };
  if (egressCapable) {
    return defineProvider({
      ...declaration,
      capabilities: localCapabilities,
      ...driver,
      doSetEgress: (sandbox, policy, { signal }) =>
        guardLocal("network.setEgress", async () => {
          throwIfAborted(signal, "network.setEgress");
          if (typeof policy !== "string") {
            throw localError(
              "NotSupported",
              "egress allow-lists are not supported by the local provider (only allow-all and block-all)",
            );
          }
          requireEgress(policy, "network.setEgress");
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
          }));
          const resolved = isolation();
          if (resolved.mode === "bwrap") await applyEgress(resolved, { ...target, record: updated });
        }),
    }) as LocalProvider<typeof localCapabilities>;
  }
  return defineProvider({
    ...declaration,
    capabilities: localUnisolatedCapabilities,
    ...driver,
  }) as LocalProvider<typeof localUnisolatedCapabilities>;
}
