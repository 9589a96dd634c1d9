/**
 * Error mapping and retries of the adapter against the Fly Machines emulator: every failure is a
 * SandboxError with the right code, the token never shows, idempotent calls are retried and
 * non-idempotent ones are not (a lost answer must not run a command twice or make a second machine).
 */
import { createSandboxClient } from "@sbox/core";
import { SandboxError } from "@sbox/core/spec";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { fly } from "../src/index.js";
import { type FlyTestServer, startFlyTestServer, testProvider } from "./fly-test-env.js";

let server: FlyTestServer;

beforeAll(async () => {
  server = await startFlyTestServer();
});

afterAll(async () => {
  await server.close();
});

beforeEach(() => {
  server.hangBoots(false);
});

/** The error `promise` rejects with; fails the test when it resolves. */
async function rejection(promise: PromiseLike<unknown>): Promise<SandboxError> {
  try {
    await promise;
  } catch (error) {
    expect(SandboxError.isInstance(error)).toBe(true);
    return error as SandboxError;
  }
  throw new Error("expected a rejection, but the promise resolved");
}

const countOf = (route: string, from: number): number =>
  server.requests.slice(from).filter((r) => r.route === route).length;

describe("credentials", () => {
  test("a wrong token is Unauthorized, names FLY_API_TOKEN and never shows the token", async () => {
    const secret = "fo1_wrong_token_3b9f2c1e8d7a6b5c4d3e2f1a0b9c8d7e";
    const client = createSandboxClient({ provider: testProvider(server, { apiToken: secret }) });
    const error = await rejection(client.create());
    expect(error.code).toBe("Unauthorized");
    expect(error.status).toBe(401);
    expect(error.retryable).toBe(false);
    expect(error.message).toContain("FLY_API_TOKEN");
    expect(error.message).not.toContain(secret);
    expect(JSON.stringify(error)).not.toContain(secret);
    expect(String(error.stack)).not.toContain(secret);
  });

  test("a token echoed back by a server is scrubbed from the message", async () => {
    const client = createSandboxClient({ provider: testProvider(server) });
    const sandbox = await client.create();
    try {
      server.fail({
        route: "get",
        status: 400,
        body: JSON.stringify({ error: `bad token ${server.token}` }),
      });
      const error = await rejection(sandbox.getInfo());
      expect(error.code).toBe("Validation");
      expect(error.message).toContain("[redacted]");
      expect(error.message).not.toContain(server.token);
    } finally {
      await sandbox.destroy();
    }
  });

  test("without a token, calls fail with Unauthorized naming FLY_API_TOKEN before any request", async () => {
    const saved = process.env.FLY_API_TOKEN;
    delete process.env.FLY_API_TOKEN;
    try {
      const before = server.requests.length;
      const provider = fly({ appName: server.app, apiBaseUrl: server.url });
      const client = createSandboxClient({ provider });
      const error = await rejection(client.create());
      expect(error.code).toBe("Unauthorized");
      expect(error.message).toContain("FLY_API_TOKEN");
      expect(server.requests.length).toBe(before);
    } finally {
      if (saved !== undefined) process.env.FLY_API_TOKEN = saved;
    }
  });

  test("without an app, calls fail with Validation naming FLY_APP before any request", async () => {
    const saved = process.env.FLY_APP;
    delete process.env.FLY_APP;
    try {
      const before = server.requests.length;
      const client = createSandboxClient({
        provider: fly({ apiToken: server.token, apiBaseUrl: server.url }),
      });
      const error = await rejection(client.connect("fly:0123456789abcd"));
      expect(error.code).toBe("Validation");
      expect(error.message).toContain("FLY_APP");
      expect(server.requests.length).toBe(before);
    } finally {
      if (saved !== undefined) process.env.FLY_APP = saved;
    }
  });

  test("credentials are read from FLY_API_TOKEN and FLY_APP", async () => {
    const saved = { token: process.env.FLY_API_TOKEN, app: process.env.FLY_APP };
    process.env.FLY_API_TOKEN = server.token;
    process.env.FLY_APP = server.app;
    try {
      const client = createSandboxClient({ provider: fly({ apiBaseUrl: server.url }) });
      const sandbox = await client.create();
      expect((await sandbox.commands.run("echo from-env")).stdout).toBe("from-env\n");
      await sandbox.destroy();
    } finally {
      for (const [name, value] of [
        ["FLY_API_TOKEN", saved.token],
        ["FLY_APP", saved.app],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  test("an app the token cannot reach is NotFound (404), not a crash", async () => {
    const client = createSandboxClient({ provider: testProvider(server, { appName: "no-such-app" }) });
    const error = await rejection(client.create());
    expect(error.code).toBe("NotFound");
    expect(error.message).toContain("no-such-app");
  });

  test("options are checked at fly(): a bad base URL or app name is a Validation error", () => {
    expect(() => fly({ apiBaseUrl: "not a url" })).toThrow(/apiBaseUrl/);
    expect(() => fly({ apiBaseUrl: "ftp://example.com" })).toThrow(/http/);
    expect(() => fly({ appName: "Bad App!" })).toThrow(/appName/);
    expect(() => fly({ startTimeoutMs: -1 })).toThrow(/startTimeoutMs/);
    try {
      fly({ retry: { retries: 1.5 } });
      expect.unreachable("fly() accepted retries 1.5");
    } catch (error) {
      expect(SandboxError.isInstance(error) && error.code).toBe("Validation");
    }
  });
});

describe("HTTP statuses", () => {
  test("404 on connect is NotFound, for ids of every shape", async () => {
    const client = createSandboxClient({ provider: testProvider(server) });
    for (const id of ["fly:0123456789abcd", "0123456789abcd", "fly:../../etc", "fly:a b", "fly:ünï"]) {
      const error = await rejection(client.connect(id));
      expect(error.code, id).toBe("NotFound");
    }
  });

  test("409 is Conflict and is not retried", async () => {
    const client = createSandboxClient({ provider: testProvider(server) });
    const sandbox = await client.create();
    try {
      const from = server.requests.length;
      server.fail({ route: "get", status: 409, body: JSON.stringify({ error: "lease held" }) });
      const error = await rejection(sandbox.getInfo());
      expect(error.code).toBe("Conflict");
      expect(error.message).toContain("lease held");
      expect(countOf("get", from)).toBe(1);
    } finally {
      await sandbox.destroy();
    }
  });

  test("412 from a machine in the wrong state is InvalidState", async () => {
    const client = createSandboxClient({ provider: testProvider(server) });
    const sandbox = await client.create();
    try {
      await sandbox.stop();
      const error = await rejection(sandbox.commands.run("true"));
      expect(error.code).toBe("InvalidState");
      expect(error.status).toBe(412);
    } finally {
      await sandbox.destroy();
    }
  });

  test("429 is retried (after Retry-After), also for exec, which nothing else retries", async () => {
    const client = createSandboxClient({ provider: testProvider(server) });
    const sandbox = await client.create();
    try {
      const from = server.requests.length;
      server.fail({ route: "exec", status: 429, times: 2, retryAfter: "0" });
      const result = await sandbox.commands.run("echo after-429");
      expect(result.stdout).toBe("after-429\n");
      expect(server.requests.slice(from).filter((r) => r.route === "exec" && r.status === 429)).toHaveLength(
        2,
      );
    } finally {
      await sandbox.destroy();
    }
  });

  test("5xx on an idempotent call (get, list, delete) is retried until it succeeds", async () => {
    const client = createSandboxClient({ provider: testProvider(server) });
    const sandbox = await client.create({ metadata: { "fly-test": "retry" } });
    const from = server.requests.length;
    server.fail({ route: "get", status: 503, times: 2 });
    expect((await sandbox.getInfo()).state).toBe("running");
    expect(countOf("get", from)).toBe(3);
    server.fail({ route: "list", status: 502 });
    const listed = [];
    for await (const info of client.list({ metadata: { "fly-test": "retry" } })) listed.push(info.id);
    expect(listed).toEqual([sandbox.id]);
    server.fail({ route: "delete", status: 500 });
    await sandbox.destroy();
    expect(server.machineIds()).not.toContain(sandbox.id.slice(4));
  });

  test("5xx on exec is not retried: the command may have run", async () => {
    const client = createSandboxClient({ provider: testProvider(server) });
    const sandbox = await client.create();
    try {
      const from = server.requests.length;
      server.fail({ route: "exec", status: 502, phase: "after" });
      // The core's streaming emulation starts the command with one exec: a repeat would append twice.
      const error = await rejection(sandbox.commands.run("echo x >> ran-once.txt"));
      expect(error.code).toBe("Provider");
      expect(error.status).toBe(502);
      expect(error.retryable).toBe(true);
      expect(server.requests.slice(from).filter((r) => r.route === "exec" && r.status === 502)).toHaveLength(
        1,
      );
      // The command did run once (the failure came after Fly carried it out): wait for it, then check
      // that nothing ran it a second time.
      let seen = "";
      for (let i = 0; i < 100 && seen === ""; i++) {
        seen = (await sandbox.commands.run("cat ran-once.txt 2>/dev/null")).stdout;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect((await sandbox.commands.run("cat ran-once.txt")).stdout).toBe("x\n");
    } finally {
      await sandbox.destroy();
    }
  });

  test("5xx on create without an idempotency key is not retried", async () => {
    const client = createSandboxClient({ provider: testProvider(server) });
    const before = server.machineIds().length;
    const from = server.requests.length;
    server.fail({ route: "create", status: 500 });
    const error = await rejection(client.create());
    expect(error.code).toBe("Provider");
    expect(countOf("create", from)).toBe(1);
    expect(server.machineIds().length).toBe(before);
  });

  test("with an idempotency key, a create whose answer was lost is found again, not repeated", async () => {
    const client = createSandboxClient({ provider: testProvider(server) });
    const before = server.machineIds().length;
    const from = server.requests.length;
    server.fail({ route: "create", status: 502, phase: "after" });
    const sandbox = await client.create({ idempotencyKey: `key-${Date.now()}` });
    try {
      expect(countOf("create", from)).toBe(1);
      expect(server.machineIds().length).toBe(before + 1);
      expect(server.machineIds()).toContain(sandbox.id.slice(4));
      expect((await sandbox.commands.run("echo one")).stdout).toBe("one\n");
    } finally {
      await sandbox.destroy();
    }
  });

  test("retries end: a call failing every time rejects with the last status", async () => {
    const client = createSandboxClient({ provider: testProvider(server) });
    const sandbox = await client.create();
    try {
      const from = server.requests.length;
      server.fail({ route: "get", status: 503, times: 10 });
      const error = await rejection(sandbox.getInfo());
      expect(error.code).toBe("Provider");
      expect(error.status).toBe(503);
      expect(countOf("get", from)).toBe(4); // the first attempt and 3 retries (testProvider's policy)
    } finally {
      server.clearFaults();
      await sandbox.destroy();
    }
  });

  test("an unreachable API is a retryable Provider error naming the URL, without the token", async () => {
    const closed = await startFlyTestServer();
    const url = closed.url;
    await closed.close();
    const client = createSandboxClient({
      provider: fly({
        apiToken: "fo1_unreachable_secret_value",
        appName: "x",
        apiBaseUrl: url,
        retry: { retries: 1, baseDelayMs: 1 },
      }),
    });
    const error = await rejection(client.connect("fly:0123456789abcd"));
    expect(error.code).toBe("Provider");
    expect(error.retryable).toBe(true);
    expect(error.message).toContain(url);
    expect(error.message).not.toContain("fo1_unreachable_secret_value");
  });
});

describe("create waits until started", () => {
  test("a machine that never starts fails create with Timeout, and is destroyed", async () => {
    server.hangBoots(true);
    const before = new Set(server.machineIds());
    const client = createSandboxClient({ provider: testProvider(server, { startTimeoutMs: 1_500 }) });
    const started = Date.now();
    const error = await rejection(client.create());
    const took = Date.now() - started;
    expect(error.code).toBe("Timeout");
    expect(error.message).toMatch(/did not become started within 1500 ms \(its state is starting\)/);
    expect(took).toBeGreaterThanOrEqual(1_400);
    expect(server.machineIds().filter((id) => !before.has(id))).toEqual([]);
  });

  test("the wait is asked in bounded calls of at most 60 s", async () => {
    const client = createSandboxClient({ provider: testProvider(server, { startTimeoutMs: 600_000 }) });
    const from = server.requests.length;
    const sandbox = await client.create();
    try {
      const waits = server.requests.slice(from).filter((r) => r.route === "wait");
      expect(waits.length).toBeGreaterThan(0);
      for (const wait of waits) {
        const query = new URLSearchParams(wait.query);
        expect(query.get("state")).toBe("started");
        expect(Number(query.get("timeout"))).toBeLessThanOrEqual(60);
      }
    } finally {
      await sandbox.destroy();
    }
  });

  test("a 408 from the wait route is asked again until the machine starts", async () => {
    const client = createSandboxClient({ provider: testProvider(server) });
    const from = server.requests.length;
    server.fail({ route: "wait", status: 408, times: 2 });
    const sandbox = await client.create();
    try {
      expect(countOf("wait", from)).toBe(3);
      expect((await sandbox.getInfo()).state).toBe("running");
    } finally {
      await sandbox.destroy();
    }
  });

  test("aborting create rejects with Aborted", async () => {
    server.hangBoots(true);
    const client = createSandboxClient({ provider: testProvider(server) });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const error = await rejection(client.create({ signal: controller.signal }));
    expect(error.code).toBe("Aborted");
  });
});

describe("tokens", () => {
  test("a macaroon pasted with its FlyV1 scheme is sent as FlyV1, once", async () => {
    const seen: string[] = [];
    const spy: typeof fetch = (input, init) => {
      seen.push(new Headers(init?.headers).get("authorization") ?? "");
      return fetch(input, init);
    };
    const client = createSandboxClient({ provider: testProvider(server, { fetch: spy }) });
    const error = await rejection(client.connect("fly:0123456789abcd"));
    expect(error.code).toBe("NotFound");
    expect(server.token.startsWith("FlyV1 fm2_")).toBe(true);
    expect(seen).toEqual([server.token]);
  });

  test("a bare macaroon gets the FlyV1 scheme; a Bearer-pasted macaroon is not doubled or sent as Bearer", async () => {
    const bare = server.token.slice("FlyV1 ".length);
    for (const apiToken of [bare, `Bearer ${bare}`, `  FlyV1   ${bare} `]) {
      const client = createSandboxClient({ provider: testProvider(server, { apiToken }) });
      const sandbox = await client.create();
      expect((await sandbox.commands.run("echo ok")).stdout).toBe("ok\n");
      await sandbox.destroy();
    }
  });

  test("a user token travels with Bearer, and the emulator refuses a macaroon sent as Bearer", async () => {
    const other = await startFlyTestServer({ tokens: ["fo1_user_token_0123456789abcdef"] });
    try {
      const client = createSandboxClient({
        provider: testProvider(other, { apiToken: "fo1_user_token_0123456789abcdef" }),
      });
      const sandbox = await client.create();
      await sandbox.destroy();
      const macaroonAsBearer = await fetch(`${server.url}/v1/apps/${server.app}/machines`, {
        headers: { Authorization: `Bearer ${server.token.slice("FlyV1 ".length)}` },
      });
      expect(macaroonAsBearer.status).toBe(401);
    } finally {
      await other.close();
    }
  });
});

describe("exec limit", () => {
  test("execTimeoutSeconds beyond Fly's 30 s limit is refused at fly()", () => {
    try {
      fly({ execTimeoutSeconds: 300 });
      expect.unreachable("fly() accepted an exec timeout Fly cannot honour");
    } catch (error) {
      expect(SandboxError.isInstance(error) && error.code).toBe("Validation");
      expect(String((error as Error).message)).toContain("30");
    }
  });

  test("a command longer than the exec limit runs detached through the core's emulation and finishes", {
    timeout: 120_000,
  }, async () => {
    const client = createSandboxClient({ provider: testProvider(server) });
    const sandbox = await client.create();
    try {
      const from = server.requests.length;
      const result = await sandbox.commands.run("sleep 33; echo finished");
      expect(result).toMatchObject({ stdout: "finished\n", exitCode: 0 });
      expect(result.durationMs).toBeGreaterThanOrEqual(33_000);
      // No exec call was held open near Fly's limit: each answered well within it.
      const execs = server.emulator.log.slice(from).filter((e) => e.path.endsWith("/exec"));
      expect(execs.length).toBeGreaterThan(1);
      expect(Math.max(...execs.map((e) => e.ms ?? 0))).toBeLessThan(25_000);
    } finally {
      await sandbox.destroy();
    }
  });
});

describe("leases", () => {
  test("stop, pause, resume and destroy take the machine's lease and send its nonce", async () => {
    const client = createSandboxClient({ provider: testProvider(server) });
    const sandbox = await client.create();
    const from = server.requests.length;
    await sandbox.stop();
    await sandbox.resume();
    await sandbox.destroy();
    const calls = server.requests.slice(from).map((r) => `${r.method} ${r.route}`);
    const changes = calls.filter((c) => c === "POST stop" || c === "POST start" || c === "DELETE delete");
    expect(changes).toEqual(["POST stop", "POST start", "DELETE delete"]);
    expect(calls.filter((c) => c === "POST lease")).toHaveLength(3);
  });

  test("a machine leased by another client is not changed: Conflict naming the holder", async () => {
    const client = createSandboxClient({ provider: testProvider(server) });
    const sandbox = await client.create();
    const id = sandbox.id.slice(4);
    const taken = await fetch(`${server.url}/v1/apps/${server.app}/machines/${id}/lease`, {
      method: "POST",
      headers: { Authorization: server.token, "Content-Type": "application/json" },
      body: JSON.stringify({ ttl: 60, description: "someone else's deploy" }),
    });
    expect(taken.status).toBe(201);
    const { nonce } = (await taken.json()) as { nonce: string };
    try {
      const error = await rejection(sandbox.stop());
      expect(error.code).toBe("Conflict");
      expect(error.message).toContain("someone else's deploy");
      expect((await sandbox.getInfo()).state).toBe("running");
    } finally {
      await fetch(`${server.url}/v1/apps/${server.app}/machines/${id}/lease`, {
        method: "DELETE",
        headers: { Authorization: server.token, "fly-machine-lease-nonce": nonce },
      });
      await sandbox.destroy();
    }
  });
});

describe("failed boots", () => {
  test("a machine that fails to boot fails create at once with the reason, and is destroyed", async () => {
    const other = await startFlyTestServer({ images: { "registry.example/broken:1": false } });
    try {
      const client = createSandboxClient({
        provider: testProvider(other, { image: "registry.example/broken:1", startTimeoutMs: 120_000 }),
      });
      const started = Date.now();
      const error = await rejection(client.create());
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(error.code).toBe("Provider");
      expect(error.message).toMatch(/failed to start: .*failed to pull image registry\.example\/broken:1/);
      expect(other.machineIds()).toEqual([]);
    } finally {
      await other.close();
    }
  });
});

describe("destroy", () => {
  test("destroy is idempotent, also through a handle of a machine another client destroyed", async () => {
    const client = createSandboxClient({ provider: testProvider(server) });
    const sandbox = await client.create();
    const other = await createSandboxClient({ provider: testProvider(server) }).connect(sandbox.id);
    await other.destroy();
    await sandbox.destroy();
    await sandbox.destroy();
    expect((await sandbox.getInfo()).state).toBe("destroyed");
    const statuses = server.requests
      .filter((r) => r.route === "delete" && r.machineId === sandbox.id.slice(4))
      .map((r) => r.status);
    // One DELETE; the later destroys find the machine destroyed (or gone) when they try to lease it.
    expect(statuses).toEqual([200]);
  });
});
