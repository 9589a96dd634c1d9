import { randomBytes, randomUUID } from "node:crypto";
import { hostname } from "node:os";
import {
  createSandboxClient,
  type ExecResult,
  NotSupportedError,
  type RunOptions,
  type Sandbox,
  type SandboxClient,
  type SandboxClientOptions,
  SandboxError,
  type SandboxProvider,
  type SandboxState,
  toSandboxError,
} from "@sbox/core";
import { LeaseKeeper } from "./lease-keeper.js";
import { busyError, invalidState, ProvisionError } from "./manager-errors.js";
import type { ManagerInternals } from "./manager-internals.js";
import { NAMESPACE_LABEL, RECORD_LABEL } from "./manager-labels.js";
import type { ManagerSpec, SeedFile } from "./manager-spec.js";
import { prepareFiles, prepareSpec, prepareStart } from "./prepare-spec.js";
import { isMainRunning, ProvisionFailure, provision, readLogChunk, startMain } from "./provision.js";
import { type ReconcileReport, reconcileRecords, settleRecord, statusForState } from "./reconcile.js";
import {
  RECORD_ID_PATTERN,
  validateDuration,
  validateLabels,
  validateMetadata,
  validateOwner,
} from "./record-validation.js";
import { type RecordChanges, type WriterContext, writeRecord } from "./record-writer.js";
import { withFreshUrls } from "./refresh-urls.js";
import {
  type HistoryEntry,
  isTransitional,
  type RecordError,
  type RecordFilter,
  type SandboxRecord,
  type SandboxStatus,
} from "./sandbox-record.js";
import type { SandboxStore } from "./sandbox-store.js";

/** Options of {@link SandboxManager}. */
export interface SandboxManagerOptions {
  /** The providers sandboxes can be created with, by the key records store (e.g. `{ local: local() }`). */
  providers: Readonly<Record<string, SandboxProvider>>;
  /** Where records live: `sqliteStore()`, `postgresStore(...)` or `memoryStore()`. The caller closes it. */
  store: SandboxStore;
  /** Provider key used when `create` names none (default: the only provider, if there is exactly one). */
  defaultProvider?: string | undefined;
  /** Resume a stopped sandbox when `exec`, `getUrl`, `writeFiles` or `readFile` needs it running (default false). */
  autoResume?: boolean | undefined;
  /**
   * How long a call waits for another worker's transition on the same record before it fails with
   * `Conflict` (default 30 000 ms).
   */
  transitionTimeoutMs?: number | undefined;
  /**
   * How long a transition's lease lasts before `reconcile` may treat the transition as abandoned; renewed
   * every third of it while the transition runs (default 60 000 ms).
   */
  leaseMs?: number | undefined;
  /** The clock used for leases, expiry and timestamps (default `() => new Date()`). */
  now?: (() => Date) | undefined;
  /** Names this manager in leases and history (default `<hostname>:<pid>:<random>`). */
  workerId?: string | undefined;
  /**
   * Manager namespace, put on every sandbox as provider metadata: `reconcile` only looks at sandboxes of
   * its own namespace (default `"default"`).
   */
  namespace?: string | undefined;
  /** Passed to every `createSandboxClient` (retry, hooks, plugins, defaultMetadata...). */
  client?: Omit<SandboxClientOptions, "provider" | "fallback"> | undefined;
  /** How long the main process must stay up after `start` before the sandbox counts as running (default 300 ms). */
  startGraceMs?: number | undefined;
  /** Called after every change this manager writes (transitions, lease renewals, updates, reconcile). */
  onChange?: ((entry: HistoryEntry, record: SandboxRecord) => void) | undefined;
}

/** What `create` takes. */
export interface CreateSandboxInput {
  spec?: ManagerSpec | undefined;
  /** Provider key; default `defaultProvider`. */
  provider?: string | undefined;
  ownerId?: string | undefined;
  /** Record labels, filterable with `list({ labels })`. Keys: letters, digits, `._/-`. */
  labels?: Readonly<Record<string, string>> | undefined;
  /** Free JSON data kept with the record. */
  metadata?: Readonly<Record<string, unknown>> | undefined;
}

/** Options of `logs`. */
export interface LogsOptions {
  /** Keep reading as the log grows, until the sandbox stops or `signal` fires (default false). */
  follow?: boolean | undefined;
  /** Ends the iteration (without an error) when it fires. */
  signal?: AbortSignal | undefined;
  /** `"start"`: the main process (default); `"setup"`: the checkout and setup steps. */
  source?: "start" | "setup" | undefined;
  /** How often a follow polls for new output (default 250 ms). */
  pollMs?: number | undefined;
}

/** What `stopExpired` did. */
export interface StopExpiredResult {
  /** Records stopped because their time ran out. */
  stopped: SandboxRecord[];
  /** Records destroyed instead because their provider cannot stop. */
  destroyed: SandboxRecord[];
  /** Records that could not be stopped; the others were still handled. */
  failed: { id: string; error: SandboxError }[];
}

/** A file for `writeFiles`: `{ path, content, mode? }`, or a map of path to content. */
export type FilesInput = readonly SeedFile[] | Readonly<Record<string, string | Uint8Array>>;

interface TransitionPlan {
  name: string;
  /** Stable statuses the transition starts from. */
  from: readonly SandboxStatus[];
  /** The transitional status (leased) while it runs. */
  via: SandboxStatus;
  /** Statuses in which there is nothing to do (the call returns the record). */
  done: readonly SandboxStatus[];
  /** Checks made before taking the lease (capabilities). */
  precheck?: ((record: SandboxRecord) => void) | undefined;
  /** The provider work; returns the final changes (status included). */
  run(record: SandboxRecord, keeper: LeaseKeeper): Promise<RecordChanges>;
  /** Where the record goes when `run` fails. */
  rollback: (record: SandboxRecord) => SandboxStatus;
  /**
   * Ask the provider for the sandbox's live state first and correct a record that no longer matches it
   * (a sandbox paused or resumed behind the manager's back), so the transition starts from the truth.
   */
  followLive?: boolean | undefined;
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

function invalid(message: string): SandboxError {
  return new SandboxError("Validation", message, { retryable: false });
}

function errorOf(error: unknown, at: Date): RecordError {
  if (error instanceof ProvisionFailure) return { ...error.detail, at };
  if (error instanceof ProvisionError) return error.failure;
  const wrapped = toSandboxError(error);
  return { code: wrapped.code, message: wrapped.message, at };
}

/**
 * Durable sandbox records over any sbox provider. Every status change is a compare-and-set on the
 * record's version; transitional statuses (`creating`, `starting`, `stopping`, `resuming`, `destroying`)
 * are leases, so two workers — in one process or on many machines sharing a store — never both resume or
 * both destroy the same sandbox. A call that finds another worker's transition in progress waits for it
 * (up to `transitionTimeoutMs`), then fails with `Conflict`. `reconcile` settles transitions whose
 * worker died and aligns records with what the providers report.
 *
 * ```ts
 * const manager = new SandboxManager({ providers: { local: local() }, store: sqliteStore() });
 * const record = await manager.create({ spec: { git: { url }, setup: ["npm ci"], start: "npm start", ports: [3000] } });
 * await manager.exec(record.id, "npm test");
 * ```
 */
export class SandboxManager {
  readonly #providers: Readonly<Record<string, SandboxProvider>>;
  readonly #store: SandboxStore;
  readonly #defaultProvider: string | undefined;
  readonly #autoResume: boolean;
  readonly #transitionTimeoutMs: number;
  readonly #leaseMs: number;
  readonly #now: () => Date;
  readonly #clientOptions: Omit<SandboxClientOptions, "provider" | "fallback">;
  readonly #startGraceMs: number;
  readonly #clients = new Map<string, SandboxClient>();
  readonly #sandboxes = new Map<string, { sandboxId: string; sandbox: Promise<Sandbox> }>();
  readonly #writer: WriterContext;
  readonly #internals: ManagerInternals;
  /** The id this manager writes into leases and history. */
  readonly workerId: string;
  /** The namespace label value put on every sandbox. */
  readonly namespace: string;

  constructor(options: SandboxManagerOptions) {
    if (typeof options !== "object" || options === null)
      throw invalid("SandboxManager options must be an object");
    const { providers, store } = options;
    if (typeof providers !== "object" || providers === null || Object.keys(providers).length === 0) {
      throw invalid("SandboxManager needs at least one provider: { providers: { local: local() } }");
    }
    for (const [key, provider] of Object.entries(providers)) {
      if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(key))
        throw invalid(`provider key ${JSON.stringify(key)} is invalid`);
      if (typeof provider !== "object" || provider === null || typeof provider.doCreate !== "function") {
        throw invalid(`providers.${key} is not a provider`);
      }
    }
    if (typeof store !== "object" || store === null || typeof store.update !== "function") {
      throw invalid("SandboxManager needs a store: sqliteStore(), postgresStore(...) or memoryStore()");
    }
    if (options.defaultProvider !== undefined && !Object.hasOwn(providers, options.defaultProvider)) {
      throw invalid(`defaultProvider ${JSON.stringify(options.defaultProvider)} is not among the providers`);
    }
    this.#providers = providers;
    this.#store = store;
    const keys = Object.keys(providers);
    this.#defaultProvider = options.defaultProvider ?? (keys.length === 1 ? keys[0] : undefined);
    this.#autoResume = options.autoResume ?? false;
    this.#transitionTimeoutMs =
      options.transitionTimeoutMs === undefined
        ? 30_000
        : validateDuration(options.transitionTimeoutMs, "transitionTimeoutMs");
    this.#leaseMs = options.leaseMs === undefined ? 60_000 : validateDuration(options.leaseMs, "leaseMs");
    this.#startGraceMs = options.startGraceMs ?? 300;
    this.#now = options.now ?? (() => new Date());
    this.#clientOptions = options.client ?? {};
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
    this.namespace = options.namespace ?? "default";
    if (typeof this.namespace !== "string" || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(this.namespace)) {
      throw invalid("namespace must be 1-63 letters, digits, '.', '_' or '-'");
    }
    const onChange = options.onChange;
    this.#writer = {
      store,
      actor: this.workerId,
      now: this.#now,
      onChange: (entry, record) => {
        try {
          onChange?.(entry, record);
        } catch {
          // An observer's failure must not undo or fail a write that already happened.
        }
      },
    };
    this.#internals = {
      writer: this.#writer,
      store,
      leaseMs: this.#leaseMs,
      namespace: this.namespace,
      startGraceMs: this.#startGraceMs,
      providerKeys: () => Object.keys(this.#providers),
      clientOf: (key) => this.#clientOf(key),
      sandboxOf: (record) => this.#sandboxOf(record),
      forget: (id) => this.#sandboxes.delete(id),
      leaseExpired: (record) => this.#leaseExpired(record),
    };
  }

  #clientOf(key: string): SandboxClient {
    let client = this.#clients.get(key);
    if (!client) {
      const provider = this.#providers[key];
      if (!provider || !Object.hasOwn(this.#providers, key))
        throw invalid(`unknown provider ${JSON.stringify(key)}`);
      client = createSandboxClient({ ...this.#clientOptions, provider }) as unknown as SandboxClient;
      this.#clients.set(key, client);
    }
    return client;
  }

  #sandboxOf(record: SandboxRecord): Promise<Sandbox> {
    const sandboxId = record.sandboxId;
    if (!sandboxId) {
      return Promise.reject(
        new SandboxError("NotFound", `sandbox record ${record.id} has no sandbox yet`, { retryable: false }),
      );
    }
    const cached = this.#sandboxes.get(record.id);
    if (cached && cached.sandboxId === sandboxId) return cached.sandbox;
    const sandbox = this.#clientOf(record.provider).connect(sandboxId);
    this.#sandboxes.set(record.id, { sandboxId, sandbox });
    sandbox.catch(() => this.#sandboxes.delete(record.id));
    return sandbox;
  }

  #leaseExpired(record: SandboxRecord): boolean {
    return !record.lease || record.lease.expiresAt.getTime() <= this.#now().getTime();
  }

  #lease(): { owner: string; expiresAt: Date } {
    return { owner: this.workerId, expiresAt: new Date(this.#now().getTime() + this.#leaseMs) };
  }

  /** The record; `NotFound` when there is none. */
  async get(id: string): Promise<SandboxRecord> {
    if (typeof id !== "string" || id.length === 0) throw invalid("record id must be a non-empty string");
    const record = RECORD_ID_PATTERN.test(id) ? await this.#store.get(id) : undefined;
    if (!record)
      throw new SandboxError("NotFound", `no sandbox record ${JSON.stringify(id)}`, { retryable: false });
    return record;
  }

  /** The first record (oldest) matching the filter, or undefined. */
  async find(filter: RecordFilter): Promise<SandboxRecord | undefined> {
    const [first] = await this.#store.list({ ...filter, limit: 1 });
    return first;
  }

  /** Records matching every field of the filter, oldest first (destroyed ones included unless filtered out). */
  list(filter: RecordFilter = {}): Promise<SandboxRecord[]> {
    return this.#store.list(filter);
  }

  /** Every change of a record, oldest first. */
  history(id: string): Promise<HistoryEntry[]> {
    return this.#store.history(id);
  }

  /**
   * Creates a sandbox and its record: inserts the record (`creating`, leased), creates the sandbox with
   * the manager's labels, then (`starting`) clones, seeds files, runs setup, starts the main process and
   * exposes ports, and finally marks it `running`. A failure marks the record `failed` with the details
   * (step, exit code, output tail) and destroys the half-made sandbox; the error is a `ProvisionError`
   * for a failed checkout/setup/start, the provider's `SandboxError` otherwise.
   */
  async create(input: CreateSandboxInput = {}): Promise<SandboxRecord> {
    if (typeof input !== "object" || input === null) throw invalid("create input must be an object");
    for (const key of Object.keys(input)) {
      if (!["spec", "provider", "ownerId", "labels", "metadata"].includes(key))
        throw invalid(`create: unknown field ${JSON.stringify(key)}`);
    }
    const providerKey = input.provider ?? this.#defaultProvider;
    if (providerKey === undefined) {
      throw invalid(
        `create: name a provider (one of ${Object.keys(this.#providers).join(", ")}) or set defaultProvider`,
      );
    }
    const provider = this.#providers[providerKey];
    if (!provider || !Object.hasOwn(this.#providers, providerKey))
      throw invalid(`create: unknown provider ${JSON.stringify(providerKey)}`);
    const labels = validateLabels(input.labels);
    const ownerId = validateOwner(input.ownerId);
    const metadata = validateMetadata(input.metadata);
    const prepared = prepareSpec(input.spec ?? {}, provider);
    const client = this.#clientOf(providerKey);

    const id = `sbx_${randomUUID().replaceAll("-", "")}`;
    const at = this.#now();
    const record: SandboxRecord = {
      id,
      version: 1,
      status: "creating",
      provider: providerKey,
      sandboxId: null,
      ownerId,
      labels,
      metadata,
      spec: prepared.stored,
      lease: this.#lease(),
      error: null,
      runtime: {},
      createdAt: at,
      updatedAt: at,
      expiresAt: prepared.ttlMs === undefined ? null : new Date(at.getTime() + prepared.ttlMs),
    };
    const entry: HistoryEntry = {
      recordId: id,
      version: 1,
      kind: "create",
      fromStatus: null,
      toStatus: "creating",
      actor: this.workerId,
      at,
      detail: `create on ${providerKey}`,
    };
    await this.#store.insert(record, entry);
    this.#writer.onChange(entry, record);

    const keeper = new LeaseKeeper(this.#writer, record, this.#leaseMs);
    let sandbox: Sandbox | undefined;
    try {
      sandbox = await client.create({
        ...prepared.providerSpec,
        metadata: {
          ...(prepared.providerSpec.metadata ?? {}),
          [RECORD_LABEL]: id,
          [NAMESPACE_LABEL]: this.namespace,
        },
        idempotencyKey: id,
      });
      this.#sandboxes.set(id, { sandboxId: sandbox.id, sandbox: Promise.resolve(sandbox) });
      await keeper.write(
        { status: "starting", sandboxId: sandbox.id },
        "transition",
        `provider created ${sandbox.id}`,
      );
      const runtime = await provision(sandbox, prepared, {
        startGraceMs: this.#startGraceMs,
        onRuntime: async (known) => {
          await keeper.write({ runtime: known }, "update", "setup log ready");
        },
      });
      return await keeper.write({ status: "running", runtime, lease: null }, "transition", "provisioned");
    } catch (error) {
      const failure = errorOf(error, this.#now());
      if (sandbox) {
        // Never leave a half-provisioned sandbox running: the record keeps what went wrong.
        await sandbox.destroy().catch(() => {});
        this.#sandboxes.delete(id);
      }
      // Throws (ignored) when reconcile took the lease over: the record is then settled by it.
      await keeper
        .write(
          { status: "failed", lease: null, error: failure },
          "transition",
          `create failed: ${failure.code}`,
        )
        .catch(() => {});
      if (error instanceof ProvisionFailure) {
        throw new ProvisionError(id, failure, { provider: provider.name, cause: error.cause });
      }
      throw toSandboxError(error, { provider: provider.name, operation: "create" });
    } finally {
      await keeper.stop();
    }
  }

  /** Waits (bounded) until the record is in a stable status; settles it when its lease expired. */
  async #waitStable(id: string, operation: string): Promise<SandboxRecord> {
    const started = Date.now();
    let delay = 10;
    let settleError: unknown;
    for (;;) {
      const record = await this.get(id);
      if (!isTransitional(record.status)) return record;
      const waited = Date.now() - started;
      if (this.#leaseExpired(record) && settleError === undefined) {
        try {
          await settleRecord(this.#internals, record);
        } catch (error) {
          settleError = error;
        }
        continue;
      }
      if (waited >= this.#transitionTimeoutMs) throw busyError(record, operation, waited, settleError);
      await sleep(Math.min(delay, this.#transitionTimeoutMs - waited));
      delay = Math.min(delay * 2, 250);
    }
  }

  /**
   * The record, corrected to the provider's live state when they disagree on running versus stopped
   * (or paused, which the manager counts as stopped). The correction is a compare-and-set like any write.
   */
  async #followLive(record: SandboxRecord): Promise<SandboxRecord> {
    if (!record.sandboxId || (record.status !== "running" && record.status !== "stopped")) return record;
    let state: SandboxState;
    try {
      state = (await (await this.#sandboxOf(record)).getInfo()).state;
    } catch {
      // The transition itself will meet (and report) whatever is wrong with the sandbox.
      return record;
    }
    const live = statusForState(state);
    if ((live !== "running" && live !== "stopped") || live === record.status) return record;
    const aligned = await writeRecord(
      this.#writer,
      record,
      { status: live },
      "reconcile",
      `the provider reports ${state}`,
    );
    return aligned ?? (await this.get(record.id));
  }

  async #transition(id: string, plan: TransitionPlan): Promise<SandboxRecord> {
    for (;;) {
      const stable = await this.#waitStable(id, plan.name);
      const record = plan.followLive ? await this.#followLive(stable) : stable;
      if (isTransitional(record.status)) continue;
      if (plan.done.includes(record.status)) return record;
      if (!plan.from.includes(record.status)) throw invalidState(record, plan.name);
      plan.precheck?.(record);
      const leased = await writeRecord(
        this.#writer,
        record,
        { status: plan.via, lease: this.#lease() },
        "transition",
        plan.name,
      );
      // Someone else changed the record between our read and our write: look again.
      if (!leased) continue;
      const keeper = new LeaseKeeper(this.#writer, leased, this.#leaseMs);
      try {
        const changes = await plan.run(record, keeper);
        return await keeper.write({ ...changes, lease: null }, "transition", plan.name);
      } catch (error) {
        const failure = errorOf(error, this.#now());
        await keeper
          .write(
            { status: plan.rollback(record), lease: null, error: failure },
            "transition",
            `${plan.name} failed: ${failure.code}`,
          )
          .catch(() => {});
        if (error instanceof ProvisionFailure) throw new ProvisionError(id, failure, { cause: error.cause });
        throw toSandboxError(error, { operation: plan.name });
      } finally {
        await keeper.stop();
      }
    }
  }

  /** Stops a running sandbox (`stopped`); stopping a stopped one returns it unchanged. Uses `pause` where the provider cannot stop. */
  stop(id: string): Promise<SandboxRecord> {
    return this.#transition(id, {
      name: "stop",
      from: ["running"],
      via: "stopping",
      done: ["stopped"],
      precheck: (record) => {
        const map = this.#clientOf(record.provider).capabilities.map;
        if (map.stop === "unsupported" && map.pause === "unsupported")
          throw new NotSupportedError("stop", record.provider);
      },
      run: async (record) => {
        const sandbox = await this.#sandboxOf(record);
        if (sandbox.capabilities.map.stop !== "unsupported") await sandbox.stop();
        else await sandbox.pause();
        return { status: "stopped", error: null };
      },
      rollback: () => "running",
      followLive: true,
    });
  }

  /**
   * Pauses a running sandbox (processes frozen, `flags.preservesMemoryOnPause` says whether memory is
   * kept). The record becomes `stopped` — the manager counts a paused sandbox as stopped — and `resume`
   * continues it. Pausing a stopped one returns it unchanged.
   */
  pause(id: string): Promise<SandboxRecord> {
    return this.#transition(id, {
      name: "pause",
      from: ["running"],
      via: "stopping",
      done: ["stopped"],
      precheck: (record) => {
        if (this.#clientOf(record.provider).capabilities.map.pause === "unsupported")
          throw new NotSupportedError("pause", record.provider);
      },
      run: async (record) => {
        await (await this.#sandboxOf(record)).pause();
        return { status: "stopped", error: null };
      },
      rollback: () => "running",
      followLive: true,
    });
  }

  /**
   * Resumes a stopped (or paused) sandbox, asks the provider for its preview URLs again (they may have
   * changed: Docker publishes on new host ports) and restarts its main process if it is not running;
   * resuming a running one returns it unchanged. The provider's live state decides, not only the record:
   * a sandbox paused behind the manager's back is resumed. If the main process cannot be restarted, the
   * sandbox is stopped again and the record stays `stopped` with the error.
   */
  resume(id: string): Promise<SandboxRecord> {
    return this.#transition(id, {
      name: "resume",
      from: ["stopped"],
      via: "resuming",
      done: ["running"],
      run: async (record) => {
        const sandbox = await this.#sandboxOf(record);
        await sandbox.resume();
        const runtime = { ...(await withFreshUrls(sandbox, record.runtime)) };
        if (record.spec.start && !(await isMainRunning(sandbox, runtime.startPid))) {
          try {
            runtime.startPid = await startMain(sandbox, prepareStart(record.spec.start), runtime, {
              graceMs: this.#startGraceMs,
              secrets: [],
              defaultCwd: record.spec.git?.dir,
            });
          } catch (error) {
            await (sandbox.capabilities.map.stop !== "unsupported" ? sandbox.stop() : sandbox.pause()).catch(
              () => {},
            );
            throw error;
          }
        }
        return { status: "running", runtime, error: null };
      },
      rollback: () => "stopped",
      followLive: true,
    });
  }

  /**
   * Destroys the sandbox; the record is kept as `destroyed` (with its history). Destroying a destroyed
   * record returns it unchanged.
   */
  destroy(id: string): Promise<SandboxRecord> {
    return this.#transition(id, {
      name: "destroy",
      from: ["running", "stopped", "failed"],
      via: "destroying",
      done: ["destroyed"],
      run: async (record) => {
        if (record.sandboxId) {
          try {
            await (await this.#sandboxOf(record)).destroy();
          } catch (error) {
            if (toSandboxError(error).code !== "NotFound") throw error;
          }
        }
        this.#sandboxes.delete(record.id);
        return { status: "destroyed" };
      },
      rollback: (record) => record.status,
    });
  }

  /** A running record for an operation that needs the sandbox up (resuming it when `autoResume` is on). */
  async #usable(id: string, operation: string): Promise<{ record: SandboxRecord; sandbox: Sandbox }> {
    let record = await this.#waitStable(id, operation);
    if (record.status === "stopped" && this.#autoResume) record = await this.resume(id);
    if (record.status !== "running") {
      throw invalidState(
        record,
        operation,
        record.status === "stopped" ? "resume it first (or set autoResume)" : "",
      );
    }
    return { record, sandbox: await this.#sandboxOf(record) };
  }

  /** Runs a command in the sandbox; a non-zero exit is data, not an error. */
  async exec(id: string, command: string | readonly string[], options?: RunOptions): Promise<ExecResult> {
    const { sandbox } = await this.#usable(id, "exec");
    return await sandbox.commands.run(command, options);
  }

  /** The URL that reaches `port` inside the sandbox (exposing it first if needed). */
  async getUrl(id: string, port: number): Promise<string> {
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw invalid(`port must be an integer from 1 to 65535, got ${String(port)}`);
    const { record, sandbox } = await this.#usable(id, "getUrl");
    const known = record.runtime.urls?.[String(port)];
    if (known) return known;
    if (!sandbox.ports) throw new NotSupportedError("exposePort", record.provider);
    const { url } = await sandbox.ports.expose(port);
    await this.#update(id, "getUrl", (current) => ({
      runtime: { ...current.runtime, urls: { ...(current.runtime.urls ?? {}), [String(port)]: url } },
    })).catch(() => {});
    return url;
  }

  /** Writes files into the sandbox; relative paths resolve against its workdir. */
  async writeFiles(id: string, files: FilesInput): Promise<void> {
    if (typeof files !== "object" || files === null)
      throw invalid("writeFiles takes an array or a map of files");
    const list = prepareFiles(
      Array.isArray(files)
        ? files
        : Object.entries(files as Record<string, string | Uint8Array>).map(([path, content]) => ({
            path,
            content,
          })),
    );
    const { sandbox } = await this.#usable(id, "writeFiles");
    for (const file of list) {
      await sandbox.files.write(file.path, file.content, file.mode === undefined ? {} : { mode: file.mode });
    }
  }

  /** Reads a file from the sandbox (relative to its workdir); `NotFound` when it does not exist. */
  readFile(id: string, path: string): Promise<Uint8Array>;
  /** Reads a file from the sandbox as UTF-8 text. */
  readFile(id: string, path: string, options: { encoding: "utf8" }): Promise<string>;
  async readFile(
    id: string,
    path: string,
    options?: { encoding?: "utf8" | undefined },
  ): Promise<Uint8Array | string> {
    if (typeof path !== "string" || path.length === 0 || path.includes("\0"))
      throw invalid("path must be a non-empty string");
    const { sandbox } = await this.#usable(id, "readFile");
    return options?.encoding === "utf8" ? sandbox.files.readText(path) : sandbox.files.read(path);
  }

  /**
   * The output of the main process (or, with `source: "setup"`, of the checkout and setup steps), as
   * UTF-8 text chunks. With `follow`, keeps reading until the sandbox leaves `running` or `signal` fires.
   */
  logs(id: string, options: LogsOptions = {}): AsyncIterable<string> {
    const source = options.source ?? "start";
    if (source !== "start" && source !== "setup") throw invalid(`logs: source must be "start" or "setup"`);
    const pollMs = options.pollMs ?? 250;
    const follow = options.follow ?? false;
    const signal = options.signal;
    const manager = this;
    const chunkBytes = 256 * 1024;
    return {
      async *[Symbol.asyncIterator](): AsyncGenerator<string> {
        const decoder = new TextDecoder();
        let offset = 0;
        let record = await manager.get(id);
        if (source === "start" && !record.spec.start)
          throw invalidState(record, "logs", "its spec has no start process");
        for (;;) {
          if (signal?.aborted) break;
          const path = source === "start" ? record.runtime.startLog : record.runtime.setupLog;
          let chunk: Uint8Array | undefined;
          if (path && record.sandboxId && record.status !== "destroyed") {
            try {
              const sandbox = await manager.#sandboxOf(record);
              // `starting`: the sandbox runs its setup, so its log can be read while it grows.
              if (record.status === "running" || record.status === "starting")
                chunk = await readLogChunk(sandbox, path, offset, chunkBytes, signal);
              else if (!isTransitional(record.status)) {
                // Not running: commands may not work, the files API often still does.
                const all = await sandbox.files.read(path);
                chunk = all.subarray(offset);
              }
            } catch (error) {
              if (signal?.aborted) break;
              const wrapped = toSandboxError(error);
              // The record moved on while we read (stopped, destroyed): look at it again below.
              if (wrapped.code !== "NotFound" && wrapped.code !== "InvalidState") {
                // A read that a stop killed under us ends with a signal's exit code, not one of those
                // codes: it is the record moving on too, not a failure of the log.
                const now = await manager.get(id);
                if (now.status === record.status) throw wrapped;
                record = now;
              }
            }
          }
          if (chunk && chunk.byteLength > 0) {
            offset += chunk.byteLength;
            const text = decoder.decode(chunk, { stream: true });
            if (text) yield text;
            if (chunk.byteLength >= chunkBytes) continue;
          }
          const settled = !isTransitional(record.status) && record.status !== "running";
          if (!follow || settled) break;
          await sleep(pollMs, signal);
          record = await manager.get(id);
        }
        const rest = decoder.decode();
        if (rest) yield rest;
      },
    };
  }

  /** Sets the record's expiry to `ms` from now (`stopExpired` stops it after that). */
  async extendTimeout(id: string, ms: number): Promise<SandboxRecord> {
    validateDuration(ms, "extendTimeout ms");
    return this.#update(
      id,
      "extendTimeout",
      () => ({ expiresAt: new Date(this.#now().getTime() + ms) }),
      true,
    );
  }

  /**
   * A non-transition change (expiry, runtime). Waits for the record to be stable, because a write to a
   * leased record would take its lease from the worker holding it.
   */
  async #update(
    id: string,
    operation: string,
    change: (record: SandboxRecord) => RecordChanges,
    rejectDestroyed = false,
  ): Promise<SandboxRecord> {
    for (;;) {
      const record = await this.#waitStable(id, operation);
      if (rejectDestroyed && record.status === "destroyed") throw invalidState(record, operation);
      const next = await writeRecord(this.#writer, record, change(record), "update", operation);
      if (next) return next;
    }
  }

  /**
   * Stops every running sandbox whose expiry has passed (destroys it where the provider can neither stop
   * nor pause). Each record goes through the same leased transition as `stop`.
   */
  async stopExpired(): Promise<StopExpiredResult> {
    const result: StopExpiredResult = { stopped: [], destroyed: [], failed: [] };
    const expired = await this.#store.list({ status: "running", expiresBefore: this.#now() });
    for (const record of expired) {
      try {
        const map = this.#clientOf(record.provider).capabilities.map;
        if (map.stop === "unsupported" && map.pause === "unsupported")
          result.destroyed.push(await this.destroy(record.id));
        else result.stopped.push(await this.stop(record.id));
      } catch (error) {
        result.failed.push({ id: record.id, error: toSandboxError(error) });
      }
    }
    return result;
  }

  /**
   * Settles abandoned transitions (leases that expired: their worker died) and aligns records with what
   * the providers report: a sandbox the provider no longer has makes its record `destroyed` (`Gone`); a
   * stopped/running mismatch is corrected; a sandbox carrying the manager's label but no record is
   * recorded (adopted); one whose record is `destroyed` or `failed` is destroyed. An abandoned create is
   * found by its label even if its record never learnt the sandbox id, and destroyed (record `failed`,
   * `Abandoned`). With `ids`, only those records (and sandboxes labelled with them) are looked at.
   */
  reconcile(ids?: readonly string[]): Promise<ReconcileReport> {
    if (ids !== undefined && (!Array.isArray(ids) || ids.some((id) => typeof id !== "string"))) {
      return Promise.reject(invalid("reconcile ids must be an array of record ids"));
    }
    return reconcileRecords(this.#internals, ids);
  }

  /** Releases the provider clients (not the store, which the caller owns). */
  async close(): Promise<void> {
    const clients = [...this.#clients.values()];
    this.#clients.clear();
    this.#sandboxes.clear();
    for (const client of clients) await client.dispose().catch(() => {});
  }
}
