import { afterAll, describe, expect, it } from "vitest";
import { makeSboxHome } from "./sbox-harness.js";

const home = makeSboxHome();
afterAll(() => home.cleanup());

interface CapsEntry {
  name: string;
  package: string;
  status: string;
  capabilities: Record<string, string> | null;
}

describe("sbox caps", () => {
  it("--json has the declared map of every installed provider and names the missing ones", async () => {
    const result = await home.run(["caps", "--json"]);
    expect(result.code).toBe(0);
    const entries = JSON.parse(result.stdout) as CapsEntry[];
    const local = entries.find((entry) => entry.name === "local");
    expect(local?.status).toBe("installed");
    expect(Object.keys(local?.capabilities ?? {})).toHaveLength(25);
    for (const level of Object.values(local?.capabilities ?? {})) {
      expect(["native", "emulated", "unsupported"]).toContain(level);
    }
    // Providers of this repo that are not installed next to the CLI are listed as missing, not crashed on.
    for (const entry of entries) expect(["installed", "missing", "broken"]).toContain(entry.status);
    expect(entries.map((entry) => entry.name)).toEqual(
      expect.arrayContaining(["local", "docker", "e2b", "fly"]),
    );
  });

  it("--markdown prints a table with a row per capability and a column per installed provider", async () => {
    const result = await home.run(["caps", "--markdown"]);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^\| capability \| .*local.* \|$/);
    expect(lines[1]).toMatch(/^\|---\|/);
    expect(lines.filter((line) => /^\| [a-zA-Z]+ \|/.test(line))).toHaveLength(26);
    const json = JSON.parse((await home.run(["caps", "--json"])).stdout) as CapsEntry[];
    const localColumn = lines[0]!
      .split("|")
      .map((cell) => cell.trim())
      .indexOf("local");
    const ptyRow = lines
      .find((line) => line.startsWith("| pty |"))!
      .split("|")
      .map((cell) => cell.trim());
    const declared = json.find((entry) => entry.name === "local")!.capabilities!.pty;
    expect(ptyRow[localColumn]).toBe(declared === "unsupported" ? "—" : declared);
  });
});

describe("sbox caps PROVIDER", () => {
  it("lists one provider's capabilities by area, each with its level and what it gives, then its flags", async () => {
    const result = await home.run(["caps", "local"]);
    expect(result.code).toBe(0);
    const lines = result.stdout.split("\n");
    expect(lines[0]).toMatch(/^local {2}@sbox\/provider-local$/);
    for (const area of [
      "lifecycle",
      "exec",
      "files",
      "code",
      "network",
      "state",
      "placement",
      "meta",
      "flags",
    ]) {
      expect(lines).toContain(area);
    }
    const json = JSON.parse((await home.run(["caps", "--json"])).stdout) as CapsEntry[];
    const declared = json.find((entry) => entry.name === "local")!.capabilities!;
    for (const [name, level] of Object.entries(declared)) {
      expect(lines.find((line) => line.startsWith(`  ${name} `))).toMatch(
        new RegExp(`^  ${name} +${level} +\\S`),
      );
    }
    // Readable in a terminal: no line of the view is wider than 140 columns.
    expect(Math.max(...lines.map((line) => line.length))).toBeLessThanOrEqual(140);
    const one = JSON.parse((await home.run(["caps", "--json", "local"])).stdout) as {
      capabilities: Record<string, { level: string; area: string; summary: string }>;
    };
    expect(one.capabilities.pty).toMatchObject({ level: declared.pty, area: "exec" });
  });

  it("an unknown provider names the known ones", async () => {
    const result = await home.run(["caps", "nonsense"]);
    expect(result.code).toBe(7);
    expect(result.stderr).toMatch(/unknown provider "nonsense": the providers are local, docker, e2b, fly/);
  });
});

describe("sbox doctor", () => {
  it("reports the default provider ready with a writable SBOX_HOME, and checks bwrap", async () => {
    const result = await home.run(["doctor", "--json"]);
    const report = JSON.parse(result.stdout) as {
      selected: string;
      ready: boolean;
      providers: { name: string; ready: boolean; checks: { name: string; ok: boolean; fix?: string }[] }[];
    };
    expect(report.selected).toBe("local");
    expect(report.ready).toBe(true);
    expect(result.code).toBe(0);
    const local = report.providers.find((provider) => provider.name === "local")!;
    expect(local.checks.map((check) => check.name)).toEqual(
      expect.arrayContaining(["package", "SBOX_HOME", "bwrap"]),
    );
    const docker = report.providers.find((provider) => provider.name === "docker")!;
    expect(docker.checks.map((check) => check.name)).toContain("docker engine");
    const records = (JSON.parse(result.stdout) as { records: { ok: boolean; detail: string } }).records;
    expect(records).toEqual({ ok: true, detail: `sandboxes are recorded in ${home.dir}/manager.db` });
    const off = JSON.parse((await home.run(["doctor", "--json"], { env: { SBOX_RECORDS: "0" } })).stdout) as {
      records: { ok: boolean; detail: string };
    };
    expect(off.records).toEqual({ ok: false, detail: "sandboxes are not recorded: SBOX_RECORDS=0" });
  });

  it("names the missing credential variable and how to fix it, without printing values", async () => {
    const secret = "sekrit-value-1234567890";
    const withKey = await home.run(["doctor", "--json", "-p", "e2b"], { env: { E2B_API_KEY: secret } });
    expect(withKey.stdout).not.toContain(secret);
    const without = await home.run(["doctor", "-p", "e2b"], { env: { E2B_API_KEY: undefined } });
    expect(without.code).toBe(1);
    expect(without.stdout).toMatch(/E2B_API_KEY is not set/);
    expect(without.stdout).toMatch(/fix: export E2B_API_KEY=/);
  });

  it("an engine address that answers nothing is reported with the fix", async () => {
    const result = await home.run(["doctor", "--json"], { env: { DOCKER_HOST: "tcp://127.0.0.1:9" } });
    const report = JSON.parse(result.stdout) as {
      providers: { name: string; checks: { name: string; ok: boolean; fix?: string }[] }[];
    };
    const check = report.providers
      .find((provider) => provider.name === "docker")!
      .checks.find((c) => c.name === "docker engine")!;
    expect(check.ok).toBe(false);
    expect(check.fix).toMatch(/DOCKER_HOST/);
  });
});
