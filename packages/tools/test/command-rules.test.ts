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
  });

  it("no rules allow everything without reading it", () => {
    expect(new CommandPolicy().check("$(anything) `at all`").action).toBe("allow");
  });
});
