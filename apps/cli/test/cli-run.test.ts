import { randomInt } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { idsOf, makeSboxHome, processCommandLines, waitUntil } from "./sbox-harness.js";

const home = makeSboxHome();
afterAll(() => home.cleanup());

describe("sbox run", () => {
  it("runs the README's first command and leaves no sandbox", async () => {
    const result = await home.run(["run", "--", "sh", "-c", "echo hello from $(hostname)"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^hello from \S+\n$/);
    expect(idsOf(await home.run(["ls", "--json"]))).toEqual([]);
  });

  it("exits with the command's exit code and still destroys the sandbox", async () => {
    const result = await home.run(["run", "--", "sh", "-c", "echo partial; exit 42"]);
    expect(result.code).toBe(42);
    expect(result.stdout).toBe("partial\n");
    expect(idsOf(await home.run(["ls", "--json"]))).toEqual([]);
  });

  it("passes stdin through and applies --env", async () => {
    const result = await home.run(
      ["run", "-e", "WHO=wörld", "--", "sh", "-c", 'read line; echo "$line, $WHO"'],
      {
        input: "hello\n",
      },
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("hello, wörld\n");
  });

  it("--keep keeps the sandbox and names it on stderr", async () => {
    const result = await home.run(["run", "--keep", "-l", "kept=yes", "--", "true"]);
    expect(result.code).toBe(0);
    const id = /^sandbox (\S+)$/m.exec(result.stderr)?.[1];
    expect(id).toMatch(/^local:/);
    expect(idsOf(await home.run(["ls", "--json"]))).toEqual([id]);
    expect((await home.run(["rm", id!])).code).toBe(0);
  });

  it("a command that does not exist is an error, not exit 0", async () => {
    const result = await home.run(["run", "--", "no-such-command-xyz"]);
    expect(result.code).not.toBe(0);
    expect(idsOf(await home.run(["ls", "--json"]))).toEqual([]);
  });

  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    it(`${signal} during run -- sleep destroys the sandbox and kills the command (no leak)`, async () => {
      // A unique duration identifies this test's sleep among the machine's processes; the CLI's own
      // command line holds it too, so only a process that *is* sleep counts.
      const marker = `30.${randomInt(100000, 999999)}`;
      const isOurSleep = (line: string): boolean =>
        new RegExp(`^\\s*(\\S*/)?sleep ${marker.replace(".", "\\.")}\\s*$`).test(line);
      const child = home.start(["run", "--", "sleep", marker]);
      let stderr = "";
      child.stderr!.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
      try {
        await waitUntil(() => processCommandLines().some(isOurSleep), 20_000, "the sleep to start");
        expect(idsOf(await home.run(["ls", "--json"]))).toHaveLength(1);
        child.kill(signal);
        const code = await exited;
        expect(code, stderr).toBe(signal === "SIGINT" ? 130 : 143);
        expect(idsOf(await home.run(["ls", "--json"]))).toEqual([]);
        await waitUntil(() => !processCommandLines().some(isOurSleep), 5_000, "the sleep to be gone");
      } finally {
        child.kill("SIGKILL");
      }
    });
  }
});
