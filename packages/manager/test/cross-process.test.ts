/**
 * Acceptance: several OS processes sharing one real PostgreSQL and one provider-local state root.
 * Workers are forked from the bundled test/worker.ts and report over IPC.
 */
import { type ChildProcess, fork } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSandboxClient, SandboxError, type SandboxProvider } from "@sbox/core";
import pg from "pg";
import { afterEach, describe, expect, inject, it } from "vitest";
import { RECORD_LABEL } from "../src/manager-labels.js";
import { postgresStore } from "../src/postgres-store.js";
import { statusForState } from "../src/reconcile.js";
import { SandboxManager } from "../src/sandbox-manager.js";
import type { HistoryEntry, SandboxRecord } from "../src/sandbox-record.js";
import type { SandboxStore } from "../src/sandbox-store.js";
import { sqliteStore } from "../src/sqlite-store.js";
import { collect, localProvider } from "./fixtures.js";
import type { ChurnReport, WorkerConfig } from "./worker.js";

const url = inject("postgresUrl");
const workerScript = inject("workerScript");

interface Worker {
  child: ChildProcess;
  next(type: string): Promise<Record<string, unknown>>;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): string;
}

function startWorker(config: WorkerConfig): Worker {
  const child = fork(workerScript, [JSON.stringify(config)], {
    execArgv: [],
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const messages: Record<string, unknown>[] = [];
  const waiters: {
    type: string;
    resolve: (m: Record<string, unknown>) => void;
    reject: (e: Error) => void;
  }[] = [];
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on("exit", (code, signal) => {
      for (const waiter of waiters.splice(0)) {
        waiter.reject(
          new Error(
            `worker ${config.workerId} exited (${code ?? signal}) before "${waiter.type}":\n${output}`,
          ),
        );
      }
      resolve({ code, signal });
    });
  });
  child.on("message", (message: Record<string, unknown>) => {
    if (message.type === "error") output += `\nworker error: ${String(message.message)}`;
    const index = waiters.findIndex((w) => w.type === message.type);
    if (index >= 0) waiters.splice(index, 1)[0]!.resolve(message);
    else messages.push(message);
  });
  return {
    child,
    exit,
    output: () => output,
    next(type) {
      const index = messages.findIndex((m) => m.type === type);
      if (index >= 0) return Promise.resolve(messages.splice(index, 1)[0]!);
      return new Promise((resolve, reject) => waiters.push({ type, resolve, reject }));
    },
  };
}

async function rejection(promise: Promise<unknown>): Promise<SandboxError> {
  try {
    await promise;
  } catch (error) {
    if (SandboxError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("expected a rejection");
}

/** Checks the history of one record: gap-free, chained, and every leased transition written only by its holder. */
function checkHistory(record: SandboxRecord, history: HistoryEntry[]): void {
  expect(history.map((h) => h.version)).toEqual(history.map((_, i) => i + 1));
  expect(record.version).toBe(history.length);
  expect(record.status).toBe(history.at(-1)!.toStatus);
  for (let i = 1; i < history.length; i++) {
    expect(history[i]!.fromStatus, `${record.id} v${i + 1}`).toBe(history[i - 1]!.toStatus);
  }
  let holder: string | undefined;
  for (const entry of history) {
    if (holder !== undefined && entry.actor !== holder) {
      // While a record is leased, nobody but the lease holder writes it, except reconcile taking over an
      // expired lease (which keeps the status and names the worker it took over from).
      expect(entry, `${record.id} v${entry.version} written during ${holder}'s lease`).toMatchObject({
        kind: "reconcile",
        fromStatus: entry.toStatus,
        detail: expect.stringContaining(`of worker ${holder}`),
      });
    }
    const leased = ["creating", "starting", "stopping", "resuming", "destroying"].includes(entry.toStatus);
    holder = leased ? entry.actor : undefined;
  }
}

/**
 * Creates `records` records, lets `processes` workers make `calls` concurrent calls each on them, then checks:
 * every call succeeded; each history is gap-free and chained and only the lease holder wrote a leased
 * record; each provider stop/resume matches exactly one recorded transition; the writes the workers were
 * told succeeded plus the parent's are exactly the history rows; the provider agrees with every record.
 */
async function churnAndCheck(
  setup: {
    store: SandboxStore;
    manager: SandboxManager;
    provider: SandboxProvider;
    records: number;
    processes: number;
    calls: number;
    workers: Worker[];
  },
  configOf: (index: number, ids: string[]) => WorkerConfig,
): Promise<void> {
  const { store, manager, provider } = setup;
  const records: SandboxRecord[] = [];
  for (let i = 0; i < setup.records; i++) records.push(await manager.create({ labels: { n: String(i) } }));
  const ids = records.map((r) => r.id);

  const started = Date.now();
  const running = Array.from({ length: setup.processes }, (_, i) => {
    const worker = startWorker(configOf(i, ids));
    setup.workers.push(worker);
    return worker;
  });
  const reports = (await Promise.all(running.map((w) => w.next("done")))) as unknown as ChurnReport[];
  const exits = await Promise.all(running.map((w) => w.exit));
  expect(
    exits.map((e) => e.code),
    running.map((w) => w.output()).join("\n"),
  ).toEqual(running.map(() => 0));
  const elapsedMs = Date.now() - started;

  // Every call succeeded (waiting for the others' transitions when it had to).
  for (const report of reports) {
    expect(report.errors, report.workerId).toEqual([]);
    expect(Object.values(report.outcomes).reduce((a, b) => a + b, 0)).toBe(setup.calls);
  }

  let historyRows = 0;
  const counted = { stopped: 0, resumed: 0 };
  const client = createSandboxClient({ provider });
  for (const id of ids) {
    const record = await manager.get(id);
    const history = await manager.history(id);
    checkHistory(record, history);
    expect(["running", "stopped"]).toContain(record.status);
    expect(record.lease).toBeNull();
    // The provider agrees with the record.
    const state = (await (await client.connect(record.sandboxId!)).getInfo()).state;
    expect(statusForState(state), `${id} is ${record.status}, provider says ${state}`).toBe(record.status);
    historyRows += history.length;
    counted.stopped += history.filter((h) => h.fromStatus === "stopping" && h.toStatus === "stopped").length;
    counted.resumed += history.filter((h) => h.fromStatus === "resuming" && h.toStatus === "running").length;
    // No transition failed and rolled back.
    expect(history.filter((h) => h.detail?.includes("failed"))).toEqual([]);
  }
  await client.dispose();

  // Each provider stop/resume happened exactly once per recorded transition: no two workers did the same one.
  const providerStops = reports.reduce((sum, r) => sum + r.providerCalls.stop, 0);
  const providerResumes = reports.reduce((sum, r) => sum + r.providerCalls.resume, 0);
  expect(providerStops).toBe(counted.stopped);
  expect(providerResumes).toBe(counted.resumed);
  expect(counted.stopped + counted.resumed).toBeGreaterThan((setup.processes * setup.calls) / 8);

  // Every write a worker was told succeeded is in the store, and nothing else is.
  // The parent wrote 4 rows per record: create, provider created, setup log known, running.
  const parentRows = setup.records * 4;
  const workerRows = reports.reduce((sum, r) => sum + Object.values(r.writes).reduce((a, b) => a + b, 0), 0);
  expect(workerRows + parentRows).toBe(historyRows);
  expect(await store.list({ ids })).toHaveLength(setup.records);
  console.log(
    `[cross-process ${store.kind}] ${setup.processes} x ${setup.calls} calls in ${elapsedMs} ms: ${counted.stopped} stops, ${counted.resumed} resumes, ${historyRows} history rows`,
  );
}

describe("across OS processes on one SQLite file", () => {
  const workers: Worker[] = [];
  afterEach(async () => {
    for (const worker of workers.splice(0)) {
      if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill("SIGKILL");
      await worker.exit;
    }
  });

  it("3 processes x 100 concurrent transitions on 10 records lose no update and never leave a record in two states", async () => {
    const root = mkdtempSync(join(tmpdir(), "sbox-manager-xproc-"));
    const sqlitePath = join(root, "state", "manager.db");
    const provider = localProvider(join(root, "sandboxes"));
    const store = sqliteStore({ path: sqlitePath });
    const manager = new SandboxManager({ providers: { local: provider }, store, workerId: "parent" });
    try {
      await churnAndCheck(
        { store, manager, provider, records: 10, processes: 3, calls: 100, workers },
        (i, ids) => ({
          mode: "churn",
          url: "",
          schema: "",
          sqlitePath,
          root: join(root, "sandboxes"),
          workerId: `worker-${i}`,
          ids,
          count: 100,
          concurrency: 6,
          seed: 2000 + i,
        }),
      );
    } finally {
      await manager.close();
      const client = createSandboxClient({ provider });
      for await (const info of client.list()) await (await client.connect(info.id)).destroy().catch(() => {});
      await client.dispose();
      await store.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!url)(
  `across OS processes on PostgreSQL (${url ? "real server" : inject("postgresMissing")})`,
  () => {
    const cleanups: (() => Promise<void>)[] = [];
    const workers: Worker[] = [];
    afterEach(async () => {
      for (const worker of workers.splice(0)) {
        if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill("SIGKILL");
        await worker.exit;
      }
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    async function setting(): Promise<{
      schema: string;
      root: string;
      provider: SandboxProvider;
      store: SandboxStore;
      manager: SandboxManager;
      late: SandboxManager;
    }> {
      const schema = `x_${randomUUID().replaceAll("-", "")}`;
      const root = mkdtempSync(join(tmpdir(), "sbox-manager-xproc-"));
      const provider = localProvider(root);
      const store = postgresStore({ connectionString: url, schema });
      const manager = new SandboxManager({
        providers: { local: provider },
        store,
        workerId: "parent",
        startGraceMs: 150,
      });
      // The same, ten minutes later by its clock: every lease taken now has expired for it.
      const late = new SandboxManager({
        providers: { local: provider },
        store,
        workerId: "reconciler",
        startGraceMs: 150,
        now: () => new Date(Date.now() + 10 * 60_000),
      });
      cleanups.push(async () => {
        await manager.close();
        await late.close();
        const client = createSandboxClient({ provider });
        for await (const info of client.list())
          await (await client.connect(info.id)).destroy().catch(() => {});
        await client.dispose();
        await store.close();
        const admin = new pg.Client({ connectionString: url });
        await admin.connect();
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await admin.end();
        rmSync(root, { recursive: true, force: true });
      });
      return { schema, root, provider, store, manager, late };
    }

    it("4 processes x 200 concurrent transitions on 20 records lose no update and never leave a record in two states", async () => {
      const { schema, root, provider, store, manager } = await setting();
      await churnAndCheck(
        { store, manager, provider, records: 20, processes: 4, calls: 200, workers },
        (i, ids) => ({
          mode: "churn",
          url,
          schema,
          root,
          workerId: `worker-${i}`,
          ids,
          count: 200,
          concurrency: 8,
          seed: 1000 + i,
        }),
      );
    });

    it("settles with reconcile a transition whose worker was killed with SIGKILL in the middle of it", async () => {
      const { schema, root, manager, late } = await setting();
      const record = await manager.create({
        spec: { start: 'echo "started $$"; while :; do sleep 0.2; done' },
      });
      await manager.stop(record.id);

      const worker = startWorker({
        mode: "crash-resume",
        url,
        schema,
        root,
        workerId: "doomed",
        ids: [record.id],
      });
      workers.push(worker);
      await worker.next("resumed");
      worker.child.kill("SIGKILL");
      expect((await worker.exit).signal).toBe("SIGKILL");

      const stuck = await manager.get(record.id);
      expect(stuck).toMatchObject({ status: "resuming", lease: { owner: "doomed" } });
      // Within the lease the transition is not abandoned: reconcile leaves it, callers are told it is busy.
      expect((await manager.reconcile()).settled).toEqual([]);

      const report = await late.reconcile();
      expect(report.errors).toEqual([]);
      expect(report.settled).toEqual([
        expect.objectContaining({ id: record.id, from: "resuming", to: "running" }),
      ]);
      expect(report.settled[0]?.detail).toContain(
        "worker doomed abandoned the resuming; the provider reports running",
      );
      expect(report.settled[0]?.detail).toContain("restarted the main process");
      const settled = await manager.get(record.id);
      expect(settled).toMatchObject({ status: "running", lease: null });
      expect(settled.runtime.startPid).not.toBe(record.runtime.startPid);
      const history = await manager.history(record.id);
      checkHistory(settled, history);
      expect(history.at(-1)).toMatchObject({
        actor: "reconciler",
        kind: "reconcile",
        fromStatus: "resuming",
        toStatus: "running",
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await collect(manager.logs(record.id))).match(/started \d+/g)).toHaveLength(2);
      expect((await manager.stop(record.id)).status).toBe("stopped");
    });

    it("lets a caller that finds an abandoned transition settle it and go on", async () => {
      const { schema, root, manager, late } = await setting();
      const record = await manager.create();
      await manager.stop(record.id);
      const worker = startWorker({
        mode: "crash-resume",
        url,
        schema,
        root,
        workerId: "doomed",
        ids: [record.id],
      });
      workers.push(worker);
      await worker.next("resumed");
      worker.child.kill("SIGKILL");
      await worker.exit;
      const impatientStore = postgresStore({ connectionString: url, schema });
      const impatient = new SandboxManager({
        providers: { local: localProvider(root) },
        store: impatientStore,
        transitionTimeoutMs: 200,
      });
      expect((await rejection(impatient.exec(record.id, "true"))).code).toBe("Conflict");
      await impatient.close();
      await impatientStore.close();
      expect((await late.exec(record.id, "echo settled")).stdout).toBe("settled\n");
      expect((await manager.get(record.id)).status).toBe("running");
    });

    it("finds by label the sandbox of a worker killed between provider create and record running", async () => {
      const { schema, root, provider, manager, late } = await setting();
      const worker = startWorker({ mode: "crash-create", url, schema, root, workerId: "doomed" });
      workers.push(worker);
      const { sandboxId } = (await worker.next("created")) as { sandboxId: string };
      worker.child.kill("SIGKILL");
      await worker.exit;

      const [record] = await manager.list({ labels: { crash: "doomed" } });
      expect(record).toMatchObject({ status: "creating", sandboxId: null, lease: { owner: "doomed" } });
      const client = createSandboxClient({ provider });
      const labelled = async () => {
        const found: string[] = [];
        for await (const info of client.list({ metadata: { [RECORD_LABEL]: record!.id } }))
          found.push(info.id);
        return found;
      };
      expect(await labelled()).toEqual([sandboxId]);

      const report = await late.reconcile();
      expect(report.errors).toEqual([]);
      expect(report.settled).toEqual([
        expect.objectContaining({ id: record!.id, from: "creating", to: "failed" }),
      ]);
      expect(report.destroyed).toEqual([{ id: record!.id, sandboxId, reason: "abandoned create" }]);
      expect(await labelled()).toEqual([]);
      const settled = await manager.get(record!.id);
      expect(settled).toMatchObject({
        status: "failed",
        sandboxId,
        lease: null,
        error: { code: "Abandoned" },
      });
      checkHistory(settled, await manager.history(record!.id));
      // Nothing is left for a second pass.
      const again = await late.reconcile();
      expect([again.settled, again.destroyed, again.adopted]).toEqual([[], [], []]);
      await client.dispose();
    });
  },
);
