/**
 * The test server itself, spoken to with plain fetch: it must follow the Machines API reference (paths,
 * JSON, status codes, bearer auth) and back machines with real processes, or the adapter's tests would
 * prove nothing.
 */
import { existsSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type FlyMachinesTestServer, startFlyMachinesTestServer } from "./fly-machines-test-server.js";

let server: FlyMachinesTestServer;

beforeAll(async () => {
  server = await startFlyMachinesTestServer({ bootDelayMs: 10 });
});

afterAll(async () => {
  await server.close();
});

interface Answer {
  status: number;
  body: Record<string, unknown> & { error?: string };
}

async function call(method: string, path: string, body?: unknown, token = server.token): Promise<Answer> {
  const response = await fetch(`${server.url}/v1/apps/${server.app}/machines${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  expect(response.headers.get("content-type")).toBe("application/json");
  return { status: response.status, body: (await response.json()) as Answer["body"] };
}

async function started(config: Record<string, unknown> = {}): Promise<string> {
  const created = await call("POST", "", { config: { image: "alpine", ...config } });
  expect(created.status).toBe(200);
  const id = created.body.id as string;
  expect((await call("GET", `/${id}/wait?state=started&timeout=5`)).status).toBe(200);
  return id;
}

const exec = (id: string, body: Record<string, unknown>) => call("POST", `/${id}/exec`, body);

/** The one-letter state of a process in /proc (R, S, T for stopped...). */
function processState(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0];
  } catch {
    return undefined;
  }
}

describe("protocol", () => {
  test("a wrong bearer token is 401 with an error body, on every route", async () => {
    for (const [method, path] of [
      ["GET", ""],
      ["POST", ""],
      ["GET", "/x"],
      ["POST", "/x/exec"],
      ["DELETE", "/x"],
    ] as const) {
      const answer = await call(method, path, method === "POST" ? {} : undefined, "wrong");
      expect(answer.status, `${method} ${path}`).toBe(401);
      expect(typeof answer.body.error).toBe("string");
    }
  });

  test("an unknown app and an unknown machine are 404", async () => {
    const response = await fetch(`${server.url}/v1/apps/nope/machines`, {
      headers: { Authorization: `Bearer ${server.token}` },
    });
    expect(response.status).toBe(404);
    expect((await call("GET", "/0123456789abcd")).status).toBe(404);
    expect((await call("POST", "/0123456789abcd/exec", { command: ["true"] })).status).toBe(404);
  });

  test("create requires config.image and checks region, guest and services", async () => {
    expect((await call("POST", "", {})).status).toBe(400);
    expect((await call("POST", "", { config: { image: "" } })).status).toBe(400);
    expect((await call("POST", "", { config: { image: "a" }, region: "Frankfurt" })).status).toBe(400);
    expect((await call("POST", "", { config: { image: "a", guest: { memory_mb: 300 } } })).status).toBe(400);
    expect(
      (await call("POST", "", { config: { image: "a", services: [{ protocol: "tcp", internal_port: 0 }] } }))
        .status,
    ).toBe(400);
    expect(server.machineIds()).toEqual([]);
  });

  test("wait: state and timeout are checked, stopped needs instance_id, and a timeout is 408", async () => {
    server.hangBoots(true);
    const created = await call("POST", "", { config: { image: "alpine" } });
    const id = created.body.id as string;
    try {
      expect((await call("GET", `/${id}/wait?state=running`)).status).toBe(400);
      expect((await call("GET", `/${id}/wait?state=started&timeout=61`)).status).toBe(400);
      expect((await call("GET", `/${id}/wait?state=stopped&timeout=1`)).status).toBe(400);
      const timedOut = await call("GET", `/${id}/wait?state=started&timeout=1`);
      expect(timedOut.status).toBe(408);
      expect(timedOut.body.error).toMatch(/deadline_exceeded/);
      expect((await call("GET", `/${id}`)).body.state).toBe("starting");
    } finally {
      server.hangBoots(false);
      await call("DELETE", `/${id}?force=true`);
    }
  });

  test("list filters by metadata.{key} and region", async () => {
    const a = await call("POST", "", { config: { image: "a", metadata: { k: "v 1" } }, region: "fra" });
    const b = await call("POST", "", { config: { image: "a", metadata: { k: "v2" } } });
    try {
      const byMetadata = await fetch(`${server.url}/v1/apps/${server.app}/machines?metadata.k=v%201`, {
        headers: { Authorization: `Bearer ${server.token}` },
      });
      expect(((await byMetadata.json()) as { id: string }[]).map((m) => m.id)).toEqual([a.body.id]);
      const byRegion = await fetch(`${server.url}/v1/apps/${server.app}/machines?region=fra`, {
        headers: { Authorization: `Bearer ${server.token}` },
      });
      expect(((await byRegion.json()) as { id: string }[]).map((m) => m.id)).toEqual([a.body.id]);
    } finally {
      await call("DELETE", `/${a.body.id}?force=true`);
      await call("DELETE", `/${b.body.id}?force=true`);
    }
  });

  test("injected faults answer before or after carrying the request out", async () => {
    server.fail({ route: "create", status: 503, retryAfter: "2" });
    const before = await fetch(`${server.url}/v1/apps/${server.app}/machines`, {
      method: "POST",
      headers: { Authorization: `Bearer ${server.token}` },
      body: JSON.stringify({ config: { image: "a" } }),
    });
    expect(before.status).toBe(503);
    expect(before.headers.get("retry-after")).toBe("2");
    expect(server.machineIds()).toEqual([]);
    server.fail({ route: "create", status: 502, phase: "after" });
    expect((await call("POST", "", { config: { image: "a" } })).status).toBe(502);
    const [id] = server.machineIds();
    expect(id).toBeDefined();
    await call("DELETE", `/${id}?force=true`);
  });
});

describe("machines are real processes", () => {
  test("exec runs argv in the machine's directory with HOME, FLY_* env and a private /tmp", async () => {
    const one = await started();
    const two = await started();
    try {
      const answer = await exec(one, {
        command: ["sh", "-c", 'pwd; echo "$HOME|$FLY_MACHINE_ID|$FLY_APP_NAME"; echo one > /tmp/mine; cat'],
        stdin: "from stdin ünï",
        timeout: 10,
      });
      expect(answer.status).toBe(200);
      const dir = server.machineDir(one)!;
      expect(answer.body).toEqual({
        stdout: `${dir}\n${dir}|${one}|${server.app}\nfrom stdin ünï`,
        stderr: "",
        exit_code: 0,
      });
      const other = await exec(two, { command: ["sh", "-c", "cat /tmp/mine 2>&1; echo; exit 3"] });
      expect(other.body.exit_code).toBe(3);
      if (server.isolation !== "none") expect(other.body.stdout).toMatch(/No such file/);
    } finally {
      await call("DELETE", `/${one}?force=true`);
      await call("DELETE", `/${two}?force=true`);
    }
  });

  test("exec validates its body, refuses a missing program and a machine that is not started", async () => {
    const id = await started();
    try {
      expect((await exec(id, { command: "echo hi" })).status).toBe(400);
      expect((await exec(id, { command: [] })).status).toBe(400);
      expect((await exec(id, { command: ["echo", "a\0b"] })).status).toBe(400);
      expect((await exec(id, { command: ["true"], timeout: 0 })).status).toBe(400);
      const missing = await exec(id, { command: ["sbox-no-such-program"] });
      expect(missing.status).toBe(400);
      expect(missing.body.error).toMatch(/executable file not found/);
      expect((await call("POST", `/${id}/stop`)).status).toBe(200);
      const instance = (await call("GET", `/${id}`)).body.instance_id as string;
      expect((await call("GET", `/${id}/wait?state=stopped&timeout=5&instance_id=${instance}`)).status).toBe(
        200,
      );
      const stopped = await exec(id, { command: ["true"] });
      expect(stopped.status).toBe(412);
    } finally {
      await call("DELETE", `/${id}?force=true`);
    }
  });

  test("exec past its timeout is 408 and its process group is killed; a signal death is exit_signal", async () => {
    const id = await started();
    try {
      const marker = `${server.machineDir(id)}/still-running`;
      const slow = await exec(id, { command: ["sh", "-c", "sleep 3; touch still-running"], timeout: 1 });
      expect(slow.status).toBe(408);
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect(existsSync(marker)).toBe(false);
      const killed = await exec(id, { command: ["sh", "-c", "kill -KILL $$"] });
      if (server.isolation === "bwrap") {
        expect(killed.body.exit_code).toBe(137); // bwrap reports a signal death as 128+n
      } else {
        expect(killed.body).toMatchObject({ exit_code: -1, exit_signal: 9 });
      }
    } finally {
      await call("DELETE", `/${id}?force=true`);
    }
  });

  test("stop kills the processes and the next start resets the files; suspend freezes them", async () => {
    const id = await started();
    try {
      await exec(id, { command: ["sh", "-c", "echo kept > file; (setsid sleep 300 >/dev/null 2>&1 &)"] });
      const [pid] = server.machinePids(id);
      expect(pid).toBeDefined();
      expect((await call("POST", `/${id}/suspend`)).status).toBe(200);
      expect((await call("GET", `/${id}/wait?state=suspended&timeout=5`)).status).toBe(200);
      expect(processState(pid!)).toBe("T");
      expect((await call("POST", `/${id}/suspend`)).status).toBe(200);
      expect((await call("POST", `/${id}/start`)).status).toBe(200);
      expect((await call("GET", `/${id}/wait?state=started&timeout=5`)).status).toBe(200);
      expect(processState(pid!)).not.toBe("T");
      expect((await exec(id, { command: ["cat", "file"] })).body.stdout).toBe("kept\n");
      expect((await call("POST", `/${id}/stop`)).status).toBe(200);
      const instance = (await call("GET", `/${id}`)).body.instance_id as string;
      expect((await call("GET", `/${id}/wait?state=stopped&timeout=5&instance_id=${instance}`)).status).toBe(
        200,
      );
      expect(server.machinePids(id)).toEqual([]);
      expect((await call("POST", `/${id}/suspend`)).status).toBe(412);
      const start = await call("POST", `/${id}/start`);
      expect(start.body.previous_state).toBe("stopped");
      expect((await call("GET", `/${id}/wait?state=started&timeout=5`)).status).toBe(200);
      expect((await exec(id, { command: ["ls", "-A"] })).body.stdout).toBe("");
    } finally {
      await call("DELETE", `/${id}?force=true`);
    }
  });

  test("destroy needs force while running, then kills everything, removes the files and forgets the machine", async () => {
    const id = await started();
    await exec(id, { command: ["sh", "-c", "(setsid sleep 300 >/dev/null 2>&1 &)"] });
    const dir = server.machineDir(id)!;
    expect((await call("DELETE", `/${id}`)).status).toBe(412);
    expect((await call("DELETE", `/${id}?force=true`)).body).toEqual({ ok: true });
    expect(server.machinePids(id)).toEqual([]);
    expect(existsSync(dir)).toBe(false);
    expect((await call("GET", `/${id}`)).status).toBe(404);
    expect((await call("DELETE", `/${id}?force=true`)).status).toBe(404);
  });

  test("the proxy stand-in reaches a published port of a started machine, and nothing else", async () => {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    const id = await started({ services: [{ protocol: "tcp", internal_port: port, ports: [{ port }] }] });
    try {
      await exec(id, { command: ["sh", "-c", "echo served > index.txt"] });
      const serve = `require("http").createServer((q, r) => r.end(require("fs").readFileSync("index.txt"))).listen(${port}, "127.0.0.1")`;
      await exec(id, { command: ["sh", "-c", `(setsid node -e '${serve}' >/dev/null 2>&1 &)`] });
      let body = "";
      for (let i = 0; i < 50 && body !== "served\n"; i++) {
        const answer = await fetch(`${server.proxyUrl(server.app, port)}/index.txt`).catch(() => undefined);
        body = answer?.status === 200 ? await answer.text() : "";
        if (body !== "served\n") await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(body).toBe("served\n");
      expect((await fetch(server.proxyUrl(server.app, port + 1))).status).toBe(503);
    } finally {
      await call("DELETE", `/${id}?force=true`);
    }
  });
});
