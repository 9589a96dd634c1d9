/**
 * `sbox emulate`: starts an emulator of @sbox/emulators, prints exactly the variables the vendor's client
 * needs, serves until interrupted, then destroys every machine it made and exits 0.
 */
import type { ChildProcess } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { makeSboxHome, waitUntil } from "./sbox-harness.js";

const home = makeSboxHome();
afterAll(() => home.cleanup());

/** Starts `sbox emulate ...` and resolves with its stdout once `ready` says it is complete. */
async function startEmulate(
  args: string[],
  ready: (stdout: string) => boolean,
): Promise<{ child: ChildProcess; stdout: string; stderr: () => string; exited: Promise<number | null> }> {
  const child = home.start(["emulate", ...args]);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  await waitUntil(
    () => ready(stdout),
    60_000,
    `sbox emulate ${args.join(" ")} to print its variables (stderr: ${stderr})`,
  );
  return { child, stdout, stderr: () => stderr, exited };
}

function parseExports(stdout: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of stdout.trim().split("\n")) {
    const match = /^export ([A-Z0-9_]+)='(.*)'$/.exec(line);
    if (!match) throw new Error(`not an export line: ${line}`);
    env[match[1]!] = match[2]!.replaceAll("'\\''", "'");
  }
  return env;
}

async function emulatorMachines(vendor: string): Promise<number> {
  const listed = await home.run(["ls", "--json", "--label", `sbox-emulator=${vendor}`]);
  if (listed.code !== 0) throw new Error(listed.stderr);
  return (JSON.parse(listed.stdout) as unknown[]).length;
}

describe("sbox emulate", () => {
  it("refuses an unknown vendor or backend with a usage error naming the choices", async () => {
    const vendor = await home.run(["emulate", "nimbus"]);
    expect(vendor.code).toBe(2);
    expect(vendor.stderr).toMatch(/unknown vendor "nimbus".*e2b, fly/);
    const backend = await home.run(["emulate", "e2b", "--backend", "kvm"]);
    expect(backend.code).toBe(2);
    expect(backend.stderr).toMatch(/--backend must be local or docker/);
    expect((await home.run(["emulate"])).code).toBe(2);
  });

  it("e2b: prints the four variables, serves the E2B API, and on SIGINT destroys its sandboxes and exits 0", async () => {
    const before = await emulatorMachines("e2b");
    const run = await startEmulate(["e2b"], (out) => out.split("\n").filter(Boolean).length >= 4);
    try {
      const env = parseExports(run.stdout);
      expect(Object.keys(env).sort()).toEqual([
        "E2B_API_KEY",
        "E2B_API_URL",
        "E2B_DOMAIN",
        "E2B_SANDBOX_URL",
      ]);
      const created = await fetch(`${env.E2B_API_URL}/sandboxes`, {
        method: "POST",
        headers: { "X-API-Key": env.E2B_API_KEY!, "Content-Type": "application/json" },
        body: JSON.stringify({ templateID: "base", timeout: 300 }),
      });
      expect(created.status, await created.clone().text()).toBe(201);
      expect((await created.json()) as object).toHaveProperty("sandboxID");
      expect(await emulatorMachines("e2b")).toBe(before + 1);
      run.child.kill("SIGINT");
      expect(await run.exited, run.stderr()).toBe(0);
      expect(run.stderr()).toMatch(/SIGINT: stopping the emulator/);
      expect(await emulatorMachines("e2b")).toBe(before);
    } finally {
      run.child.kill("SIGKILL");
    }
  });

  it("fly --json: an object with the Machines API URL, a FlyV1 token and the app; SIGTERM stops it", async () => {
    const run = await startEmulate(["fly", "--json"], (out) => out.trim().endsWith("}"));
    try {
      const printed = JSON.parse(run.stdout) as { vendor: string; url: string; env: Record<string, string> };
      expect(printed.vendor).toBe("fly");
      expect(printed.env.FLY_API_TOKEN).toMatch(/^FlyV1 fm2_/);
      const listed = await fetch(`${printed.env.FLY_API_HOSTNAME}/v1/apps/${printed.env.FLY_APP}/machines`, {
        headers: { Authorization: printed.env.FLY_API_TOKEN! },
      });
      expect(listed.status).toBe(200);
      expect(await listed.json()).toEqual([]);
      run.child.kill("SIGTERM");
      expect(await run.exited, run.stderr()).toBe(0);
    } finally {
      run.child.kill("SIGKILL");
    }
  });
  it("daytona: prints the three variables the SDK reads, serves the control plane, and on SIGINT destroys its sandboxes", async () => {
    const before = await emulatorMachines("daytona");
    const run = await startEmulate(["daytona"], (out) => out.split("\n").filter(Boolean).length >= 3);
    try {
      const env = parseExports(run.stdout);
      expect(Object.keys(env).sort()).toEqual(["DAYTONA_API_KEY", "DAYTONA_API_URL", "DAYTONA_TARGET"]);
      const headers = { Authorization: `Bearer ${env.DAYTONA_API_KEY}`, "Content-Type": "application/json" };
      const created = await fetch(`${env.DAYTONA_API_URL}/sandbox`, { method: "POST", headers, body: "{}" });
      expect(created.status, await created.clone().text()).toBe(200);
      const { id } = (await created.json()) as { id: string };
      await waitUntil(
        async () => {
          const got = await fetch(`${env.DAYTONA_API_URL}/sandbox/${id}`, { headers });
          return ((await got.json()) as { state: string }).state === "started";
        },
        120_000,
        "the emulated Daytona sandbox to be started",
      );
      expect(await emulatorMachines("daytona")).toBe(before + 1);
      run.child.kill("SIGINT");
      expect(await run.exited, run.stderr()).toBe(0);
      expect(await emulatorMachines("daytona")).toBe(before);
    } finally {
      run.child.kill("SIGKILL");
    }
  });
});
