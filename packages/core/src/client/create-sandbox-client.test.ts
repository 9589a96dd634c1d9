import { afterAll, describe, expect, test } from "vitest";
import { recordingProvider } from "../../test/faulty-provider.js";
import { shDriver } from "../../test/sh-driver.js";
import { NotSupportedError, SandboxError } from "../errors/sandbox-error.js";
import type { SandboxSpec } from "../spec/sandbox-spec.js";
import { createSandboxClient } from "./create-sandbox-client.js";

const sh = shDriver({ userland: "dash" });
// With list and metadata, so the core can keep idempotency keys.
const listing = shDriver({ userland: "dash", lifecycle: true });
afterAll(() => {
  sh.cleanup();
  listing.cleanup();
});

const providerError = (retryable: boolean) =>
  new SandboxError("Provider", "the control plane answered 503", {
    provider: sh.name,
    status: 503,
    retryable,
  });

describe("createSandboxClient", () => {
  test("create returns a sandbox whose qualified id connects again", async () => {
    const client = createSandboxClient({ provider: sh });
    const sandbox = await client.create();
    expect(sandbox.id).toMatch(/^sh-dash:[0-9a-f-]{36}$/);
    expect(sandbox.provider).toBe("sh-dash");
    const again = await client.connect(sandbox.id);
    expect(again.id).toBe(sandbox.id);
    const byNative = await client.connect(sandbox.id.slice("sh-dash:".length));
    expect(byNative.id).toBe(sandbox.id);
    await sandbox.destroy();
    await sandbox.destroy(); // idempotent
  });

  test("connect to a missing sandbox is NotFound", async () => {
    const client = createSandboxClient({ provider: sh });
    await expect(client.connect("sh-dash:does-not-exist")).rejects.toMatchObject({ code: "NotFound" });
    await expect(client.connect("")).rejects.toMatchObject({ code: "Validation" });
  });

  test("a spec field the provider cannot honour is a Validation error before any provider call", async () => {
    const recorded = recordingProvider(sh);
    const client = createSandboxClient({ provider: recorded });
    // Typed as a plain SandboxSpec: most of these fail at compile time already (SpecFor); the runtime
    // must refuse them all the same, for callers whose types cannot tell (JavaScript, generic providers).
    const specs: SandboxSpec[] = [
      { resources: { memoryMB: 512 } },
      { region: "eu-west" },
      { ports: [8080] },
      { network: { egress: "block-all" as const } },
      { volumes: [{ name: "v", mountPath: "/data" }] },
      { template: "python:3.12" },
      { env: { "BAD-KEY": "x" } },
      { env: { OK: "a\0b" } },
      { ttlMs: -1 },
      { bogus: 1 } as never,
    ];
    for (const spec of specs) {
      const error = await client.create(spec as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(SandboxError.isInstance(error), JSON.stringify(spec)).toBe(true);
      expect((error as SandboxError).code, JSON.stringify(spec)).toBe("Validation");
    }
    expect(recorded.calls).toEqual([]);
  });

  test("without an idempotency key a failed create is reported once, never repeated", async () => {
    const recorded = recordingProvider(sh, { doCreate: () => providerError(true) });
    const client = createSandboxClient({ provider: recorded, retry: { retries: 3, baseDelayMs: 1 } });
    await expect(client.create()).rejects.toMatchObject({ code: "Provider", retryable: true });
    expect(recorded.calls.filter((c) => c.method === "doCreate")).toHaveLength(1);
  });

  test("with an idempotency key retryable failures are retried with backoff", async () => {
    const recorded = recordingProvider(listing, {
      doCreate: (n) => (n <= 2 ? providerError(true) : undefined),
    });
    const client = createSandboxClient({ provider: recorded, retry: { retries: 3, baseDelayMs: 1 } });
    const sandbox = await client.create({ idempotencyKey: "k-1" });
    expect(recorded.calls.filter((c) => c.method === "doCreate")).toHaveLength(3);
    await sandbox.destroy();
  });

  test("non-retryable failures are not retried even with a key", async () => {
    const recorded = recordingProvider(listing, { doCreate: () => providerError(false) });
    const client = createSandboxClient({ provider: recorded, retry: { retries: 3, baseDelayMs: 1 } });
    await expect(client.create({ idempotencyKey: "k-2" })).rejects.toMatchObject({ code: "Provider" });
    expect(recorded.calls.filter((c) => c.method === "doCreate")).toHaveLength(1);
  });

  test("fallback providers are tried only for creates with an idempotency key", async () => {
    const primary = shDriver({ userland: "dash", lifecycle: true });
    const failing = recordingProvider(primary, {
      doCreate: () => providerError(false),
    });
    const backup = shDriver({ userland: "busybox", lifecycle: true });
    const client = createSandboxClient({ provider: failing, fallback: [backup] });
    await expect(client.create()).rejects.toMatchObject({ code: "Provider" });
    const sandbox = await client.create({ idempotencyKey: "k-3" });
    expect(sandbox.provider).toBe("sh-busybox");
    expect((await sandbox.commands.run("echo fallback")).stdout).toBe("fallback\n");
    await sandbox.destroy();
    backup.cleanup();
    primary.cleanup();
  });

  test("when every provider fails the error is AllProvidersFailed with each cause", async () => {
    const a = recordingProvider(listing, { doCreate: () => providerError(false) });
    const second = shDriver({ userland: "busybox", lifecycle: true });
    const b = recordingProvider(second, {
      doCreate: () => new SandboxError("Unauthorized", "bad key"),
    });
    const client = createSandboxClient({ provider: a, fallback: [b] });
    const error = (await client.create({ idempotencyKey: "k-4" }).catch((e: unknown) => e)) as SandboxError;
    expect(error.code).toBe("AllProvidersFailed");
    expect(error.message).toContain("Unauthorized");
    expect((error.cause as AggregateError).errors).toHaveLength(2);
    second.cleanup();
  });

  test("a create repeated with the same idempotency key returns the first sandbox; another key makes another", async () => {
    const client = createSandboxClient({ provider: listing });
    const first = await client.create({ idempotencyKey: "same-key" });
    const again = await client.create({ idempotencyKey: "same-key" });
    expect(again.id).toBe(first.id);
    const other = await client.create({ idempotencyKey: "other-key" });
    expect(other.id).not.toBe(first.id);
    await first.destroy();
    const fresh = await client.create({ idempotencyKey: "same-key" });
    expect(fresh.id).not.toBe(first.id);
    await Promise.all([other.destroy(), fresh.destroy()]);
  });

  test("a retry after a create whose answer was lost returns the sandbox it made instead of a second one", async () => {
    const base = shDriver({ userland: "dash", lifecycle: true });
    let attempts = 0;
    const losing = new Proxy(base, {
      get(target, property, receiver) {
        if (property !== "doCreate") return Reflect.get(target, property, receiver);
        return async (...args: Parameters<typeof base.doCreate>) => {
          const made = await target.doCreate(...args);
          attempts++;
          if (attempts === 1) throw new SandboxError("Timeout", "the answer was lost", { retryable: true });
          return made;
        };
      },
    });
    const client = createSandboxClient({ provider: losing, retry: { retries: 2, baseDelayMs: 1 } });
    const sandbox = await client.create({ idempotencyKey: "lost-answer" });
    expect(attempts).toBe(1);
    const all: string[] = [];
    for await (const info of client.list()) all.push(info.id);
    expect(all).toEqual([sandbox.id]);
    await sandbox.destroy();
    base.cleanup();
  });

  test("an idempotency key that neither the provider nor the core can keep is a Validation error before any call", async () => {
    const recorded = recordingProvider(sh);
    const client = createSandboxClient({ provider: recorded });
    await expect(client.create({ idempotencyKey: "k" })).rejects.toMatchObject({
      code: "Validation",
      message: expect.stringContaining("idempotencyKey"),
    });
    expect(recorded.calls).toEqual([]);
  });

  test("a provider that honours idempotency keys gets the key and the core does not look it up", async () => {
    const honouring = recordingProvider(
      Object.assign(Object.create(listing) as typeof listing, { honours: ["metadata", "idempotencyKey"] }),
    );
    const client = createSandboxClient({ provider: honouring });
    const sandbox = await client.create({ idempotencyKey: "native-key" });
    expect(honouring.calls.map((c) => c.method)).toEqual(["doCreate"]);
    expect((await sandbox.getInfo()).metadata).not.toHaveProperty("sbox-idempotency-key");
    await sandbox.destroy();
  });

  test("hooks and plugins see creates, errors and destroys; beforeCreate can change the spec", async () => {
    const seen: string[] = [];
    const client = createSandboxClient({
      provider: sh,
      defaultMetadata: { team: "core" },
      plugins: [
        { name: "audit", hooks: { afterCreate: (s) => void seen.push(`plugin:created:${s.provider}`) } },
      ],
      hooks: {
        beforeCreate: (spec) => ({ ...spec, metadata: { ...spec.metadata, added: "yes" } }),
        afterCreate: () => void seen.push("created"),
        onError: (e, ctx) => void seen.push(`error:${ctx.operation}:${e.code}`),
        onDestroy: ({ id }) => void seen.push(`destroyed:${id.split(":")[0]}`),
      },
    });
    const sandbox = await client.create();
    await sandbox.files.read("/definitely/not/here").catch(() => {});
    await sandbox.destroy();
    expect(seen).toEqual([
      "plugin:created:sh-dash",
      "created",
      expect.stringMatching(/^error:files\.read .*:NotFound$/),
      "destroyed:sh-dash",
    ]);
  });

  test("an unsupported capability throws NotSupportedError before any provider call", async () => {
    const recorded = recordingProvider(sh);
    const client = createSandboxClient({ provider: recorded });
    const sandbox = await client.create();
    recorded.calls.length = 0;
    for (const call of [
      () => sandbox.stop(),
      () => sandbox.pause(),
      () => sandbox.setTimeout(1000),
      () => sandbox.resume(),
    ]) {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NotSupportedError);
      expect((error as SandboxError).code).toBe("NotSupported");
    }
    const listed = await (async () => {
      for await (const _ of client.list()) return "listed";
    })().catch((e: unknown) => e);
    expect((listed as SandboxError).code).toBe("NotSupported");
    expect(recorded.calls).toEqual([]);
    expect(sandbox.ports).toBeUndefined();
    expect(sandbox.pty).toBeUndefined();
    expect(sandbox.snapshots).toBeUndefined();
    expect(sandbox.can("pty")).toBe(false);
    expect(sandbox.can("streaming")).toBe(true);
    await sandbox.destroy();
  });

  test("opt-in lossy emulations open their namespaces; unknown names are refused", async () => {
    const client = createSandboxClient({ provider: sh, emulate: ["snapshot", "codeInterpreter"] });
    expect(client.capabilities.map.snapshot).toBe("emulated");
    expect(client.capabilities.map.statefulKernel).toBe("unsupported");
    const sandbox = await client.create();
    expect(sandbox.snapshots).toBeDefined();
    expect(sandbox.can("codeInterpreter")).toBe(true);
    await sandbox.destroy();
    expect(() => createSandboxClient({ provider: sh, emulate: ["pause" as never] })).toThrow(
      /not an opt-in emulation/,
    );
  });

  test("primitives-only mode turns native emulatable capabilities into emulated ones", () => {
    const client = createSandboxClient({ provider: sh, primitivesOnly: true });
    expect(client.capabilities.map.stdin).toBe("emulated");
    expect(client.capabilities.flags.exitCodeNative).toBe(false);
    expect(client.capabilities.flags.perCommandEnvCwd).toBe(false);
  });

  test("a disposed client refuses further work with InvalidState", async () => {
    const client = createSandboxClient({ provider: sh });
    await client.dispose();
    await client.dispose();
    await expect(client.create()).rejects.toMatchObject({ code: "InvalidState" });
  });

  test("a malformed provider is refused at client creation", () => {
    const broken = { ...sh, capabilities: { ...sh.capabilities, pty: "native" } };
    expect(() => createSandboxClient({ provider: broken as never })).toThrow(
      /pty is declared native but driver method doCreatePty is missing/,
    );
  });
});

describe("list and reap", () => {
  const lifecycle = shDriver({ userland: "dash", lifecycle: true });
  afterAll(() => lifecycle.cleanup());

  test("every list filter field is honoured by the core even when the provider ignores it", async () => {
    const client = createSandboxClient({ provider: lifecycle });
    const run = `run-${Date.now()}`;
    const a = await client.create({ metadata: { run, role: "a" } });
    const b = await client.create({ metadata: { run, role: "b" } });
    const c = await client.create({ metadata: { run, role: "b" } });
    await c.stop();
    const ids = async (filter: Parameters<typeof client.list>[0]) => {
      const out: string[] = [];
      for await (const info of client.list(filter)) out.push(info.id);
      return out.sort();
    };
    expect(await ids({ metadata: { run } })).toEqual([a.id, b.id, c.id].sort());
    expect(await ids({ metadata: { run, role: "b" } })).toEqual([b.id, c.id].sort());
    expect(await ids({ metadata: { run }, state: "stopped" })).toEqual([c.id]);
    expect(await ids({ metadata: { run }, state: ["running"] })).toEqual([a.id, b.id].sort());
    expect(await ids({ metadata: { run }, limit: 2 })).toHaveLength(2);
    expect(await ids({ metadata: { run }, limit: 0 })).toEqual([]);
    await expect(ids({ limit: -1 })).rejects.toMatchObject({ code: "Validation" });
    await expect(ids({ state: "sleeping" as never })).rejects.toMatchObject({ code: "Validation" });
    for (const s of [a, b, c]) await s.destroy();
  });

  test("reap stops sandboxes whose recorded ttl has passed, and only those", async () => {
    const client = createSandboxClient({ provider: lifecycle });
    const expiring = await client.create({ ttlMs: 50, metadata: { reap: "yes" } });
    const lasting = await client.create({ ttlMs: 3_600_000, metadata: { reap: "yes" } });
    expect((await expiring.getInfo()).expiresAt).toBeInstanceOf(Date);
    await new Promise((r) => setTimeout(r, 100));
    const reaped = await client.reap();
    expect(reaped.map((i) => i.id)).toEqual([expiring.id]);
    expect((await expiring.getInfo()).state).toBe("stopped");
    expect((await lasting.getInfo()).state).toBe("running");
    await expiring.destroy();
    await lasting.destroy();
  });

  test("ttlMs is refused where the provider can neither keep an expiry nor metadata to record one", async () => {
    const client = createSandboxClient({ provider: sh });
    await expect(client.create({ ttlMs: 1000 })).rejects.toMatchObject({ code: "Validation" });
  });
});
