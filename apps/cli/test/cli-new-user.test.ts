/**
 * What a new user tripped over (issue 20), each through the real binary on provider-local: lifecycle
 * verbs through the record, options checked, flags in any order and the command right after the id,
 * known providers named, background processes by the id sbox prints, a missing program reported as a
 * shell does, one expiry and no internal labels.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { makeSboxHome, waitUntil } from "./sbox-harness.js";

const home = makeSboxHome();
const scratch = mkdtempSync(join(tmpdir(), "sbox-cli-new-user-"));
afterAll(async () => {
  await home.cleanup();
  rmSync(scratch, { recursive: true, force: true });
});

async function create(...args: string[]): Promise<string> {
  const created = await home.run(["create", ...args]);
  expect(created.stderr).toBe("");
  expect(created.code).toBe(0);
  return created.stdout.trim();
}

async function state(id: string): Promise<string> {
  const info = await home.run(["info", "--json", id]);
  expect(info.code).toBe(0);
  return (JSON.parse(info.stdout) as { state: string }).state;
}

describe("1. every lifecycle verb goes through the record", () => {
  it("pause then resume leaves the sandbox running, and exec works", async () => {
    const id = await create();
    expect((await home.run(["pause", id])).code).toBe(0);
    expect(await state(id)).toBe("paused");
    const resumed = await home.run(["resume", id]);
    expect(resumed.code).toBe(0);
    expect(await state(id)).toBe("running");
    const ran = await home.run(["exec", id, "--", "echo", "alive"]);
    expect([ran.code, ran.stdout]).toEqual([0, "alive\n"]);
  });

  it("resume of a sandbox paused without the record (SBOX_RECORDS=0) follows its live state", async () => {
    const id = await create();
    expect((await home.run(["pause", id], { env: { SBOX_RECORDS: "0" } })).code).toBe(0);
    expect((await home.run(["resume", id])).code).toBe(0);
    expect(await state(id)).toBe("running");
  });
});

describe("4. provider options are checked", () => {
  for (const [option, message] of [
    ["bogus=1", /unknown option "bogus"; the options are root, isolation/],
    ["isolaton=none", /unknown option "isolaton" \(did you mean "isolation"\?\)/],
    ["isolation=sometimes", /option isolation must be one of "auto", "bwrap", "none", got "sometimes"/],
  ] as const) {
    it(`-o ${option} is refused with a Validation error naming it`, async () => {
      const result = await home.run(["create", "-o", option]);
      expect(result.code).toBe(7);
      expect(result.stdout).toBe("");
      expect(result.stderr).toMatch(message);
      expect(result.stderr.split("\n").filter(Boolean)).toHaveLength(1);
    });
  }
});

describe("5. options before or after the subcommand; the command right after the id", () => {
  it("global and command options before the subcommand", async () => {
    const result = await home.run([
      "-p",
      "local",
      "-l",
      "order=before",
      "-e",
      "X=from-env",
      "run",
      "sh",
      "-c",
      "echo $X",
    ]);
    expect(result.stderr).toBe("");
    expect([result.code, result.stdout]).toEqual([0, "from-env\n"]);
  });

  it("exec ID ls -la runs ls -la (no -- needed); options of sbox go before the id", async () => {
    const id = await create();
    const listed = await home.run(["exec", id, "ls", "-la", "/"]);
    expect(listed.stderr).toBe("");
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^total /);
    const withOptions = await home.run([
      "exec",
      "-e",
      "A=1",
      "-w",
      "/tmp",
      id,
      "sh",
      "-c",
      'echo "$A $PWD" --json',
    ]);
    expect(withOptions.stdout).toBe("1 /tmp --json\n");
    const dashes = await home.run(["exec", id, "printf", "%s,", "--", "-x"]);
    expect(dashes.stdout).toBe("--,-x,");
  });

  it("an unknown option is one clean usage line", async () => {
    const result = await home.run(["exec", "-z", "local:abc", "ls"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe("error[Usage]: sbox exec: unknown option -z (see: sbox exec --help)\n");
  });
});

describe("7. provider names", () => {
  it("an unknown provider names the known ones (and a near miss), not a package to install", async () => {
    const nonsense = await home.run(["ls", "--provider", "nonsense"]);
    expect(nonsense.code).toBe(7);
    expect(nonsense.stderr).toMatch(/unknown provider "nonsense": the providers are local, docker, e2b, fly/);
    expect(nonsense.stderr).not.toContain("npm i");
    const typo = await home.run(["ls", "--provider", "dokcer"]);
    expect(typo.stderr).toMatch(/did you mean "docker"\?/);
  });

  it("inside a checkout, doctor says to build the workspace, not to npm i a workspace package", async () => {
    const checkout = join(scratch, "checkout");
    mkdirSync(join(checkout, "packages", "provider-zed"), { recursive: true });
    writeFileSync(join(checkout, "pnpm-workspace.yaml"), "packages:\n  - packages/*\n");
    writeFileSync(
      join(checkout, "packages", "provider-zed", "package.json"),
      JSON.stringify({ name: "@sbox/provider-zed", version: "0.0.0" }),
    );
    const result = await home.run(["doctor", "--json", "-p", "zed"], { cwd: checkout });
    const report = JSON.parse(result.stdout) as {
      providers: { name: string; checks: { name: string; fix?: string }[] }[];
    };
    const zed = report.providers.find((provider) => provider.name === "zed");
    const fix = zed?.checks.find((check) => check.name === "package")?.fix;
    expect(fix).toMatch(
      /@sbox\/provider-zed is a package of this workspace \(packages\/provider-zed\): run pnpm install && pnpm build/,
    );
    expect(fix).not.toMatch(/(^|\s)npm i /);
  });
});

describe("16. background processes by the id sbox prints; --name wherever an id is", () => {
  it("exec -d prints the id that ps, logs and kill take", async () => {
    const id = await create("--name", "worker");
    const started = await home.run([
      "exec",
      "-d",
      id,
      "sh",
      "-c",
      "trap 'echo bye; exit 0' TERM; echo hello; while :; do sleep 0.1; done",
    ]);
    expect(started.code).toBe(0);
    const pid = started.stdout.trim();
    expect(pid).toMatch(/^\d+$/);
    const ps = await home.run(["ps", "--json", "--name", "worker"]);
    expect(ps.code).toBe(0);
    const processes = JSON.parse(ps.stdout) as { pid: number; running: boolean; command: string }[];
    expect(processes).toContainEqual(expect.objectContaining({ pid: Number(pid), running: true }));
    await waitUntil(
      async () => (await home.run(["logs", id, pid])).stdout.includes("hello"),
      10_000,
      "output",
    );
    const killed = await home.run(["kill", "--name", "worker", pid]);
    expect(killed.code).toBe(0);
    // SIGTERM first: the process said goodbye on its way out.
    const logs = await home.run(["logs", "--name", "worker", pid]);
    expect(logs.stdout).toBe("hello\nbye\n");
    const after = JSON.parse((await home.run(["ps", "--json", id])).stdout) as {
      pid: number;
      running: boolean;
    }[];
    expect(after.find((process) => process.pid === Number(pid))?.running).toBe(false);
  });

  it("--name works for exec, info, cp, stop, resume and rm; a second sandbox of that name is refused", async () => {
    const id = await create("--name", "web");
    const ran = await home.run(["exec", "--name", "web", "echo", "by-name"]);
    expect(ran.stdout).toBe("by-name\n");
    const info = JSON.parse((await home.run(["info", "--json", "--name", "web"])).stdout) as {
      id: string;
      name: string;
    };
    expect(info).toMatchObject({ id, name: "web" });
    const copied = await home.run(["cp", "--name", "web", "-", ":/workspace/by-name.txt"], {
      input: "copied\n",
    });
    expect(copied.code).toBe(0);
    expect((await home.run(["exec", "--name", "web", "cat", "/workspace/by-name.txt"])).stdout).toBe(
      "copied\n",
    );
    expect((await home.run(["stop", "--name", "web"])).stdout).toBe(`${id}\n`);
    expect((await home.run(["resume", "--name", "web"])).stdout).toBe(`${id}\n`);
    const again = await home.run(["create", "--name", "web"]);
    expect(again.code).toBe(8);
    expect(again.stderr).toMatch(/a sandbox named "web" exists already/);
    expect((await home.run(["rm", "--name", "web"])).code).toBe(0);
    const gone = await home.run(["info", "--name", "web"]);
    expect(gone.code).toBe(3);
    expect(gone.stderr).toMatch(/no sandbox named "web"/);
  });
});

describe("17. a program that does not exist", () => {
  it("says `NAME: command not found` and exits 127, through run and exec", async () => {
    const run = await home.run(["run", "nosuchcommand", "--flag"]);
    expect([run.code, run.stderr]).toEqual([127, "nosuchcommand: command not found\n"]);
    const id = await create();
    const exec = await home.run(["exec", id, "nosuchcommand"]);
    expect([exec.code, exec.stderr]).toEqual([127, "nosuchcommand: command not found\n"]);
    const path = await home.run(["exec", id, "./no/such/thing"]);
    expect([path.code, path.stderr]).toEqual([127, "./no/such/thing: No such file or directory\n"]);
  });
});

describe("18. one expiry, shown once; internal labels hidden", () => {
  it("create --ttl 1h: info, info --json and ls --json all say the same expiry", async () => {
    const before = Date.now();
    const id = await create("--ttl", "1h", "-l", "team=infra");
    const text = (await home.run(["info", id])).stdout;
    expect(text.match(/expires/g)).toHaveLength(1);
    expect(text).toMatch(/^expires\s+\S+ \(in (1h|59m)\)$/m);
    expect(text).not.toContain("sbox-manager");
    const json = JSON.parse((await home.run(["info", "--json", id])).stdout) as {
      expiresAt: string;
      metadata: Record<string, string>;
      record: Record<string, unknown>;
    };
    const expiresAt = Date.parse(json.expiresAt);
    expect(expiresAt - before).toBeGreaterThan(3_590_000);
    expect(expiresAt - before).toBeLessThan(3_700_000);
    expect(json.metadata).toEqual({ team: "infra" });
    expect(json.record).not.toHaveProperty("expiresAt");
    const listed = (
      JSON.parse((await home.run(["ls", "--json"])).stdout) as {
        id: string;
        expiresAt: string;
        metadata: Record<string, string>;
      }[]
    ).find((info) => info.id === id);
    expect(listed?.expiresAt).toBe(json.expiresAt);
    expect(listed?.metadata).toEqual({ team: "infra" });
    const all = JSON.parse((await home.run(["info", "--json", "--all-labels", id])).stdout) as {
      metadata: Record<string, string>;
    };
    expect(Object.keys(all.metadata)).toEqual(expect.arrayContaining(["team", "sbox-manager-record"]));
  });
});
