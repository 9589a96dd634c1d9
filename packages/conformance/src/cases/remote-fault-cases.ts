import { inspect } from "node:util";
import { createSandboxClient, type Sandbox, type SandboxClient } from "@sbox/core";
import { SandboxError } from "@sbox/core/spec";
import { check, show } from "../assertions.js";
import type { ConformanceCase, ConformanceContext } from "../conformance-case.js";
import type { RemoteFault, RemoteUnderTest } from "../fault-injection.js";

/** What a case needs from the test file: the remote's hook (and for `secrets.*`, the planted credential). */
function remoteOf(
  ctx: ConformanceContext,
  needsCredential: boolean,
): RemoteUnderTest & { plantedCredential: string } {
  const remote = ctx.remote;
  if (!remote) {
    ctx.skip(
      "needs the remote's fault-injection hook: pass `remote` (a test server or an emulator) to the kit",
    );
  }
  if (needsCredential && !remote.plantedCredential) {
    ctx.skip("needs `remote.plantedCredential`, the fake credential the provider factory plants");
  }
  return remote as RemoteUnderTest & { plantedCredential: string };
}

/** Puts `fault` in force for the rest of the case; normal service returns before the sandboxes go. */
async function inject(ctx: ConformanceContext, remote: RemoteUnderTest, fault: RemoteFault): Promise<void> {
  await remote.faults.set(fault);
  ctx.defer(() => remote.faults.set({ kind: "none" }));
}

/**
 * The calls that go to the remote: the client's own (create, connect, list) and a sandbox's (getInfo, a
 * command, a file read). `client` should not retry, so that one call is one attempt.
 */
function remoteCalls(
  ctx: ConformanceContext,
  client: SandboxClient,
  sandbox: Sandbox,
): [string, () => Promise<unknown>][] {
  const calls: [string, () => Promise<unknown>][] = [
    ["client.create()", () => client.create().then((made) => ctx.track(made))],
    [`client.connect(${show(sandbox.id)})`, () => client.connect(sandbox.id)],
    ["sandbox.getInfo()", () => sandbox.getInfo()],
    ['sandbox.commands.run(["true"])', async () => sandbox.commands.run(["true"])],
    ['sandbox.files.read("/etc/hostname")', () => sandbox.files.read("/etc/hostname")],
  ];
  if (ctx.capabilities.map.list !== "unsupported") {
    calls.push([
      "client.list()",
      async () => {
        for await (const _ of client.list({ limit: 1 })) break;
      },
    ]);
  }
  return calls;
}

/** The rejection of `promise`, or undefined when it resolved; never longer than `limitMs`. */
async function rejectionOf(promise: Promise<unknown>, limitMs: number): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const pending = Symbol("pending");
  const limit = new Promise<typeof pending>((resolve) => {
    timer = setTimeout(() => resolve(pending), limitMs);
  });
  try {
    const outcome = await Promise.race([
      promise.then(
        () => undefined,
        (error: unknown) => ({ error }),
      ),
      limit,
    ]);
    if (outcome === pending) return pending;
    return outcome?.error;
  } finally {
    clearTimeout(timer);
  }
}

/** Every way a user or a logger could print an error: message, stack, the cause chain, inspect, JSON. */
function renderings(error: unknown): [string, string][] {
  const out: [string, string][] = [
    ["String(error)", String(error)],
    ["util.inspect(error)", inspect(error, { depth: Number.POSITIVE_INFINITY })],
    ["JSON.stringify(error)", JSON.stringify(error) ?? ""],
  ];
  const seen = new Set<unknown>();
  const walk = (value: unknown, path: string) => {
    if (typeof value === "string") out.push([path, value]);
    if (typeof value !== "object" || value === null || seen.has(value)) return;
    seen.add(value);
    const e = value as { message?: unknown; stack?: unknown; cause?: unknown; errors?: unknown };
    out.push([`${path}.message`, String(e.message)], [`${path}.stack`, String(e.stack)]);
    walk(e.cause, `${path}.cause`);
    if (Array.isArray(e.errors)) {
      for (const [i, inner] of e.errors.entries()) walk(inner, `${path}.errors[${i}]`);
    }
  };
  walk(error, "error");
  return out;
}

function expectNoCredential(error: unknown, credential: string, what: string): void {
  for (const [where, text] of renderings(error)) {
    check(
      !text.includes(credential),
      `expected the planted credential in no part of the error of ${what}, found it in ${where}`,
    );
  }
}

/**
 * Sets up a case against a misbehaving remote: a sandbox made while the remote is well, a second client
 * that does not retry, then `fault` in force. Returns the calls to make and the remote.
 */
async function underFault(
  ctx: ConformanceContext,
  needsCredential: boolean,
  fault: RemoteFault,
): Promise<{
  remote: RemoteUnderTest & { plantedCredential: string };
  calls: [string, () => Promise<unknown>][];
}> {
  const remote = remoteOf(ctx, needsCredential);
  const sandbox = await ctx.createSandbox();
  const client = ctx.secondClient({ retry: { retries: 0 } });
  const calls = remoteCalls(ctx, client, sandbox);
  await inject(ctx, remote, fault);
  return { remote, calls };
}

/** Each call's error (undefined when it resolved), one call after the other; none may stay pending. */
async function settleEach(
  calls: readonly [string, () => Promise<unknown>][],
  limitMs: number,
): Promise<[string, unknown][]> {
  const outcomes: [string, unknown][] = [];
  for (const [what, call] of calls) {
    const error = await rejectionOf(call(), limitMs);
    check(typeof error !== "symbol", `expected ${what} to settle within ${limitMs} ms, it is still pending`);
    outcomes.push([what, error]);
  }
  return outcomes;
}

/** The secrets and deadline cases: a provider against a remote that misbehaves on purpose. */
export function remoteFaultCases(): ConformanceCase[] {
  const echo: ConformanceCase = {
    id: "secrets.echoed-credential",
    title:
      "when the remote echoes every request's credentials in its error answers, every call fails and the planted credential appears in none of the errors' messages, stacks, cause chains, util.inspect or JSON.stringify output",
    requires: [],
    timeoutMs: 180_000,
    async run(ctx) {
      const { remote, calls } = await underFault(ctx, true, { kind: "echo-credential" });
      for (const [what, error] of await settleEach(calls, 4 * remote.deadlineMs + 10_000)) {
        check(
          error !== undefined,
          `expected ${what} to fail while the remote answers every request with an error`,
        );
        check(
          SandboxError.isInstance(error),
          `expected ${what} to fail with a SandboxError, got ${show(error)}`,
        );
        expectNoCredential(error, remote.plantedCredential, what);
      }
    },
  };

  const redirect = (status: 302 | 307): ConformanceCase => ({
    id: `secrets.redirect-cross-origin.${status}`,
    title: `when the remote answers every request with a ${status} redirect to another origin, no request that reaches that origin carries the planted credential (in a header, the URL or the body), and no error does`,
    requires: [],
    timeoutMs: 180_000,
    async run(ctx) {
      const foreign = await ctx.foreignOrigin();
      const before = foreign.requests().length;
      const fault: RemoteFault = { kind: "redirect", location: foreign.url, status };
      const { remote, calls } = await underFault(ctx, true, fault);
      for (const [what, error] of await settleEach(calls, 4 * remote.deadlineMs + 10_000)) {
        if (error !== undefined) expectNoCredential(error, remote.plantedCredential, what);
      }
      for (const request of foreign.requests().slice(before)) {
        check(
          !JSON.stringify(request).includes(remote.plantedCredential),
          `expected no request to the other origin to carry the planted credential, but ${request.method} ${request.url} did`,
        );
      }
    },
  });

  const deadline: ConformanceCase = {
    id: "deadline.silent-remote",
    title:
      "when the remote accepts every request and never answers, every call (create, connect, list, getInfo, a command, a file read) rejects with Timeout within twice the configured deadline plus 2 s",
    requires: [],
    timeoutMs: 180_000,
    async run(ctx) {
      const { remote, calls } = await underFault(ctx, false, { kind: "stall" });
      // One deadline for the call, one for a bounded follow-up (a liveness or state check) it may make.
      const bound = 2 * remote.deadlineMs + 2_000;
      // In parallel, so that each is timed from the moment the remote went silent.
      const outcomes = await Promise.all(
        calls.map(async ([what, call]) => {
          const started = Date.now();
          const error = await rejectionOf(call(), bound + 10_000);
          return { what, error, ms: Date.now() - started };
        }),
      );
      for (const { what, error, ms } of outcomes) {
        check(
          typeof error !== "symbol",
          `expected ${what} to reject within ${bound} ms, it was still pending after ${ms} ms`,
        );
        check(error !== undefined, `expected ${what} to reject while the remote never answers, it resolved`);
        check(
          SandboxError.isInstance(error) && error.code === "Timeout",
          `expected ${what} to reject with Timeout, got ${show(error)}`,
        );
        check(
          ms <= bound,
          `expected ${what} to reject within ${bound} ms (deadline ${remote.deadlineMs} ms), took ${ms} ms`,
        );
      }
    },
  };

  const unauthorized: ConformanceCase = {
    id: "errors.unauthorized.wrong-credential",
    title:
      "with a credential the remote refuses, create, connect, list and getInfo of an existing sandbox reject with Unauthorized, not retryable, quickly (no retry loop), and the refused credential appears in no error",
    requires: [],
    timeoutMs: 120_000,
    async run(ctx) {
      const options = ctx.remote?.wrongCredentialOptions;
      if (!options) {
        return ctx.skip(
          "needs `remote.wrongCredentialOptions`: the factory options that give the provider a credential its remote refuses (a provider without credentials has nothing to refuse)",
        );
      }
      const existing = await ctx.createSandbox();
      const provider = ctx.providerWithOptions({ ...options });
      const client = createSandboxClient({ provider, retry: { retries: 3, baseDelayMs: 2_000 } });
      ctx.defer(() => client.dispose());
      const refused = Object.values(options).filter(
        (v): v is string => typeof v === "string" && v.length > 0,
      );
      const calls: [string, () => Promise<unknown>][] = [
        ["client.create()", () => client.create().then((made) => ctx.track(made))],
        [`client.connect(${show(existing.id)})`, () => client.connect(existing.id).then((s) => s.getInfo())],
      ];
      if (ctx.capabilities.map.list !== "unsupported") {
        calls.push([
          "client.list()",
          async () => {
            for await (const _ of client.list({ limit: 1 })) break;
          },
        ]);
      }
      for (const [what, call] of calls) {
        const started = Date.now();
        const error = await rejectionOf(call(), 60_000);
        const ms = Date.now() - started;
        check(typeof error !== "symbol", `expected ${what} with a refused credential to settle within 60 s`);
        check(error !== undefined, `expected ${what} with a refused credential to reject, it resolved`);
        check(
          SandboxError.isInstance(error) && error.code === "Unauthorized",
          `expected ${what} with a refused credential to reject with Unauthorized, got ${show(error)}`,
        );
        check(!error.retryable, `expected the Unauthorized of ${what} not to be retryable`);
        // Three retries 2 s apart would take 6 s or more: an Unauthorized is final.
        check(
          ms < 5_000,
          `expected ${what} to reject at once (no retries of an Unauthorized), it took ${ms} ms`,
        );
        for (const credential of refused) expectNoCredential(error, credential, what);
      }
    },
  };

  return [echo, redirect(307), redirect(302), deadline, unauthorized];
}
