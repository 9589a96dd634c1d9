/**
 * The shared HTTP plumbing: the request log and every kind of fault (stall, drop, error, respond, and the
 * after phase where the work is done but its answer lost), matched by glob, regex or predicate, on plain
 * requests and on upgrade requests alike.
 */
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, test } from "vitest";
import { type EmulatorHttpServer, type FaultRule, startHttpServer } from "../src/index.js";

let server: EmulatorHttpServer | undefined;
let handled: string[] = [];

afterEach(async () => {
  await server?.close();
  server = undefined;
  handled = [];
});

async function start(faults: FaultRule[] = []): Promise<EmulatorHttpServer> {
  server = await startHttpServer({
    name: "test",
    host: "127.0.0.1",
    errorBody: (status, message) => ({ code: status, message }),
    handler: async (req, res, context) => {
      context.setRoute(`${req.method} /things/{id}`);
      handled.push(`${req.method} ${context.url.pathname}`);
      if (context.url.pathname === "/crash") throw new Error("handler blew up");
      req.resume();
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ ok: context.url.pathname }));
    },
  });
  for (const fault of faults) server.faults.add(fault);
  return server;
}

describe("request log", () => {
  test("records method, path, url with query, route, status and duration", async () => {
    const s = await start();
    await (await fetch(`${s.url}/things/1?x=1`)).text();
    const entry = s.log.at(-1)!;
    expect(entry).toMatchObject({
      method: "GET",
      path: "/things/1",
      url: "/things/1?x=1",
      route: "GET /things/{id}",
      status: 200,
    });
    expect(entry.ms).toBeGreaterThanOrEqual(0);
  });

  test("a handler that throws answers 500 with the vendor's error body, naming the server", async () => {
    const s = await start();
    const response = await fetch(`${s.url}/crash`);
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ code: 500, message: "test: handler blew up" });
  });
});

describe("faults", () => {
  test("error: the vendor's body, the status and headers, only for `times` matching requests", async () => {
    const s = await start([
      {
        match: "POST /things/*",
        kind: "error",
        status: 429,
        message: "slow down",
        headers: { "Retry-After": "3" },
        times: 1,
      },
    ]);
    const other = await fetch(`${s.url}/things/1`);
    expect(other.status).toBe(200);
    const first = await fetch(`${s.url}/things/1`, { method: "POST" });
    expect(first.status).toBe(429);
    expect(first.headers.get("retry-after")).toBe("3");
    expect(await first.json()).toEqual({ code: 429, message: "slow down" });
    expect((await fetch(`${s.url}/things/1`, { method: "POST" })).status).toBe(200);
    expect(handled).toEqual(["GET /things/1", "POST /things/1"]);
    expect(s.log.map((e) => e.fault)).toEqual([undefined, "error", undefined]);
  });

  test("drop: the connection ends without an answer", async () => {
    const s = await start([{ match: /^GET \/things\/.*/, kind: "drop", times: 1 }]);
    await expect(fetch(`${s.url}/things/2`)).rejects.toThrow();
    expect(handled).toEqual([]);
  });

  test("stall: never answered until the client gives up; with ms, answered late", async () => {
    const s = await start([
      { match: "GET /slow", kind: "stall", times: 1 },
      { match: "GET /late", kind: "stall", ms: 300, times: 1 },
    ]);
    await expect(fetch(`${s.url}/slow`, { signal: AbortSignal.timeout(300) })).rejects.toThrow();
    const started = Date.now();
    const late = await fetch(`${s.url}/late`);
    expect(await late.json()).toEqual({ ok: "/late" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });

  test("a stalled request is cut when the server closes", async () => {
    const s = await start([{ match: "GET /**", kind: "stall" }]);
    const pending = fetch(`${s.url}/x`).then(
      () => "answered",
      () => "cut",
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    await s.close();
    server = undefined;
    expect(await pending).toBe("cut");
  });

  test("respond: whatever the function makes of the request, headers included", async () => {
    const s = await start([
      {
        match: (request) => request.headers["x-test"] === "yes",
        kind: "respond",
        respond: (request) => ({
          status: 302,
          headers: { Location: `https://elsewhere.example${request.url}` },
          body: { echoed: request.headers["x-test"] },
        }),
      },
    ]);
    const response = await fetch(`${s.url}/a?b=c`, { headers: { "x-test": "yes" }, redirect: "manual" });
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("https://elsewhere.example/a?b=c");
    expect(await response.json()).toEqual({ echoed: "yes" });
    expect((await fetch(`${s.url}/a`)).status).toBe(200);
  });

  test("phase after: the request is carried out, then its answer is replaced", async () => {
    const s = await start([
      { match: "DELETE /things/*", kind: "error", status: 503, phase: "after", times: 1 },
    ]);
    const response = await fetch(`${s.url}/things/9`, { method: "DELETE" });
    expect(response.status).toBe(503);
    expect(handled).toEqual(["DELETE /things/9"]);
  });

  test("rules are tried in order; clear removes them all; bad times are refused", async () => {
    const s = await start();
    s.faults.add({ match: "GET /**", kind: "error", status: 418 });
    s.faults.add({ match: "GET /**", kind: "error", status: 500 });
    expect((await fetch(`${s.url}/q`)).status).toBe(418);
    expect(s.faults.size).toBe(2);
    s.faults.clear();
    expect((await fetch(`${s.url}/q`)).status).toBe(200);
    expect(() => s.faults.add({ match: "GET /", kind: "drop", times: 0 })).toThrow(/positive integer/);
  });
});

describe("faults on upgrade requests", () => {
  /** Sends a WebSocket-style upgrade request on a raw socket; resolves with what came back, or "closed". */
  function upgrade(s: EmulatorHttpServer, path: string): { answer: Promise<string>; socket: Socket } {
    const { port } = new URL(s.url);
    const socket = connect(Number(port), "127.0.0.1");
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nAuthorization: Bearer planted-token-123\r\n\r\n`,
    );
    let text = "";
    const answer = new Promise<string>((resolve) => {
      socket.on("data", (chunk: Buffer) => {
        text += chunk.toString("latin1");
      });
      socket.on("close", () => resolve(text === "" ? "closed" : text));
      socket.on("error", () => undefined);
    });
    return { answer, socket };
  }

  async function startUpgrading(): Promise<EmulatorHttpServer> {
    server = await startHttpServer({
      name: "test",
      host: "127.0.0.1",
      errorBody: (status, message) => ({ code: status, message }),
      handler: async (_req, res) => {
        res.end("{}");
      },
      onUpgrade: (_req, socket) => {
        socket.end("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
      },
    });
    return server;
  }

  test("stall holds the handshake until the faults are cleared, which closes it", async () => {
    const s = await startUpgrading();
    s.faults.add({ match: () => true, kind: "stall" });
    const { answer } = upgrade(s, "/exec");
    const early = await Promise.race([
      answer,
      new Promise((resolve) => setTimeout(() => resolve("pending"), 300)),
    ]);
    expect(early).toBe("pending");
    s.faults.clear();
    expect(await answer).toBe("closed");
  });

  test("respond answers the handshake with the fault's status, headers and body; drop cuts it; none upgrades", async () => {
    const s = await startUpgrading();
    s.faults.add({
      match: "GET /exec",
      kind: "respond",
      times: 1,
      respond: (request) => ({
        status: 307,
        headers: { Location: `http://127.0.0.2:1${request.url}` },
        body: { echoed: request.headers.authorization },
      }),
    });
    const redirected = await upgrade(s, "/exec?x=1").answer;
    expect(redirected).toMatch(/^HTTP\/1\.1 307 Temporary Redirect\r\n/);
    expect(redirected).toContain("Location: http://127.0.0.2:1/exec?x=1");
    expect(redirected).toContain('{"echoed":"Bearer planted-token-123"}');
    s.faults.add({ match: "GET /exec", kind: "drop", times: 1 });
    expect(await upgrade(s, "/exec").answer).toBe("closed");
    s.faults.add({ match: "GET /exec", kind: "error", status: 503, times: 1 });
    expect(await upgrade(s, "/exec").answer).toMatch(/^HTTP\/1\.1 503 [^\r]*\r\n[\s\S]*"code":503/);
    expect(await upgrade(s, "/exec").answer).toMatch(/^HTTP\/1\.1 101 /);
    expect(s.log.filter((entry) => entry.fault).map((entry) => entry.fault)).toEqual([
      "respond",
      "drop",
      "error",
    ]);
  });
});
