/**
 * The fetch helper providers build on: credentials never cross origins on redirect, and a silent remote
 * rejects with Timeout within the deadline.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { rejectionOf as rejection } from "../../test/rejection-of.js";
import { SandboxError } from "../errors/sandbox-error.js";
import { createProviderFetch } from "./provider-fetch.js";

const TOKEN = "fly_planted_token_0123456789";

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

async function start(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void) {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let foreign: Awaited<ReturnType<typeof start>>;
let api: Awaited<ReturnType<typeof start>>;

beforeAll(async () => {
  foreign = await start((_req, res) => {
    res.writeHead(418, { "content-type": "application/json" });
    res.end('{"error":"foreign origin"}');
  });
  api = await start((req, res) => {
    const path = req.url ?? "/";
    if (path.startsWith("/away")) {
      res.writeHead(Number(new URL(path, api.url).searchParams.get("status") ?? 307), {
        location: `${foreign.url}/landed${path}`,
      });
      return res.end();
    }
    if (path === "/here") {
      res.writeHead(302, { location: "/ok" });
      return res.end();
    }
    if (path === "/silent") return; // Accepted, never answered.
    if (path === "/trickle") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("first");
      return; // The body never ends.
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ auth: req.headers.authorization ?? null }));
  });
});
afterAll(async () => {
  await api.close();
  await foreign.close();
});

const http = createProviderFetch({
  provider: "demo",
  requestTimeoutMs: 500,
  credentialHeaders: ["X-API-Key"],
  secrets: () => [TOKEN],
});
const credentials = {
  Authorization: `Bearer ${TOKEN}`,
  "X-API-Key": TOKEN,
  "X-Custom": `id ${TOKEN}`,
  Accept: "application/json",
};

describe("createProviderFetch", () => {
  test("a same-origin redirect keeps the credentials", async () => {
    const response = await http(`${api.url}/here`, { headers: credentials });
    expect(await response.json()).toEqual({ auth: `Bearer ${TOKEN}` });
  });

  test("a cross-origin redirect is followed without any credential header", async () => {
    for (const status of [301, 302, 303, 307, 308]) {
      const before = foreign.seen.length;
      const response = await http(`${api.url}/away?status=${status}`, { headers: credentials });
      expect(response.status).toBe(418);
      const request = foreign.seen.at(-1)!;
      expect(foreign.seen.length).toBe(before + 1);
      expect(JSON.stringify(request)).not.toContain(TOKEN);
      expect(request.headers.accept).toBe("application/json");
    }
  });

  test("a redirect that would send a body to another origin is refused; no request reaches it", async () => {
    const before = foreign.seen.length;
    const error = await rejection(
      http(`${api.url}/away?status=307`, { method: "POST", headers: credentials, body: `{"t":"${TOKEN}"}` }),
    );
    expect(error).toMatchObject({ code: "Provider", provider: "demo", retryable: false });
    expect(foreign.seen.length).toBe(before);
    // 302 and 303 turn a POST into a GET without its body, like a browser: that one may go, bare.
    const response = await http(`${api.url}/away?status=303`, {
      method: "POST",
      headers: { ...credentials, "content-type": "application/json" },
      body: `{"t":"${TOKEN}"}`,
    });
    expect(response.status).toBe(418);
    expect(JSON.stringify(foreign.seen.at(-1))).not.toContain(TOKEN);
    expect(foreign.seen.at(-1)!.method).toBe("GET");
  });

  test("a remote that never answers rejects with Timeout within the deadline", async () => {
    const started = Date.now();
    const error = await rejection(http(`${api.url}/silent`));
    expect(error).toMatchObject({ code: "Timeout", retryable: true, provider: "demo" });
    expect(Date.now() - started).toBeLessThan(500 + 400);
    const post = await rejection(
      http(`${api.url}/silent`, { method: "POST", body: "{}" }, { timeoutMs: 200 }),
    );
    expect(post).toMatchObject({ code: "Timeout", retryable: false });
  });

  test("a body that stops flowing rejects with Timeout after the idle deadline", async () => {
    const response = await http(`${api.url}/trickle`);
    const started = Date.now();
    const error = await rejection(response.text());
    expect(error.code).toBe("Timeout");
    expect(Date.now() - started).toBeLessThan(500 + 400);
  });

  test("an abort of the caller's signal rejects with its reason", async () => {
    const controller = new AbortController();
    const pending = http(`${api.url}/silent`, { signal: controller.signal });
    controller.abort(new SandboxError("Aborted", "stop"));
    expect((await rejection(pending)).message).toBe("stop");
  });
});
