/**
 * `sbox emulate`: starts an emulator of @sbox/emulators, prints exactly the variables the vendor's client
 * needs, serves until interrupted, then destroys every machine it made and exits 0. The issue's acceptance
 * check runs here as a user would: a scratch project with the unmodified `e2b` SDK, run with nothing but
 * the printed variables in its environment. Kubernetes prints a kubeconfig kubectl uses as is; without
 * kubectl or a Docker Engine that case skips visibly (not in CI).
 */
import { type ChildProcess, execFile, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
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

/**
 * The directory of the `e2b` SDK installed in this workspace (a devDependency of @sbox/emulators, which the
 * CLI depends on): the scratch project links it as its own node_modules/e2b, as `npm install e2b` would.
 */
function installedE2BSdk(): string {
  const fromEmulators = createRequire(createRequire(import.meta.url).resolve("@sbox/emulators/package.json"));
  let dir = dirname(fromEmulators.resolve("e2b"));
  for (;;) {
    try {
      const manifest = createRequire(join(dir, "noop.js"))(join(dir, "package.json")) as { name?: string };
      if (manifest.name === "e2b") return dir;
    } catch {
      // not the package root yet
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error("the e2b SDK is not installed in this workspace");
    dir = parent;
  }
}

/** A user's app: create a sandbox, run a command, write and read a file, kill it, see it gone. */
const SCRATCH_APP = `
import { Sandbox } from "e2b";
const sandbox = await Sandbox.create();
const command = await sandbox.commands.run("echo \\"hi from $(whoami) in $PWD\\"; echo err >&2");
const text = "h\u00e9llo 'quoted' $(not run)\\n\\nline 3\\n";
await sandbox.files.write("/home/user/notes/app.txt", text);
const readBack = await sandbox.files.read("/home/user/notes/app.txt");
const seenByShell = await sandbox.commands.run("cat /home/user/notes/app.txt | wc -l");
await sandbox.kill();
let afterKill = "still reachable";
try {
  await Sandbox.connect(sandbox.sandboxId);
} catch (error) {
  afterKill = error.name;
}
console.log(JSON.stringify({
  id: sandbox.sandboxId,
  stdout: command.stdout,
  stderr: command.stderr,
  exitCode: command.exitCode,
  sameText: readBack === text,
  lines: seenByShell.stdout.trim(),
  afterKill,
}));
`;

async function emulatorMachines(vendor: string): Promise<number> {
  const listed = await home.run(["ls", "--json", "--label", `sbox-emulator=${vendor}`]);
  if (listed.code !== 0) throw new Error(listed.stderr);
  return (JSON.parse(listed.stdout) as unknown[]).length;
}

/** Why the kubernetes case cannot run here, if it cannot. */
function kubectlMissing(): string | undefined {
  if (spawnSync("kubectl", ["version", "--client"], { stdio: "ignore", timeout: 20_000 }).status !== 0)
    return "no kubectl";
  if (
    spawnSync("docker", ["image", "inspect", "sbox-busybox:latest"], { stdio: "ignore", timeout: 20_000 })
      .status !== 0
  ) {
    return "no Docker Engine with sbox-busybox:latest";
  }
  return undefined;
}

const kubectlWhy = kubectlMissing();
if (kubectlWhy && process.env.CI) throw new Error(`CI is set but ${kubectlWhy}`);

function kubectl(args: string[], kubeconfig: string): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn("kubectl", args, { env: { ...process.env, KUBECONFIG: kubeconfig } });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.on("close", (code) => resolve({ code, stdout }));
  });
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

  it("e2b acceptance: a scratch project's unmodified e2b SDK, with only the printed variables set, creates, runs, writes, reads and kills", async () => {
    const before = await emulatorMachines("e2b");
    const run = await startEmulate(["e2b"], (out) => out.split("\n").filter(Boolean).length >= 4);
    const project = mkdtempSync(join(tmpdir(), "sbox-e2b-scratch-"));
    try {
      const env = parseExports(run.stdout);
      writeFileSync(
        join(project, "package.json"),
        JSON.stringify({ name: "scratch-app", private: true, type: "module", dependencies: { e2b: "*" } }),
      );
      mkdirSync(join(project, "node_modules"));
      symlinkSync(installedE2BSdk(), join(project, "node_modules", "e2b"), "dir");
      writeFileSync(join(project, "app.mjs"), SCRATCH_APP);
      // Exactly the printed variables: no PATH, no HOME, nothing of this test's environment.
      const app = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          ["app.mjs"],
          { cwd: project, env, timeout: 90_000 },
          (error, stdout, stderr) =>
            resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        );
      });
      expect(app.code, app.stderr).toBe(0);
      const result = JSON.parse(app.stdout.trim().split("\n").at(-1)!) as Record<string, unknown>;
      expect(result).toMatchObject({
        stdout: "hi from user in /home/user\n",
        stderr: "err\n",
        exitCode: 0,
        sameText: true,
        lines: "3",
        afterKill: "SandboxNotFoundError",
      });
      expect(await emulatorMachines("e2b")).toBe(before);
      run.child.kill("SIGINT");
      expect(await run.exited, run.stderr()).toBe(0);
    } finally {
      run.child.kill("SIGKILL");
      rmSync(project, { recursive: true, force: true });
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

  it.skipIf(kubectlWhy !== undefined)(
    `kubernetes prints a kubeconfig that kubectl uses, and cleans up on SIGTERM${kubectlWhy ? ` (SKIPPED: ${kubectlWhy})` : ""}`,
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "sbox-emulate-"));
      const run = await startEmulate(["kubernetes", "--backend", "docker"], (out) =>
        out.includes("current-context:"),
      );
      try {
        const kubeconfig = join(dir, "kubeconfig");
        writeFileSync(kubeconfig, run.stdout);
        const started = await kubectl(
          ["run", "from-cli", "--image", "sbox-busybox:latest", "--", "sleep", "300"],
          kubeconfig,
        );
        expect(started.code).toBe(0);
        const ready = await kubectl(
          ["wait", "--for=condition=Ready", "pod/from-cli", "--timeout=60s"],
          kubeconfig,
        );
        expect(ready.code).toBe(0);
        run.child.kill("SIGTERM");
        expect(await run.exited, run.stderr()).toBe(0);
        const left = spawnSync("docker", ["ps", "-aq", "--filter", "label=sbox.meta.k8s-pod=from-cli"], {
          encoding: "utf8",
        });
        expect(left.stdout.trim()).toBe("");
      } finally {
        run.child.kill("SIGKILL");
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

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
