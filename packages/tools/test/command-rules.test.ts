import { describe, expect, it } from "vitest";
import { CommandPolicy, parseShell } from "../src/index.js";

const names = (line: string) =>
  parseShell(line).commands.map((command) => command.argv.map((w) => w.text).join(" "));

describe("reading shell lines statically", () => {
  it("finds every simple command, through operators, substitutions, groups and wrappers", () => {
    expect(names("a 1 && b 2 || c; d | e & f")).toEqual(["a 1", "b 2", "c", "d", "e", "f"]);
    expect(names('echo "$(rm -rf /x)" `id`')).toEqual(expect.arrayContaining(["rm -rf /x", "id"]));
    expect(names("(cd dir && make) > log 2>&1")).toEqual(["cd dir", "make"]);
    expect(names("FOO=1 BAR=$x sudo -u bob env X=1 nice -n 5 /bin/rm -r -f /")).toEqual([
      "sudo -u bob env X=1 nice -n 5 /bin/rm -r -f /",
      "env X=1 nice -n 5 /bin/rm -r -f /",
      "nice -n 5 /bin/rm -r -f /",
      "/bin/rm -r -f /",
    ]);
    expect(names("bash -lc 'curl x | sh -c \"wget y\"'")).toEqual(
      expect.arrayContaining(["curl x", "wget y"]),
    );
    expect(names("find . -name '*.tmp' -exec rm -f {} \\;")).toEqual(expect.arrayContaining(["rm -f {}"]));
    expect(names("if true; then for f in a b; do echo $f; done; fi")).toEqual(["true", "echo $f"]);
    expect(names("case $x in a|b) one ;; *) two ;; esac")).toEqual(["one", "two"]);
    expect(names("cat <<EOF\nrm -rf /\nEOF\necho done")).toEqual(["cat", "echo done"]);
    expect(names("f() { rm -rf /tmp/x; }; f")).toEqual(["rm -rf /tmp/x", "f"]);
    expect(names("eval 'rm -rf /'")).toEqual(expect.arrayContaining(["rm -rf /"]));
  });

  it("keeps quoted text as data", () => {
    expect(names("echo 'rm -rf /' \"sudo rm\"")).toEqual(["echo rm -rf / sudo rm"]);
    expect(names("printf '%s\\n' $'a\\nb'")).toEqual(["printf %s\\n a\nb"]);
  });

  it("reports what it cannot read", () => {
    expect(parseShell("$CMD -rf /").problems[0]).toMatch(/only known at run time/);
    expect(parseShell("sh script.sh").problems[0]).toMatch(/script file/);
    expect(parseShell("curl x | bash").problems[0]).toMatch(/reads commands from its input/);
    expect(parseShell('eval "$X"').problems[0]).toMatch(/eval/);
    expect(parseShell(". ./env.sh").problems[0]).toMatch(/from a file/);
    expect(parseShell("echo 'unclosed").problems[0]).toMatch(/unclosed/);
    expect(parseShell("cat <<EOF\nno end").problems[0]).toMatch(/here-document/);
    expect(parseShell("ls -la | grep x").problems).toEqual([]);
  });
});

describe("argv-aware command rules", () => {
  const policy = new CommandPolicy({ deny: ["rm -rf", "curl", "git push --force"], ask: ["pip install"] });

  it("deny rules match the command, not a substring", () => {
    expect(policy.check("echo 'rm -rf /'").action).toBe("allow");
    expect(policy.check("rm -rf /").action).toBe("deny");
    expect(policy.check("rm -f -r build").action).toBe("deny");
    expect(policy.check("rm -fr build").action).toBe("deny");
    expect(policy.check("rm build").action).toBe("allow");
    expect(policy.check("sudo /bin/rm -rf /").action).toBe("deny");
    expect(policy.check("ls && $(curl -s example.test)").action).toBe("deny");
    expect(policy.check("sh -c 'curl example.test'").action).toBe("deny");
    expect(policy.check("xargs curl < urls").action).toBe("deny");
    expect(policy.check("git push origin main").action).toBe("allow");
    expect(policy.check("git push --force origin main").action).toBe("deny");
    expect(policy.check("git push origin main --force").action).toBe("deny");
    expect(policy.check("curly").action).toBe("allow");
    expect(policy.check("pip install requests").action).toBe("ask");
    const denied = policy.check("echo ok; rm -rf ~");
    expect(denied.reason).toContain('matches the denied command "rm -rf"');
  });

  it("what cannot be read is asked, a dynamic name or argument may match a deny rule", () => {
    expect(policy.check("$TOOL build").action).toBe("deny");
    expect(new CommandPolicy({ ask: ["npm publish"] }).check("$TOOL build").action).toBe("ask");
    expect(policy.check("rm $FLAGS target").action).toBe("deny");
    expect(policy.check("bash ./install.sh").action).toBe("ask");
    // Not valid arithmetic, so some shells run it in a subshell: a deny rule still sees it.
    expect(policy.check('echo "$((/bin/rm -rf /target))"').action).toBe("deny");
    expect(policy.check("echo $((2 * 3))done").action).toBe("allow");
  });

  it("an allow-list denies everything it does not list, looking through wrappers", () => {
    const allowList = new CommandPolicy({ allow: ["python3", "ls", "git status", "cat"] });
    expect(allowList.check("python3 main.py").action).toBe("allow");
    expect(allowList.check("env A=1 timeout 5 python3 main.py").action).toBe("allow");
    expect(allowList.check("git status --short").action).toBe("allow");
    expect(allowList.check("git commit -m x").action).toBe("deny");
    expect(allowList.check("ls | wc -l").action).toBe("deny");
    expect(allowList.check("cat $(whoami)").action).toBe("deny");
    expect(allowList.check("sh -c 'ls && cat x'").action).toBe("allow");
    expect(allowList.check("python3 $SCRIPT").action).toBe("allow");
    expect(allowList.check("ls $((1 + 2)) x").action).toBe("allow");
  });

  it("no rules allow everything without reading it", () => {
    expect(new CommandPolicy().check("$(anything) `at all`").action).toBe("allow");
  });
});

describe("quoted data never turns into a command (property)", () => {
  it("any string shell-quoted as an argument stays one literal argument of echo", async () => {
    const fc = await import("fast-check");
    const { shellQuote } = await import("@sbox/core");
    const policy = new CommandPolicy({ deny: ["rm", "curl", "sh"], allow: ["echo"] });
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 200 }), (text) => {
        const clean = text.replace(/\0/g, "");
        const parsed = parseShell(`echo ${shellQuote(clean)}`);
        expect(parsed.problems).toEqual([]);
        expect(parsed.commands.map((command) => command.argv.map((word) => word.text))).toEqual([
          ["echo", clean],
        ]);
        expect(policy.check(`echo ${shellQuote(clean)}`).action).toBe("allow");
      }),
      { numRuns: 500 },
    );
  });
});

describe("a denied command is found wherever it is nested (property)", () => {
  it("rm -rf inside any mix of lists, pipes, substitutions, groups, wrappers and sh -c is denied", async () => {
    const fc = await import("fast-check");
    const { shellQuote } = await import("@sbox/core");
    const policy = new CommandPolicy({ deny: ["rm -rf"] });
    const wrap = fc.constantFrom<(inner: string) => string>(
      (x) => `true; ${x}`,
      (x) => `${x} && echo ok`,
      (x) => `false || ${x}`,
      (x) => `echo a | ${x}`,
      (x) => `echo "$(${x})"`,
      // Inside backticks, backslashes and backticks are escaped (as a shell needs them to nest).
      (x) => `echo \`${x.replace(/[\\`$]/g, (c) => `\\${c}`)}\``,
      (x) => `(${x})`,
      (x) => `{ ${x}; }`,
      (x) => `sh -c ${shellQuote(x)}`,
      (x) => `bash -lc ${shellQuote(x)}`,
      // Wrappers run one program: around a compound command they go through a shell.
      (x) => `sudo sh -c ${shellQuote(x)}`,
      (x) => `env A=1 bash -c ${shellQuote(x)}`,
      (x) => `timeout 5 sh -c ${shellQuote(x)}`,
      (x) => `if true; then ${x}; fi`,
      (x) => `for i in 1 2; do ${x}; done`,
      (x) => `case a in a) ${x} ;; esac`,
      (x) => `X=$(date); ${x}`,
      (x) => `eval ${shellQuote(x)}`,
    );
    const flags = fc.constantFrom("-rf", "-fr", "-r -f", "-f -r", "-Rf --verbose -r");
    const base = fc.constantFrom(
      "/bin/rm",
      "rm",
      "sudo -u root rm",
      "env A=1 timeout 5 nice -n 2 /usr/bin/rm",
      "command rm",
    );
    fc.assert(
      fc.property(fc.array(wrap, { minLength: 1, maxLength: 4 }), base, flags, (wrappers, program, flag) => {
        const line = wrappers.reduce((inner, wrapper) => wrapper(inner), `${program} ${flag} /target`);
        const decision = policy.check(line);
        if (flag.includes("R") && !flag.includes("-r")) return;
        expect({ line, action: decision.action }).toEqual({ line, action: "deny" });
      }),
      { numRuns: 400 },
    );
  });
});

describe("what is too deep to read is asked, not allowed", () => {
  it("commands nested beyond the reader's depth need approval", () => {
    let line = "rm -rf /x";
    // $(...) nests without quoting, so the line stays small however deep it goes.
    for (let i = 0; i < 40; i++) line = `echo $(${line})`;
    const decision = new CommandPolicy({ deny: ["curl"] }).check(line);
    expect(decision.action).toBe("ask");
    expect(decision.reason).toContain("nested too deeply");
  });
});

describe("hostile lines", () => {
  it("64 KiB of pathological nesting is read quickly; what hides a command is never allowed", () => {
    const policy = new CommandPolicy({ deny: ["rm"] });
    const lines: [string, readonly string[]][] = [
      ["$(".repeat(21_000), ["deny", "ask"]],
      ["`".repeat(65_000), ["deny", "ask"]],
      [`${"a;".repeat(30_000)}rm -rf /`, ["deny"]],
      [`echo "${"$(".repeat(10_000)}`, ["deny", "ask"]],
      [`case x in ${"a) b ;; ".repeat(6000)}`, ["ask"]],
      [`cat <<EOF\n${"x\n".repeat(30_000)}`, ["ask"]],
      // Harmless however long: nothing but echo (or a syntax error that runs nothing).
      [`echo ${"\\".repeat(65_000)}`, ["allow"]],
      ["(".repeat(65_000), ["allow", "ask"]],
    ];
    for (const [line, expected] of lines) {
      const started = Date.now();
      const decision = policy.check(line);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(expected).toContain(decision.action);
    }
  });
});
