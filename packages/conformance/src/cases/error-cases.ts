import { randomUUID } from "node:crypto";
import type { SandboxSpec, SpecField } from "@sbox/core/spec";
import { check, expectRejects, show } from "../assertions.js";
import type { ConformanceCase } from "../conformance-case.js";
import { expectNoDriverCall } from "./case-helpers.js";

/** Spec fields that need no capability, with a value to try when the provider does not honour them. */
const PLAIN_FIELDS: readonly [SpecField, SandboxSpec][] = [
  ["name", { name: "sbox-conformance" }],
  ["ports", { ports: [8080] }],
  ["resources.vcpus", { resources: { vcpus: 1 } }],
  ["resources.memoryMB", { resources: { memoryMB: 512 } }],
  ["resources.diskMB", { resources: { diskMB: 1024 } }],
  ["template", { template: "sbox-conformance-template" }],
  ["env", { env: { SBOX_CONF: "x" } }],
];

/** The error taxonomy: every failure is a SandboxError with the right code, raised before the provider where it can be. */
export function errorCases(): ConformanceCase[] {
  return [
    {
      id: "errors.connect.missing",
      title: "connect() to a sandbox that does not exist rejects with NotFound (prefixed and native id)",
      requires: [],
      async run(ctx) {
        const missing = `sbox-conformance-missing-${randomUUID()}`;
        await expectRejects(
          ctx.client.connect(`${ctx.providerName}:${missing}`),
          "NotFound",
          "connect() to a missing sandbox",
        );
        await expectRejects(ctx.client.connect(missing), "NotFound", "connect() to a missing native id");
      },
    },
    {
      id: "errors.connect.invalid-id",
      title: "connect() with an empty id or another provider's prefix is refused with Validation or NotFound",
      requires: [],
      coreOnly: true,
      async run(ctx) {
        await expectRejects(ctx.client.connect(""), ["Validation", "NotFound"], 'connect("")');
        await expectRejects(
          ctx.client.connect(`sbox-conformance-other-provider:${randomUUID()}`),
          ["Validation", "NotFound"],
          "connect() with another provider's prefix",
        );
      },
    },
    {
      id: "errors.exec.invalid-env-key",
      title: "an env key that is not [A-Za-z_][A-Za-z0-9_]* is a Validation error before any provider call",
      requires: [],
      coreOnly: true,
      async run(ctx) {
        const sandbox = await ctx.quietSandbox();
        for (const key of ["BAD-KEY", "1LEADING_DIGIT", "WITH SPACE", "A=B", "", "$(x)"]) {
          await expectNoDriverCall(ctx, sandbox, `run() with env key ${show(key)}`, () =>
            expectRejects(
              Promise.resolve(sandbox.commands.run("true", { env: { [key]: "x" } })),
              "Validation",
              `run() with env key ${show(key)}`,
            ),
          );
        }
      },
    },
    {
      id: "errors.exec.invalid-input",
      title:
        "an empty argv, a NUL byte in an argument or env value, and a negative timeout are Validation errors before any provider call",
      requires: [],
      coreOnly: true,
      async run(ctx) {
        const sandbox = await ctx.quietSandbox();
        const attempts: [string, () => PromiseLike<unknown>][] = [
          ["run([])", () => sandbox.commands.run([])],
          ["run() with a NUL byte in argv", () => sandbox.commands.run(["echo", "a\0b"])],
          [
            "run() with a NUL byte in an env value",
            () => sandbox.commands.run("true", { env: { SBOX_CONF: "a\0b" } }),
          ],
          ["run() with timeoutMs -1", () => sandbox.commands.run("true", { timeoutMs: -1 })],
          ["files.read() of a path with a NUL byte", () => sandbox.files.read("/tmp/a\0b")],
          ["files.write() of a path with a NUL byte", () => sandbox.files.write("/tmp/a\0b", "x")],
        ];
        for (const [what, attempt] of attempts) {
          await expectNoDriverCall(ctx, sandbox, what, () =>
            expectRejects(
              (async () => {
                await attempt();
              })(),
              "Validation",
              what,
            ),
          );
        }
      },
    },
    {
      id: "errors.create.invalid-spec",
      title:
        "an unknown spec field, or one the provider does not honour, is a Validation error before any provider call",
      requires: [],
      coreOnly: true,
      async run(ctx) {
        await expectNoDriverCall(ctx, undefined, "create() with an unknown field", () =>
          expectRejects(
            ctx.createSandbox({ sboxConformanceBogus: 1 } as unknown as SandboxSpec),
            "Validation",
            "create() with an unknown field",
          ),
        );
        await expectNoDriverCall(ctx, undefined, "create() with a negative memory size", () =>
          expectRejects(
            ctx.createSandbox({ resources: { memoryMB: -1 } }),
            "Validation",
            "create() with resources.memoryMB -1",
          ),
        );
        const unhonoured = PLAIN_FIELDS.find(([field]) => !ctx.provider.honours.includes(field));
        if (unhonoured) {
          const [field, spec] = unhonoured;
          await expectNoDriverCall(
            ctx,
            undefined,
            `create() with ${field}, which the provider does not honour`,
            () =>
              expectRejects(
                ctx.createSandbox(spec),
                "Validation",
                `create() with ${field}, which the provider does not honour`,
              ),
          );
        }
      },
    },
    {
      id: "errors.after-destroy",
      title:
        "using a destroyed sandbox rejects with a SandboxError (NotFound or InvalidState), never a raw error or a hang",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.createSandbox();
        await sandbox.destroy();
        await expectRejects(
          Promise.resolve(sandbox.commands.run("true")),
          ["NotFound", "InvalidState"],
          "run() on a destroyed sandbox",
        );
        await expectRejects(
          sandbox.files.read("/etc/hostname"),
          ["NotFound", "InvalidState"],
          "files.read() on a destroyed sandbox",
        );
      },
    },
    {
      id: "errors.codes.well-formed",
      title:
        "errors carry a code from the taxonomy, a boolean retryable and a message, and pass SandboxError.isInstance",
      requires: [],
      async run(ctx) {
        const error = await expectRejects(
          ctx.client.connect(`${ctx.providerName}:sbox-conformance-missing-${randomUUID()}`),
          "NotFound",
          "connect() to a missing sandbox",
        );
        check(
          typeof error.retryable === "boolean",
          `expected retryable to be a boolean, got ${show(error.retryable)}`,
        );
        check(typeof error.message === "string" && error.message.length > 0, "expected a non-empty message");
        check(error instanceof Error, "expected the SandboxError to be an Error");
        check(
          error.provider === undefined || error.provider === ctx.providerName,
          `expected error.provider to be ${ctx.providerName} when set, got ${show(error.provider)}`,
        );
      },
    },
  ];
}
