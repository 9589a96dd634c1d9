/**
 * kitFaultHook: the conformance kit's remote faults (stall, echo-credential, redirect, none) over an
 * emulator's fault injector, on every server that shares it, as the kit's secrets.* and deadline.* cases
 * use them. A lifted stall must end the requests it holds (the kit's deadline case would otherwise leave
 * sockets open until the emulator closes).
 */
import { afterEach, describe, expect, test } from "vitest";
import {
  createFaultInjector,
  type EmulatorHttpServer,
  type FaultInjector,
  kitFaultHook,
  startHttpServer,
} from "../src/index.js";

let servers: EmulatorHttpServer[] = [];

afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

/** Two servers sharing one injector, as an emulator's control plane and its data plane do. */
async function startPair(): Promise<{ faults: FaultInjector; a: EmulatorHttpServer; b: EmulatorHttpServer }> {
  const faults = createFaultInjector();
  const start = (name: string) =>
    startHttpServer({
      name,
      host: "127.0.0.1",
      faults,
      errorBody: (status, message) => ({ code: status, message }),
      handler: async (req, res, context) => {
        req.resume();
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ server: name, path: context.url.pathname }));
      },
    });
  const a = await start("a");
  const b = await start("b");
  servers.push(a, b);
  return { faults, a, b };
}

const PLANTED = "e2b_planted_0123456789abcdef";

describe("kitFaultHook", () => {
  test("stall holds every request on every server until lifted; lifting ends the held ones at once", async () => {
    const { faults, a, b } = await startPair();
    const hook = kitFaultHook(faults);
    hook.set({ kind: "stall" });
    const outcome = (url: string) =>
      fetch(url).then(
        (r) => `answered ${r.status}`,
        () => "connection ended",
      );
    const heldA = outcome(`${a.url}/sandboxes`);
    const heldB = outcome(`${b.url}/files`);
    const early = await Promise.race([
      Promise.all([heldA, heldB]),
      new Promise((resolve) => setTimeout(() => resolve("still held"), 300)),
    ]);
    expect(early).toBe("still held");
    const lifted = Date.now();
    hook.set({ kind: "none" });
    expect(await Promise.all([heldA, heldB])).toEqual(["connection ended", "connection ended"]);
    expect(Date.now() - lifted).toBeLessThan(2_000);
    expect(faults.size).toBe(0);
    const after = await fetch(`${a.url}/sandboxes`);
    expect(after.status).toBe(200);
    expect(await after.json()).toEqual({ server: "a", path: "/sandboxes" });
  });

  test("setting another fault over a stall also ends the held requests and replaces the rule", async () => {
    const { faults, a } = await startPair();
    const hook = kitFaultHook(faults);
    hook.set({ kind: "stall" });
    const held = fetch(`${a.url}/x`).then(
      () => "answered",
      () => "connection ended",
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    hook.set({ kind: "redirect", location: "http://127.0.0.1:9" });
    expect(await held).toBe("connection ended");
    expect(faults.size).toBe(1);
    const response = await fetch(`${a.url}/x`, { redirect: "manual" });
    expect(response.status).toBe(307);
  });

  test("echo-credential answers 400 with every request header in the body, the credential included", async () => {
    const { faults, a, b } = await startPair();
    kitFaultHook(faults).set({ kind: "echo-credential" });
    for (const [server, header] of [
      [a, "X-API-Key"],
      [b, "Authorization"],
    ] as const) {
      const response = await fetch(`${server.url}/sandboxes?x=1`, {
        headers: { [header]: header === "Authorization" ? `Bearer ${PLANTED}` : PLANTED },
      });
      expect(response.status).toBe(400);
      expect(response.headers.get("connection")).toBe("close");
      const body = (await response.json()) as { code: number; message: string; error: string };
      expect(body.code).toBe(400);
      expect(body.message).toContain(PLANTED);
      expect(body.message).toContain(header.toLowerCase());
      expect(body.error).toBe(body.message);
    }
  });

  test("redirect sends every request to the location with its path and query, 307 unless told", async () => {
    const { faults, a, b } = await startPair();
    const hook = kitFaultHook(faults);
    hook.set({ kind: "redirect", location: "http://attacker.invalid:8080/" });
    const first = await fetch(`${a.url}/sandboxes/abc?signature=s&x=%20`, {
      method: "POST",
      body: "{}",
      redirect: "manual",
    });
    expect(first.status).toBe(307);
    expect(first.headers.get("location")).toBe(
      "http://attacker.invalid:8080/sandboxes/abc?signature=s&x=%20",
    );
    expect(await first.text()).toBe("");

    hook.set({ kind: "redirect", location: "http://attacker.invalid", status: 301 });
    const second = await fetch(`${b.url}/files`, { redirect: "manual" });
    expect(second.status).toBe(301);
    expect(second.headers.get("location")).toBe("http://attacker.invalid/files");

    hook.set({ kind: "none" });
    expect((await fetch(`${b.url}/files`, { redirect: "manual" })).status).toBe(200);
  });

  test("the hook owns the injector: setting a fault drops rules that were there before", async () => {
    const { faults, a } = await startPair();
    faults.add({ match: "GET /**", kind: "error", status: 503 });
    kitFaultHook(faults).set({ kind: "none" });
    expect(faults.size).toBe(0);
    expect((await fetch(`${a.url}/anything`)).status).toBe(200);
  });
});
