/**
 * `createSandboxSession` used exactly as `generateText({ experimental_sandbox })` uses it: the AI SDK hands
 * the session to tool description functions and to each tool's `execute`, and the tools call every method
 * of `Experimental_SandboxSession`. On provider-local and on Docker.
 */
import type { LanguageModelV4GenerateResult } from "@ai-sdk/provider";
import type { Sandbox, SandboxProvider } from "@sbox/core";
import { type Experimental_SandboxSession, generateText, isStepCount, jsonSchema, tool } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { afterAll, describe, expect, it } from "vitest";
import { createSandboxSession } from "../src/ai-sdk/index.js";
import { DOCKER_MISSING, dockerProvider, leftoverContainers } from "./docker-env.js";
import { clientFor, localProvider, tempRoot } from "./helpers.js";

const root = tempRoot("session");
afterAll(() => root.cleanup());

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

async function text(stream: ReadableStream<Uint8Array> | null): Promise<string> {
  if (stream === null) return "(null)";
  return new Response(stream).text();
}

/** Everything a tool can do with the session, recorded for the test to check. */
async function exercise(
  session: Experimental_SandboxSession,
  signal: AbortSignal | undefined,
): Promise<Record<string, unknown>> {
  const seen: Record<string, unknown> = {};
  const rejects = async (fn: () => PromiseLike<unknown>) =>
    Promise.resolve(fn()).then(
      () => "resolved",
      (error: unknown) => (error as { code?: string }).code ?? "rejected",
    );
  seen.run = await session.run({
    command: 'echo "out $X"; echo err >&2; exit 3',
    env: { X: "it's $(x)" },
    ...(signal ? { abortSignal: signal } : {}),
  });
  await session.run({ command: "mkdir -p sub/deeper && echo inside > sub/deeper/f.txt" });
  seen.runInDir = (await session.run({ command: "cat f.txt; pwd", workingDirectory: "sub/deeper" })).stdout;
  await session.writeTextFile({ path: "notes/a.txt", content: "one\ntwo\nthree\nfour\n" });
  seen.lines = await session.readTextFile({ path: "notes/a.txt", startLine: 2, endLine: 3 });
  seen.pastEnd = await session.readTextFile({ path: "notes/a.txt", startLine: 4, endLine: 99 });
  seen.whole = await session.readTextFile({ path: "notes/a.txt" });
  const allBytes = new Uint8Array(256).map((_, i) => i);
  await session.writeBinaryFile({ path: "bin/all.bin", content: allBytes });
  const back = await session.readBinaryFile({ path: "bin/all.bin" });
  seen.binaryRoundTrip = back !== null && Buffer.from(back).equals(Buffer.from(allBytes));
  await session.writeFile({
    path: "streamed.txt",
    content: new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("streamed "));
        controller.enqueue(new TextEncoder().encode("bytes"));
        controller.close();
      },
    }),
  });
  seen.streamed = await text(await session.readFile({ path: "streamed.txt" }));
  seen.missingRead = [
    await session.readFile({ path: "nope" }),
    await session.readBinaryFile({ path: "nope" }),
    await session.readTextFile({ path: "nope" }),
  ];
  await session.run({ command: "ln -s notes/a.txt link && ln -s missing dangling" });
  seen.stat = {
    file: await session.stat({ path: "notes/a.txt" }),
    dir: await session.stat({ path: "notes" }),
    link: await session.stat({ path: "link" }),
    dangling: await session.stat({ path: "dangling" }),
    missing: await session.stat({ path: "missing" }),
  };
  const listing = await session.listDirectory({ path: "." });
  seen.list = listing?.map((entry) => `${entry.name}:${entry.type}`).sort();
  seen.listMissing = await session.listDirectory({ path: "nothing-here" });
  seen.listFile = await rejects(() => session.listDirectory({ path: "notes/a.txt" }));
  seen.deleteLink = await session.deleteFile({ path: "link" });
  seen.targetKept = await session.readTextFile({ path: "notes/a.txt", startLine: 1, endLine: 1 });
  seen.deleteMissing = await session.deleteFile({ path: "link" });
  seen.deleteDir = await rejects(() => session.deleteFile({ path: "notes" }));
  seen.writeDir = await rejects(() => session.writeTextFile({ path: "notes", content: "x" }));
  const proc = await session.spawn({ command: "echo first; sleep 0.2; echo second >&2; exit 7" });
  const [out, err, exit] = await Promise.all([text(proc.stdout), text(proc.stderr), proc.wait()]);
  seen.spawn = { out, err, exit };
  const cat = await session.spawn({ command: "cat; echo done", stdin: true });
  const writer = cat.stdin.getWriter();
  await writer.write(new TextEncoder().encode("piped in\n"));
  await writer.close();
  seen.stdin = { out: await text(cat.stdout), exit: await cat.wait() };
  const sleeper = await session.spawn({ command: "sleep 30" });
  const started = Date.now();
  await sleeper.kill();
  await sleeper.kill();
  seen.killed = {
    exit: await sleeper.wait().then(
      (r) => r.exitCode,
      () => "rejected",
    ),
    fast: Date.now() - started < 10_000,
  };
  const controller = new AbortController();
  const aborted = await session.spawn({ command: "sleep 30", abortSignal: controller.signal });
  controller.abort(new Error("stop it"));
  seen.aborted = await aborted.wait().then(
    () => "resolved",
    (error: Error) => error.message,
  );
  return seen;
}

function suite(label: string, makeProvider: () => SandboxProvider, skip: string | undefined) {
  describe.skipIf(skip !== undefined)(
    `Experimental_SandboxSession through generateText on ${label}${skip ? ` (SKIPPED: ${skip})` : ""}`,
    () => {
      const env = skip ? undefined : clientFor(makeProvider());
      afterAll(async () => {
        await env?.cleanup();
      });

      it("every method behaves as the interface describes", async () => {
        const sandbox = (await env!.create()) as unknown as Sandbox;
        const session = await createSandboxSession(sandbox);
        let described = "";
        let seen: Record<string, unknown> = {};
        const exerciseTool = tool({
          description: ({ experimental_sandbox }) => {
            described = experimental_sandbox?.description ?? "";
            return "Exercise the sandbox.";
          },
          inputSchema: jsonSchema<Record<string, never>>({ type: "object", properties: {} }),
          execute: async (_input, { experimental_sandbox, abortSignal }) => {
            if (!experimental_sandbox) throw new Error("no sandbox handed to the tool");
            seen = await exercise(experimental_sandbox, abortSignal);
            return "exercised";
          },
        });
        const model = new MockLanguageModelV4({
          doGenerate: [
            {
              content: [{ type: "tool-call", toolCallId: "c1", toolName: "exercise", input: "{}" }],
              finishReason: { unified: "tool-calls", raw: undefined },
              usage,
              warnings: [],
            },
            {
              content: [{ type: "text", text: "done" }],
              finishReason: { unified: "stop", raw: undefined },
              usage,
              warnings: [],
            },
          ] satisfies LanguageModelV4GenerateResult[],
        });
        const result = await generateText({
          model,
          tools: { exercise: exerciseTool },
          experimental_sandbox: session,
          stopWhen: isStepCount(3),
          prompt: "go",
        });
        expect(result.text).toBe("done");
        expect(described).toContain(`provider ${sandbox.provider}`);
        const base = String(seen.runInDir)
          .split("\n")[1]!
          .replace(/\/sub\/deeper$/, "");
        expect(described).toContain(`working directory is ${base}`);
        expect(seen.run).toEqual({ exitCode: 3, stdout: "out it's $(x)\n", stderr: "err\n" });
        expect(seen.runInDir).toBe(`inside\n${base}/sub/deeper\n`);
        expect(seen.lines).toBe("two\nthree\n");
        expect(seen.pastEnd).toBe("four\n");
        expect(seen.whole).toBe("one\ntwo\nthree\nfour\n");
        expect(seen.binaryRoundTrip).toBe(true);
        expect(seen.streamed).toBe("streamed bytes");
        expect(seen.missingRead).toEqual([null, null, null]);
        expect(seen.stat).toEqual({
          file: { type: "file", size: 19 },
          dir: expect.objectContaining({ type: "directory" }),
          link: { type: "file", size: 19 },
          dangling: null,
          missing: null,
        });
        expect(seen.list).toEqual(
          expect.arrayContaining([
            "notes:directory",
            "link:symlink",
            "dangling:symlink",
            "streamed.txt:file",
            "sub:directory",
          ]),
        );
        expect(seen.listMissing).toBeNull();
        expect(seen.listFile).toBe("Validation");
        expect(seen.deleteLink).toBe(true);
        expect(seen.targetKept).toBe("one\n");
        expect(seen.deleteMissing).toBe(false);
        expect(seen.deleteDir).toBe("Validation");
        expect(seen.writeDir).toBe("Validation");
        expect(seen.spawn).toEqual({ out: "first\n", err: "second\n", exit: { exitCode: 7 } });
        expect(seen.stdin).toEqual({ out: "piped in\ndone\n", exit: { exitCode: 0 } });
        expect(seen.killed).toMatchObject({ fast: true });
        expect(seen.aborted).toBe("stop it");
        // Second channel: what the session wrote is there for the sandbox's own commands.
        expect((await sandbox.commands.run("cat streamed.txt; ls bin")).stdout).toBe(
          "streamed bytesall.bin\n",
        );
        await sandbox.destroy();
      });
    },
  );
}

suite("provider-local", () => localProvider(root.dir), undefined);

describe("createSandboxSession with command rules", () => {
  it("run and spawn refuse a denied command before it starts", async () => {
    const env = clientFor(localProvider(root.dir));
    try {
      const sandbox = (await env.create()) as unknown as Sandbox;
      const session = await createSandboxSession(sandbox, {
        commands: { deny: ["rm -rf"] },
        description: "A test box.",
      });
      expect(session.description).toContain("A test box.");
      await sandbox.files.write("keep.txt", "x");
      await expect(session.run({ command: "cd . && rm -rf keep.txt" })).rejects.toMatchObject({
        code: "Unauthorized",
      });
      await expect(session.spawn({ command: "sudo rm -fr keep.txt" })).rejects.toMatchObject({
        code: "Unauthorized",
      });
      expect(await sandbox.files.exists("keep.txt")).toBe(true);
      expect((await session.run({ command: "cat keep.txt" })).stdout).toBe("x");
    } finally {
      await env.cleanup();
    }
  });
});
suite("docker", dockerProvider, DOCKER_MISSING);

afterAll(() => {
  if (!DOCKER_MISSING) expect(leftoverContainers()).toEqual([]);
});
