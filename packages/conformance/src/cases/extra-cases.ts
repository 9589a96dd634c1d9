import { ConformanceFailure, check, eventually, expectEqual, show } from "../assertions.js";
import type { ConformanceCase } from "../conformance-case.js";
import { runOk } from "../sandbox-scripts.js";

/** Pty, code interpreter, ssh, and the placement/volume/secret capabilities that need fixtures. */
export function extraCases(): ConformanceCase[] {
  return [
    {
      id: "pty.interactive",
      title:
        "a pty runs an interactive shell: typed input is executed, stdin is a terminal, resize is seen, and exit ends it",
      requires: ["pty"],
      timeoutMs: 60_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const pty = sandbox.pty;
        if (!pty) throw new ConformanceFailure("expected sandbox.pty to be defined (pty is supported)");
        let output = "";
        const decoder = new TextDecoder();
        const term = await pty.create({
          cols: 80,
          rows: 24,
          onData: (data) => (output += decoder.decode(data, { stream: true })),
        });
        ctx.defer(() => term.kill().catch(() => {}));
        check(Number.isInteger(term.pid) && term.pid > 0, `expected a pty pid, got ${show(term.pid)}`);
        await term.write("echo pty-$((40 + 2)); [ -t 0 ] && echo is-a-tty\n");
        check(
          await eventually(() => output.includes("pty-42"), 15_000),
          `expected the pty to echo "pty-42", got ${show(output)}`,
        );
        check(
          await eventually(() => output.includes("is-a-tty"), 5_000),
          `expected stdin of the pty shell to be a terminal, got ${show(output)}`,
        );
        await term.resize(100, 30);
        await term.write("stty size 2>/dev/null || echo no-stty\n");
        check(
          await eventually(() => output.includes("30 100") || output.includes("no-stty"), 10_000),
          `expected "stty size" to print "30 100" after resize(100, 30), got ${show(output.slice(-200))}`,
        );
        await term.write("exit 0\n");
        const exit = await term.wait();
        expectEqual(exit.exitCode, 0, "exit code of the pty shell");
      },
    },
    {
      id: "code.run.result",
      title:
        "code.run executes Python and returns its printed output and expression result, and reports an exception as error data",
      requires: ["codeInterpreter"],
      timeoutMs: 90_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const code = sandbox.code;
        if (!code)
          throw new ConformanceFailure("expected sandbox.code to be defined (codeInterpreter is supported)");
        const result = await code.run("print('hello from code')\n6 * 7", { language: "python" });
        check(
          result.logs.stdout.includes("hello from code"),
          `expected logs.stdout to include the printed text, got ${show(result.logs)}`,
        );
        const texts = JSON.stringify(result.results);
        check(
          texts.includes("42") || result.logs.stdout.includes("42"),
          `expected the value 42 among the results, got ${show(result.results)}`,
        );
        check(result.error === undefined, `expected no error, got ${show(result.error)}`);
        const failed = await code.run("raise ValueError('boom')", { language: "python" });
        check(
          failed.error !== undefined && `${failed.error.name} ${failed.error.message}`.includes("boom"),
          `expected error data naming "boom", got ${show(failed.error)}`,
        );
      },
    },
    {
      id: "code.context.stateful",
      title: "code.run keeps variables across calls in the same context",
      requires: ["codeInterpreter", "statefulKernel"],
      timeoutMs: 90_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const code = sandbox.code;
        if (!code)
          throw new ConformanceFailure("expected sandbox.code to be defined (codeInterpreter is supported)");
        const context = `sbox-conformance-${ctx.runId}`;
        await code.run("sbox_value = 41", { language: "python", context });
        const result = await code.run("print(sbox_value + 1)", { language: "python", context });
        check(
          result.logs.stdout.includes("42"),
          `expected the second call to see the variable and print 42, got ${show(result.logs)}`,
        );
      },
    },
    {
      id: "ssh.access.shape",
      title: "ssh.access() returns a host, a port in 1..65535, a user and a credential",
      requires: ["ssh"],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const ssh = sandbox.ssh;
        if (!ssh) throw new ConformanceFailure("expected sandbox.ssh to be defined (ssh is supported)");
        const access = await ssh.access();
        check(
          typeof access.host === "string" && access.host.length > 0,
          `expected a host, got ${show(access.host)}`,
        );
        check(
          Number.isInteger(access.port) && access.port >= 1 && access.port <= 65535,
          `expected a port, got ${show(access.port)}`,
        );
        check(
          typeof access.user === "string" && access.user.length > 0,
          `expected a user, got ${show(access.user)}`,
        );
        check(
          typeof access.credential === "string" && access.credential.length > 0,
          "expected a non-empty credential",
        );
      },
    },
    {
      id: "placement.region",
      title: "a region given at create is honoured: the sandbox starts and runs commands",
      requires: ["region"],
      honours: ["region"],
      timeoutMs: 120_000,
      async run(ctx) {
        const region = ctx.fixtures.region;
        if (!region) return ctx.skip("needs fixtures.region (a region name the provider accepts)");
        const sandbox = await ctx.createSandbox({ region });
        await runOk(sandbox, "true", "running a command in the placed sandbox");
      },
    },
    {
      id: "placement.gpu",
      title: "a GPU requested at create is present in the sandbox",
      requires: ["gpu"],
      honours: ["resources.gpu"],
      timeoutMs: 180_000,
      async run(ctx) {
        const gpu = ctx.fixtures.gpu;
        if (!gpu) return ctx.skip("needs fixtures.gpu (a GPU kind the provider accepts)");
        const sandbox = await ctx.createSandbox({ resources: { gpu } });
        await runOk(
          sandbox,
          "nvidia-smi -L 2>/dev/null || ls /dev/nvidia0 /dev/dri 2>/dev/null",
          "looking for a GPU device",
        );
      },
    },
    {
      id: "volumes.persist",
      title: "a file written to a mounted volume is seen by the next sandbox that mounts it",
      requires: ["volumes"],
      honours: ["volumes"],
      timeoutMs: 180_000,
      async run(ctx) {
        const volume = ctx.fixtures.volume;
        if (!volume) return ctx.skip("needs fixtures.volume (an existing volume name)");
        const mountPath = "/mnt/sbox-conformance";
        const file = `${mountPath}/sbox-conformance-${ctx.runId}.txt`;
        const first = await ctx.createSandbox({ volumes: [{ name: volume, mountPath }] });
        await first.files.write(file, ctx.runId);
        await first.destroy();
        const second = await ctx.createSandbox({ volumes: [{ name: volume, mountPath }] });
        ctx.defer(() => second.files.remove(file).catch(() => {}));
        expectEqual(
          await second.files.readText(file),
          ctx.runId,
          "content read from the volume by the next sandbox",
        );
      },
    },
    {
      id: "secrets.inject",
      title:
        "a provider-managed secret named at create is present in the environment (its value is never printed)",
      requires: ["secretsVault"],
      honours: ["secrets"],
      timeoutMs: 120_000,
      async run(ctx) {
        const secret = ctx.fixtures.secret;
        if (!secret) return ctx.skip("needs fixtures.secret ({ name, env } of an existing secret)");
        const sandbox = await ctx.createSandbox({ secrets: [secret.name] });
        const result = await sandbox.commands.run([
          "sh",
          "-c",
          // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
          'eval "test -n \\"\\${$1}\\""',
          "sh",
          secret.env,
        ]);
        expectEqual(result.exitCode, 0, `exit code of a test that $${secret.env} is set and non-empty`);
      },
    },
  ];
}
