import { afterAll, describe, expect, it } from "vitest";
import { makeSboxHome } from "./sbox-harness.js";

const home = makeSboxHome();
afterAll(() => home.cleanup());

/** Every failure is exactly one line on stderr: `error[<code>]: <message>`, no stack trace. */
function expectOneErrorLine(stderr: string, code: string): void {
  const lines = stderr.split("\n").filter((line) => line.length > 0);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(new RegExp(`^error\\[${code}\\]: \\S`));
  expect(stderr).not.toMatch(/\n\s+at /);
}

describe("sbox usage errors exit 2 with one line", () => {
  const cases: [string, string[], RegExp][] = [
    ["unknown command", ["frobnicate"], /unknown command "frobnicate"/],
    ["a typo gets a suggestion", ["exce", "x"], /did you mean "exec"/],
    ["unknown option", ["ls", "--bogus"], /--bogus/],
    ["missing id", ["exec"], /missing ID/],
    ["missing command after --", ["exec", "local:abc"], /missing the command/],
    ["empty command after --", ["run", "--"], /missing the command/],
    ["bad duration", ["run", "--timeout", "soon", "--", "true"], /--timeout expects a duration/],
    ["bad label", ["ls", "--label", "novalue"], /--label expects KEY=VALUE/],
    ["bad env name", ["exec", "local:abc", "-e", "1BAD=x", "--", "true"], /invalid variable name/],
    ["bad port", ["port", "local:abc", "99999"], /PORT must be between 1 and 65535/],
    ["bad pid", ["logs", "local:abc", "12abc"], /PID must be a whole number/],
    ["cp without a sandbox side", ["cp", "./a", "./b"], /one side must be a sandbox path/],
    ["cp between sandboxes", ["cp", "a1:/x", "b2:/y"], /between two sandboxes/],
    ["rm --label without --all", ["rm", "--label", "a=b", "x"], /--label needs --all/],
    [
      "rm of many without a terminal and without --yes",
      ["rm", "local:a", "local:b"],
      /without confirmation: pass --yes/,
    ],
    [
      "conflicting provider and id prefix",
      ["info", "-p", "docker", "local:abc"],
      /belongs to provider local/,
    ],
  ];
  for (const [title, args, message] of cases) {
    it(title, async () => {
      const result = await home.run(args);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
      expectOneErrorLine(result.stderr, "Usage");
      expect(result.stderr).toMatch(message);
    });
  }

  it("no command at all prints the help on stderr and exits 2", async () => {
    const result = await home.run([]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("Commands:");
    expect(result.stderr).toMatch(/error\[Usage\]: missing command/);
  });
});

describe("sbox --help and --version", () => {
  it("documents every command and the exit codes by error class", async () => {
    const result = await home.run(["--help"]);
    expect(result.code).toBe(0);
    for (const command of [
      "run",
      "create",
      "exec",
      "shell",
      "cp",
      "ls",
      "info",
      "logs",
      "ps",
      "kill",
      "stop",
      "resume",
      "pause",
      "ttl",
      "rm",
      "reap",
      "caps",
      "port",
      "doctor",
    ]) {
      expect(result.stdout).toMatch(new RegExp(`^  ${command} `, "m"));
    }
    expect(result.stdout).toMatch(/^\s+2 {2}usage/m);
    expect(result.stdout).toMatch(/^\s+3 {2}NotFound/m);
    expect(result.stdout).toMatch(/^\s+124 {2}run\/exec: the command exceeded --timeout/m);
    // Piped output is never coloured.
    expect(result.stdout).not.toContain("\x1b[");
  });

  it("sbox CMD --help and sbox help CMD show the command's options", async () => {
    const a = await home.run(["cp", "--help"]);
    const b = await home.run(["help", "cp"]);
    expect(a.code).toBe(0);
    expect(a.stdout).toContain("sbox cp [options] SRC ID:DEST");
    expect(b.stdout).toBe(a.stdout);
  });

  it("prints the package version", async () => {
    const result = await home.run(["--version"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });
});

describe("sbox errors by class", () => {
  it("a sandbox that does not exist is NotFound, exit 3", async () => {
    const result = await home.run(["info", "local:doesnotexist0"]);
    expect(result.code).toBe(3);
    expectOneErrorLine(result.stderr, "NotFound");
  });

  it("an id that names a path outside the state root is refused, not followed", async () => {
    for (const id of ["local:../../etc", "local:..", "local:a/b", "local:$(touch /tmp/pwned)"]) {
      const result = await home.run(["info", id]);
      expect([3, 7]).toContain(result.code);
      expect(result.stderr.split("\n").filter(Boolean)).toHaveLength(1);
      expect(result.stderr).toMatch(/^error\[(NotFound|Validation)\]: /);
    }
  });

  it("a provider that does not exist is a clear one-line error naming the providers that do", async () => {
    const result = await home.run(["ls", "--provider", "nosuchprovider"]);
    expect(result.code).toBe(7);
    expectOneErrorLine(result.stderr, "Validation");
    expect(result.stderr).toContain("the providers are local, docker, e2b, fly");
  });

  it("--debug adds the stack trace", async () => {
    const result = await home.run(["info", "--debug", "local:doesnotexist0"]);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/^error\[NotFound\]: /);
    expect(result.stderr).toMatch(/\n\s+at /);
  });
});
