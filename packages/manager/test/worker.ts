/**
 * A worker OS process for the cross-process tests (bundled by global-setup, started with
 * child_process.fork). It runs a real manager over PostgreSQL and provider-local, and reports over IPC.
 *
 * Modes:
 * - `churn`: `count` random stop/resume/extendTimeout calls on the given records, `concurrency` at a time;
 *   reports provider calls, its own writes by transition, and the outcome of every call.
 * - `crash-create`: creates a sandbox; after the provider created it (before the record learns its id)
 *   reports `created` and hangs, waiting for SIGKILL.
 * - `crash-resume`: resumes a record; after the provider resumed (before the record says so) reports
 *   `resumed` and hangs, waiting for SIGKILL.
 */
import { type SandboxProvider, toSandboxError } from "@sbox/core";
import { local } from "@sbox/provider-local";
import { postgresStore } from "../src/postgres-store.js";
import { SandboxManager } from "../src/sandbox-manager.js";
import { sqliteStore } from "../src/sqlite-store.js";

/** What the parent passes as argv[2] (JSON). */
export interface WorkerConfig {
  mode: "churn" | "crash-create" | "crash-resume";
  /** PostgreSQL connection and schema, unless `sqlitePath` is set. */
  url: string;
  schema: string;
  /** Use this SQLite file instead of PostgreSQL. */
  sqlitePath?: string;
  root: string;
  workerId: string;
  ids?: string[];
  count?: number;
  concurrency?: number;
  seed?: number;
}

/** What a churn worker reports. */
export interface ChurnReport {
  type: "done";
  workerId: string;
  providerCalls: { stop: number; resume: number };
  /** This worker's own successful writes, by `kind:from->to`. */
  writes: Record<string, number>;
  /** Outcome of every call, by `op:ok` or `op:<error code>`. */
  outcomes: Record<string, number>;
  errors: string[];
}

const config = JSON.parse(process.argv[2] ?? "{}") as WorkerConfig;
const send = (message: unknown): Promise<void> =>
  new Promise((resolve) => {
    process.send?.(message, undefined, {}, () => resolve());
  });
const hang = (): Promise<never> => new Promise(() => setInterval(() => {}, 60_000));

// A small deterministic generator, so a failing run can be replayed with its seed.
function random(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

async function main(): Promise<void> {
  const base = local({ root: config.root, isolation: "none" }) as unknown as SandboxProvider;
  const providerCalls = { stop: 0, resume: 0 };
  const provider: SandboxProvider = {
    ...base,
    doCreate: async (spec, options) => {
      const sandbox = await base.doCreate(spec, options);
      if (config.mode === "crash-create") {
        await send({ type: "created", sandboxId: `${base.name}:${sandbox.id}` });
        await hang();
      }
      return sandbox;
    },
    doStop: async (sandbox, options) => {
      providerCalls.stop++;
      return base.doStop!(sandbox, options);
    },
    doResume: async (sandbox, options) => {
      providerCalls.resume++;
      await base.doResume!(sandbox, options);
      if (config.mode === "crash-resume") {
        await send({ type: "resumed" });
        await hang();
      }
    },
  };
  const store = config.sqlitePath
    ? sqliteStore({ path: config.sqlitePath })
    : postgresStore({ connectionString: config.url, schema: config.schema, maxConnections: 4 });
  const writes: Record<string, number> = {};
  const manager = new SandboxManager({
    providers: { local: provider },
    store,
    workerId: config.workerId,
    transitionTimeoutMs: 120_000,
    onChange: (entry) => {
      const key = `${entry.kind}:${entry.fromStatus}->${entry.toStatus}`;
      writes[key] = (writes[key] ?? 0) + 1;
    },
  });

  if (config.mode === "crash-create") {
    await manager.create({ labels: { crash: config.workerId } });
    return;
  }
  if (config.mode === "crash-resume") {
    await manager.resume(config.ids![0]!);
    return;
  }

  const ids = config.ids ?? [];
  const next = random(config.seed ?? 1);
  const outcomes: Record<string, number> = {};
  const errors: string[] = [];
  let remaining = config.count ?? 200;
  const one = async (): Promise<void> => {
    while (remaining > 0) {
      remaining--;
      const id = ids[Math.floor(next() * ids.length)]!;
      const roll = next();
      const op = roll < 0.4 ? "stop" : roll < 0.8 ? "resume" : "extendTimeout";
      try {
        if (op === "stop") await manager.stop(id);
        else if (op === "resume") await manager.resume(id);
        else await manager.extendTimeout(id, 3_600_000);
        outcomes[`${op}:ok`] = (outcomes[`${op}:ok`] ?? 0) + 1;
      } catch (error) {
        const wrapped = toSandboxError(error);
        outcomes[`${op}:${wrapped.code}`] = (outcomes[`${op}:${wrapped.code}`] ?? 0) + 1;
        if (errors.length < 10) errors.push(`${op} ${id}: ${wrapped.message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: config.concurrency ?? 8 }, one));
  await manager.close();
  await store.close();
  const report: ChurnReport = {
    type: "done",
    workerId: config.workerId,
    providerCalls,
    writes,
    outcomes,
    errors,
  };
  await send(report);
}

main().then(
  () => process.exit(0),
  async (error: unknown) => {
    await send({
      type: "error",
      message: error instanceof Error ? (error.stack ?? error.message) : String(error),
    });
    process.exit(1);
  },
);
