/**
 * The Fly Machines emulator spoken to over plain HTTP, the way fly-go and flyctl do: auth schemes, the
 * machine state machine (incl. `failed` boots and a lingering `destroyed`), `/wait` by state and version,
 * leases with `fly-machine-lease-nonce`, exec within Fly's 30 s limit, list filters and cursors,
 * normalised configs and error bodies with a `status`. Runs on provider-local unless
 * SBOX_EMULATOR_BACKEND=docker.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type FlyEmulator, startFlyEmulator } from "../src/fly/index.js";

const backend = process.env.SBOX_EMULATOR_BACKEND === "docker" ? ("docker" as const) : ("local" as const);

let fly: FlyEmulator;
beforeAll(async () => {
  fly = await startFlyEmulator({
    backend,
    apps: ["emu-test"],
    destroyedLingerMs: 1_500,
    images: { "registry.example/missing:1": false },
  });
});
afterAll(() => fly?.close());

interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field against the spec's shapes
  body: any;
}

async function call(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await fetch(`${fly.url}${path}`, {
    method,
    headers: {
      Authorization: fly.token,
      ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    // not JSON: kept as text
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

const machines = "/v1/apps/emu-test/machines";

async function createStarted(config: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  const created = await call("POST", machines, { config: { image: "alpine:3.20", ...config }, ...extra });
  expect(created.status).toBe(200);
  const waited = await call("GET", `${machines}/${created.body.id}/wait?state=started&timeout=60`);
  expect(waited.status).toBe(200);
  return created.body as { id: string; instance_id: string; config: Record<string, unknown> };
}

describe("auth", () => {
  test("env holds the API host, a FlyV1 token and the app", () => {
    expect(fly.env).toEqual({ FLY_API_HOSTNAME: fly.url, FLY_API_TOKEN: fly.token, FLY_APP: "emu-test" });
    expect(fly.token).toMatch(/^FlyV1 fm2_/);
  });

  test("FlyV1 carries macaroons, Bearer does not; a wrong token or none is 401 without echoing it", async () => {
    const macaroon = fly.token.slice("FlyV1 ".length);
    expect((await call("GET", machines, undefined, { Authorization: `FlyV1 ${macaroon}` })).status).toBe(200);
    const bearer = await call("GET", machines, undefined, { Authorization: `Bearer ${macaroon}` });
    expect(bearer.status).toBe(401);
    expect(JSON.stringify(bearer.body)).not.toContain(macaroon);
    expect((await call("GET", machines, undefined, { Authorization: "FlyV1 fm2_wrong" })).status).toBe(401);
    const none = await fetch(`${fly.url}${machines}`);
    expect(none.status).toBe(401);
    expect(await none.json()).toHaveProperty("error");
  });
});

describe("machines", () => {
  test("create answers the normalised config; the machine boots its init and exec runs in it", async () => {
    const machine = await createStarted({ env: { GREETING: "hi" }, guest: { cpus: 2, memory_mb: 512 } });
    expect(machine.config).toMatchObject({
      image: "alpine:3.20",
      env: { GREETING: "hi" },
      guest: { cpu_kind: "shared", cpus: 2, memory_mb: 512 },
    });
    expect(machine.config.restart).toBeDefined();
    const got = await call("GET", `${machines}/${machine.id}`);
    expect(got.body).toMatchObject({
      id: machine.id,
      state: "started",
      region: expect.any(String),
      instance_id: machine.instance_id,
    });
    const exec = await call("POST", `${machines}/${machine.id}/exec`, {
      command: ["sh", "-c", 'printf "%s" "$GREETING"; exit 3'],
    });
    expect(exec.status).toBe(200);
    expect(exec.body).toMatchObject({ exit_code: 3, stdout: "hi" });
    const deprecated = await call("POST", `${machines}/${machine.id}/exec`, { cmd: "echo 'two words'" });
    expect(deprecated.body.stdout).toBe("two words\n");
    expect((await call("DELETE", `${machines}/${machine.id}?force=true`)).status).toBe(200);
  });

  test("exec answers 408 past its timeout and never runs beyond Fly's 30 s", async () => {
    const machine = await createStarted();
    const short = await call("POST", `${machines}/${machine.id}/exec`, {
      command: ["sleep", "10"],
      timeout: 1,
    });
    expect(short.status).toBe(408);
    const started = Date.now();
    const capped = await call("POST", `${machines}/${machine.id}/exec`, {
      command: ["sleep", "45"],
      timeout: 300,
    });
    expect(capped.status).toBe(408);
    expect(capped.body.error).toMatch(/at most 30s/);
    expect(Date.now() - started).toBeLessThan(44_000);
    await call("DELETE", `${machines}/${machine.id}?force=true`);
  }, 90_000);

  test("stop, wait by state, start: a new instance version; wait for an old version's state", async () => {
    const machine = await createStarted();
    const stop = await call("POST", `${machines}/${machine.id}/stop`, { signal: "SIGTERM", timeout: "5s" });
    expect(stop.status).toBe(200);
    const stopped = await call(
      "GET",
      `${machines}/${machine.id}/wait?state=stopped&instance_id=${machine.instance_id}&timeout=60`,
    );
    expect(stopped.status).toBe(200);
    expect(stopped.body).toMatchObject({ ok: true, state: "stopped" });
    expect(stopped.body.version).toBe(machine.instance_id);
    expect((await call("POST", `${machines}/${machine.id}/start`)).status).toBe(200);
    const started = await call("GET", `${machines}/${machine.id}/wait?state=started&timeout=60`);
    expect(started.body.state).toBe("started");
    const bad = await call("GET", `${machines}/${machine.id}/wait?state=sleeping`);
    expect(bad.status).toBe(400);
    const timeout = await call("GET", `${machines}/${machine.id}/wait?state=stopped&timeout=1`);
    expect(timeout.status).toBe(408);
    await call("DELETE", `${machines}/${machine.id}?force=true`);
  });

  test("a boot that cannot pull its image ends failed: a wait for started or failed says which at once", async () => {
    const created = await call("POST", machines, { config: { image: "registry.example/missing:1" } });
    expect(created.status).toBe(200);
    const waited = await call(
      "GET",
      `${machines}/${created.body.id}/wait?state=started&state=failed&timeout=60`,
    );
    expect(waited.body).toMatchObject({ ok: true, state: "failed" });
    // A wait for started alone holds until its timeout, as Fly's does.
    expect((await call("GET", `${machines}/${created.body.id}/wait?state=started&timeout=1`)).status).toBe(
      408,
    );
    const got = await call("GET", `${machines}/${created.body.id}`);
    expect(got.body.state).toBe("failed");
    const failedWait = await call("GET", `${machines}/${created.body.id}/wait?state=failed&timeout=5`);
    expect(failedWait.body).toMatchObject({ ok: true, state: "failed" });
    await call("DELETE", `${machines}/${created.body.id}?force=true`);
  });

  test("a destroyed machine lingers as destroyed, then is 404", async () => {
    const machine = await createStarted();
    const busy = await call("DELETE", `${machines}/${machine.id}`);
    expect(busy.status).toBe(412);
    expect((await call("DELETE", `${machines}/${machine.id}?kill=true`)).status).toBe(200);
    const waited = await call("GET", `${machines}/${machine.id}/wait?state=destroyed&timeout=30`);
    expect(waited.body.state).toBe("destroyed");
    expect((await call("GET", `${machines}/${machine.id}`)).body.state).toBe("destroyed");
    const listed = await call("GET", `${machines}?include_deleted=true`);
    expect(listed.body.map((m: { id: string }) => m.id)).toContain(machine.id);
    expect((await call("GET", machines)).body.map((m: { id: string }) => m.id)).not.toContain(machine.id);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect((await call("GET", `${machines}/${machine.id}`)).status).toBe(404);
  });
});

describe("leases", () => {
  test("a held lease refuses changes without its nonce, allows them with it, and is released by nonce", async () => {
    const machine = await createStarted();
    const lease = await call("POST", `${machines}/${machine.id}/lease`, { ttl: 30, description: "test" });
    expect(lease.status).toBe(201);
    const nonce: string = lease.body.data?.nonce ?? lease.body.nonce;
    expect(typeof nonce).toBe("string");
    const again = await call("POST", `${machines}/${machine.id}/lease`, { ttl: 30 });
    expect(again.status).toBe(409);
    expect((await call("POST", `${machines}/${machine.id}/stop`, {})).status).toBe(409);
    expect(
      (await call("POST", `${machines}/${machine.id}/stop`, {}, { "fly-machine-lease-nonce": nonce })).status,
    ).toBe(200);
    expect((await call("GET", `${machines}/${machine.id}?include_leases=true`)).body.lease).toMatchObject({
      description: "test",
    });
    expect((await call("GET", `${machines}/${machine.id}/lease`)).status).toBe(200);
    expect((await call("DELETE", `${machines}/${machine.id}/lease`)).status).not.toBe(200);
    expect(
      (
        await call("DELETE", `${machines}/${machine.id}/lease`, undefined, {
          "fly-machine-lease-nonce": nonce,
        })
      ).status,
    ).toBe(200);
    expect((await call("DELETE", `${machines}/${machine.id}?force=true`)).status).toBe(200);
  });
});

describe("listing and errors", () => {
  test("list filters by state, metadata and region; summary trims; limit pages with a cursor", async () => {
    const tag = `t${Date.now()}`;
    const a = await createStarted({ metadata: { tag, n: "a" } });
    const b = await createStarted({ metadata: { tag, n: "b" } });
    try {
      await call("POST", `${machines}/${b.id}/stop`, {});
      await call("GET", `${machines}/${b.id}/wait?state=stopped&timeout=60`);
      const ids = (answer: Answer) => answer.body.map((m: { id: string }) => m.id).sort();
      expect(ids(await call("GET", `${machines}?metadata.tag=${tag}`))).toEqual([a.id, b.id].sort());
      expect(ids(await call("GET", `${machines}?metadata.tag=${tag}&state=stopped`))).toEqual([b.id]);
      expect(ids(await call("GET", `${machines}?metadata.tag=${tag}&region=nowhere`))).toEqual([]);
      const summary = await call("GET", `${machines}?metadata.tag=${tag}&summary=true`);
      expect(summary.body[0].config?.env).toBeUndefined();
      const first = await call("GET", `${machines}?metadata.tag=${tag}&limit=1`);
      expect(first.body).toHaveLength(1);
      const cursor = first.headers.get("fly-next-cursor");
      expect(cursor).toBeTruthy();
      const second = await call(
        "GET",
        `${machines}?metadata.tag=${tag}&limit=1&cursor=${encodeURIComponent(cursor!)}`,
      );
      expect(second.body).toHaveLength(1);
      expect(second.body[0].id).not.toBe(first.body[0].id);
    } finally {
      await Promise.all([a, b].map((m) => call("DELETE", `${machines}/${m.id}?force=true`)));
    }
  });

  test("errors carry an error message and a status where Fly names one", async () => {
    const taken = await call("POST", "/v1/apps", { app_name: "emu-test", org_slug: "personal" });
    expect(taken.status).toBe(422);
    expect(taken.body).toMatchObject({ error: expect.any(String), status: "name_taken" });
    const missing = await call("GET", `${machines}/nosuchmachine`);
    expect(missing.status).toBe(404);
    expect(missing.body).toHaveProperty("error");
    expect((await call("GET", "/v1/apps/nosuchapp/machines")).status).toBe(404);
    const invalid = await call("POST", machines, { config: {} });
    expect(invalid.status).toBe(400);
    const notJson = await fetch(`${fly.url}${machines}`, {
      method: "POST",
      headers: { Authorization: fly.token },
      body: "{",
    });
    expect(notJson.status).toBe(400);
  });
});
