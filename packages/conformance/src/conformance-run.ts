import { randomUUID } from "node:crypto";
import {
  type Capabilities,
  createSandboxClient,
  type Sandbox,
  type SandboxClient,
  type SandboxClientOptions,
} from "@sbox/core";
import { type CapabilityMap, SandboxError, type SandboxProvider, type SandboxSpec } from "@sbox/core/spec";
import { ConformanceFailure, ConformanceSkip, show } from "./assertions.js";
import { defineConformanceCases } from "./cases/define-conformance-cases.js";
import type { ConformanceCase, ConformanceContext, ConformanceMode } from "./conformance-case.js";
import { CASE_LABEL, LEAK_CASE_ID, RUN_LABEL } from "./conformance-labels.js";
import type { ConformanceOptions } from "./conformance-options.js";
import type { CaseReport } from "./conformance-report.js";
import { createDriverRecorder } from "./driver-recorder.js";
import { type ForeignOrigin, startForeignOrigin } from "./foreign-origin.js";
import { type HostServer, startHostServer } from "./host-server.js";
import { runOk } from "./sandbox-scripts.js";

const DEFAULT_TIMEOUT_MS = 60_000;
const CLEANUP_TIMEOUT_MS = 60_000;

/** A case with the decision taken before it runs. */
export interface PlannedCase {
  readonly case: ConformanceCase;
  /** `run`, or why it will not. */
  readonly status: "run" | "skipped" | "excluded";
  readonly reason?: string | undefined;
}

/** One run of the kit against one provider: the plan, a way to run each case, and the final leak check. */
export interface ConformanceRun {
  readonly runId: string;
  readonly providerName: string;
  readonly mode: ConformanceMode;
  /** What the provider declares (from the provider object). */
  readonly declared: CapabilityMap;
  /** What the client reports: the map cases are selected by. */
  readonly capabilities: Capabilities;
  /** Every selected case in order, the leak check last. */
  readonly plan: readonly PlannedCase[];
  /** The run's `only` (undefined when every case is selected) and `exclude`, as given. */
  readonly only: readonly string[] | undefined;
  readonly exclude: Readonly<Record<string, string>>;
  /** Ids of the kit's cases that `only` left out of the plan. */
  readonly notSelected: readonly string[];
  /** Runs one planned case (skipped and excluded ones resolve at once) and cleans up after it. */
  runCase(id: string): Promise<CaseReport>;
  /**
   * Destroys the shared sandboxes, checks that no sandbox of this run is alive, releases clients and the
   * host server. Idempotent. Returns the report line of the leak check and the leaked ids.
   */
  finish(): Promise<{ report: CaseReport; leaked: string[] }>;
}

const LEAK_CASE: ConformanceCase = {
  id: LEAK_CASE_ID,
  title:
    "the run leaves no sandbox behind: every sandbox the kit created is destroyed (by connect and by list)",
  requires: [],
  run: async () => {},
};

function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => void, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(new ConformanceFailure(`${what} did not finish within ${ms} ms`));
    }, ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function messageOf(error: unknown): string {
  if (error instanceof ConformanceFailure) return error.message;
  return `unexpected ${show(error)}`;
}

function matchesOnly(id: string, only: readonly string[] | undefined): boolean {
  if (!only || only.length === 0) return true;
  return only.some((entry) => id === entry || id.startsWith(`${entry}.`));
}

/**
 * Plans a run: makes the provider and the client (no sandbox yet) and decides, from the provider's own
 * effective capability map, which cases run, which are skipped and which are excluded.
 */
export function createConformanceRun(options: ConformanceOptions): ConformanceRun {
  const runId = randomUUID().slice(0, 12);
  const mode: ConformanceMode = options.primitivesOnly ? "primitives-only" : "declared";
  const recorder = createDriverRecorder();
  let setupError: string | undefined;
  let rawProvider: SandboxProvider | undefined;
  let client: SandboxClient | undefined;
  try {
    rawProvider = options.provider();
  } catch (error) {
    setupError = `the provider factory threw ${show(error)}`;
  }
  const makeClient = (
    provider: SandboxProvider,
    overrides: Partial<Omit<SandboxClientOptions, "provider" | "primitivesOnly">> = {},
  ): SandboxClient =>
    createSandboxClient({
      ...(options.clientOptions ?? {}),
      ...overrides,
      provider: recorder.record(provider),
      primitivesOnly: options.primitivesOnly ?? false,
    } as Parameters<typeof createSandboxClient>[0]);
  if (rawProvider) {
    try {
      client = makeClient(rawProvider);
    } catch (error) {
      setupError = `createSandboxClient rejected the provider: ${show(error)}`;
    }
  }
  const providerName = String(rawProvider?.name ?? "unknown");
  const declared = (rawProvider?.capabilities ?? {}) as CapabilityMap;
  const capabilities: Capabilities = client?.capabilities ?? {
    map: declared,
    flags: rawProvider?.flags ?? ({} as Capabilities["flags"]),
  };
  const provider: SandboxProvider =
    rawProvider ??
    ({
      specificationVersion: "v1",
      name: providerName,
      capabilities: declared,
      flags: capabilities.flags,
      honours: [],
    } as unknown as SandboxProvider);
  const honours = Array.isArray(provider.honours) ? provider.honours : [];
  const labels = honours.includes("metadata");

  const allCases = defineConformanceCases(options.extraCases);
  const ids = new Set(allCases.map((c) => c.id));
  for (const id of Object.keys(options.exclude ?? {})) {
    if (!ids.has(id)) {
      throw new SandboxError(
        "Validation",
        `exclude names ${JSON.stringify(id)}, which is not a conformance case id`,
        {
          retryable: false,
        },
      );
    }
  }
  const levelOf = (name: string): string =>
    String((capabilities.map as Record<string, unknown>)[name] ?? "unsupported");
  const decide = (c: ConformanceCase): PlannedCase => {
    const excluded = options.exclude?.[c.id];
    if (excluded !== undefined) return { case: c, status: "excluded", reason: `excluded: ${excluded}` };
    if (c.unsupportedOf && levelOf(c.unsupportedOf) !== "unsupported") {
      return {
        case: c,
        status: "skipped",
        reason: `not applicable: ${c.unsupportedOf} is ${levelOf(c.unsupportedOf)} (the positive cases hold it)`,
      };
    }
    const missing = c.requires.filter((name) => levelOf(name) === "unsupported");
    if (missing.length > 0) {
      return {
        case: c,
        status: "skipped",
        reason: `requires ${missing.join(", ")}, which ${providerName} ${mode === "declared" ? "declares" : "has (primitives-only)"} unsupported`,
      };
    }
    const unhonoured = (c.honours ?? []).filter((field) => !honours.includes(field));
    if (unhonoured.length > 0) {
      return {
        case: c,
        status: "skipped",
        reason: `needs spec field ${unhonoured.join(", ")}, which ${providerName} does not honour`,
      };
    }
    return { case: c, status: "run" };
  };
  const plan: PlannedCase[] = allCases.filter((c) => matchesOnly(c.id, options.only)).map(decide);
  plan.push({ case: LEAK_CASE, status: "run" });
  const notSelected = allCases.filter((c) => !matchesOnly(c.id, options.only)).map((c) => c.id);

  const created = new Map<string, Sandbox>();
  let shared: Promise<Sandbox> | undefined;
  let quiet: Promise<Sandbox> | undefined;
  let hostServer: Promise<HostServer> | undefined;
  let foreign: Promise<ForeignOrigin> | undefined;
  const scratchBase = new Map<string, Promise<string>>();
  let finished: Promise<{ report: CaseReport; leaked: string[] }> | undefined;

  const createLabelled = async (caseId: string, spec: SandboxSpec = {}): Promise<Sandbox> => {
    if (!client) throw new ConformanceFailure(setupError ?? "no client");
    const full: SandboxSpec = { ...spec };
    if (labels) full.metadata = { ...(spec.metadata ?? {}), [RUN_LABEL]: runId, [CASE_LABEL]: caseId };
    if (options.fixtures?.template && full.template === undefined) full.template = options.fixtures.template;
    const sandbox = await client.create(full);
    created.set(sandbox.id, sandbox);
    return sandbox;
  };

  const baseDirOf = (sandbox: Sandbox): Promise<string> => {
    let base = scratchBase.get(sandbox.id);
    if (!base) {
      // The workdir when it is writable, otherwise $TMPDIR or /tmp: somewhere a case may create files.
      base = runOk(
        sandbox,
        [
          "sh",
          "-c",
          // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
          'd=$(pwd); if [ -w "$d" ] && [ "$d" != / ]; then printf %s "$d"; else printf %s "${TMPDIR:-/tmp}"; fi',
        ],
        "finding a writable directory",
      ).then((r) => r.stdout.replace(/\/+$/, "") || "/tmp");
      scratchBase.set(sandbox.id, base);
    }
    return base;
  };

  const runCase = async (id: string): Promise<CaseReport> => {
    const planned = plan.find((p) => p.case.id === id);
    if (!planned)
      throw new SandboxError("Validation", `no planned conformance case ${JSON.stringify(id)}`, {
        retryable: false,
      });
    const c = planned.case;
    const base: CaseReport = {
      id: c.id,
      title: c.title,
      requires: [...c.requires],
      ...(c.unsupportedOf ? { unsupportedOf: c.unsupportedOf } : {}),
      ...(c.coreOnly ? { coreOnly: true } : {}),
      status: "skipped",
      ms: 0,
    };
    if (c.id === LEAK_CASE_ID) return (await finish()).report;
    if (planned.status !== "run") return { ...base, status: planned.status, reason: planned.reason };
    // The manifest case needs no client, so it still tells a broken declaration apart from a broken client.
    if (setupError && c.id !== "manifest.declaration") {
      return { ...base, status: "failed", reason: `${c.id}: ${setupError}` };
    }
    const started = Date.now();
    const controller = new AbortController();
    const cleanups: (() => unknown)[] = [];
    const ownSandboxes: Sandbox[] = [];
    const secondClients: SandboxClient[] = [];
    const context: ConformanceContext = {
      caseId: c.id,
      providerName,
      mode,
      client: client ?? (undefined as unknown as SandboxClient),
      capabilities,
      provider,
      signal: controller.signal,
      runId,
      fixtures: options.fixtures ?? {},
      hostAddresses: options.hostAddresses ?? [],
      calls: recorder,
      sharedSandbox: () => {
        shared ??= createLabelled("shared");
        return shared;
      },
      quietSandbox: () => {
        quiet ??= createLabelled("quiet");
        return quiet;
      },
      createSandbox: async (spec) => {
        const sandbox = await createLabelled(c.id, spec);
        ownSandboxes.push(sandbox);
        return sandbox;
      },
      track: (sandbox) => {
        created.set(sandbox.id, sandbox);
        ownSandboxes.push(sandbox);
        return sandbox;
      },
      providerWithOptions: (extra) => {
        if (!options.providerWithOptions) {
          throw new ConformanceSkip(
            "the test file passes no providerWithOptions, so the kit cannot give the factory an option",
          );
        }
        return options.providerWithOptions(extra);
      },
      secondClient: (overrides) => {
        if (!rawProvider) throw new ConformanceFailure(setupError ?? "no provider");
        const second = makeClient(options.provider(), overrides);
        secondClients.push(second);
        return second;
      },
      workdir: baseDirOf,
      scratchDir: async (sandbox) => {
        const dir = `${await baseDirOf(sandbox)}/sbox-conformance-${c.id}-${randomUUID().slice(0, 8)}`;
        await runOk(sandbox, ["mkdir", "-p", dir], "creating the case's scratch directory");
        // Sandboxes owned by the case are destroyed anyway; only shared ones need their scratch removed.
        cleanups.push(async () => {
          if (!ownSandboxes.includes(sandbox)) await sandbox.commands.run(["rm", "-rf", dir]);
        });
        return dir;
      },
      defer: (cleanup) => {
        cleanups.push(cleanup);
      },
      hostServer: () => {
        hostServer ??= startHostServer();
        return hostServer;
      },
      remote: options.remote,
      foreignOrigin: () => {
        foreign ??= startForeignOrigin();
        return foreign;
      },
      skip: (reason) => {
        throw new ConformanceSkip(reason);
      },
    };
    let failure: string | undefined;
    let skipped: string | undefined;
    try {
      await withTimeout(
        c.run(context),
        Math.max(c.timeoutMs ?? 0, options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
        () => controller.abort(new SandboxError("Timeout", `conformance case ${c.id} ran out of time`)),
        "the case",
      );
    } catch (error) {
      if (error instanceof ConformanceSkip) skipped = error.message;
      else failure = messageOf(error);
    }
    const cleanupProblems: string[] = [];
    const runCleanups = async () => {
      for (const cleanup of cleanups.reverse()) {
        try {
          await cleanup();
        } catch (error) {
          cleanupProblems.push(`cleanup step failed: ${show(error)}`);
        }
      }
      const destroyed = await Promise.allSettled(ownSandboxes.map((s) => s.destroy()));
      destroyed.forEach((outcome, i) => {
        if (outcome.status === "rejected") {
          cleanupProblems.push(`destroy of ${ownSandboxes[i]!.id} rejected with ${show(outcome.reason)}`);
        }
      });
      await Promise.allSettled(secondClients.map((s) => s.dispose()));
    };
    try {
      await withTimeout(runCleanups(), CLEANUP_TIMEOUT_MS, () => {}, "cleanup");
    } catch (error) {
      cleanupProblems.push(messageOf(error));
    }
    if (!failure && cleanupProblems.length > 0) failure = cleanupProblems.join("; ");
    const ms = Date.now() - started;
    if (failure !== undefined) return { ...base, status: "failed", reason: `${c.id}: ${failure}`, ms };
    if (skipped !== undefined) return { ...base, status: "skipped", reason: skipped, ms };
    return { ...base, status: "passed", ms };
  };

  const leakCheck = async (): Promise<string[]> => {
    if (!client) return [];
    const leaked = new Map<string, string>();
    await Promise.all(
      [...created.keys()].map(async (id) => {
        try {
          const again = await client!.connect(id);
          const info = await again.getInfo();
          if (info.state !== "destroyed") leaked.set(id, `${id} (state ${info.state})`);
        } catch (error) {
          if (!(SandboxError.isInstance(error) && error.code === "NotFound"))
            leaked.set(id, `${id} (connect: ${show(error)})`);
        }
      }),
    );
    if (labels && levelOf("list") !== "unsupported") {
      try {
        for await (const info of client.list({ metadata: { [RUN_LABEL]: runId } })) {
          if (info.state !== "destroyed" && !leaked.has(info.id))
            leaked.set(info.id, `${info.id} (listed, state ${info.state})`);
        }
      } catch (error) {
        leaked.set("list", `client.list failed: ${show(error)}`);
      }
    }
    return [...leaked.values()];
  };

  const finish = (): Promise<{ report: CaseReport; leaked: string[] }> => {
    finished ??= (async () => {
      const started = Date.now();
      const problems: string[] = [];
      for (const pending of [shared, quiet]) {
        if (!pending) continue;
        try {
          await (await pending).destroy();
        } catch (error) {
          problems.push(`destroying a shared sandbox failed: ${show(error)}`);
        }
      }
      let leaked: string[] = [];
      try {
        leaked = await withTimeout(leakCheck(), CLEANUP_TIMEOUT_MS, () => {}, "the leak check");
      } catch (error) {
        problems.push(messageOf(error));
      }
      if (hostServer) await (await hostServer).close();
      if (foreign) await (await foreign).close();
      if (client)
        await client
          .dispose()
          .catch((error: unknown) => problems.push(`client.dispose failed: ${show(error)}`));
      if (leaked.length > 0)
        problems.unshift(`expected no sandbox left, found ${leaked.length}: ${leaked.join(", ")}`);
      const report: CaseReport = {
        id: LEAK_CASE_ID,
        title: LEAK_CASE.title,
        requires: [],
        status: problems.length === 0 ? "passed" : "failed",
        ms: Date.now() - started,
        ...(problems.length > 0 ? { reason: `${LEAK_CASE_ID}: ${problems.join("; ")}` } : {}),
      };
      return { report, leaked: leaked.map((entry) => entry.split(" ")[0]!) };
    })();
    return finished;
  };

  const only = options.only && options.only.length > 0 ? [...options.only] : undefined;
  const exclude = { ...(options.exclude ?? {}) };
  return {
    runId,
    providerName,
    mode,
    declared,
    capabilities,
    plan,
    only,
    exclude,
    notSelected,
    runCase,
    finish,
  };
}
