/**
 * Lossy `fork` (opt-in with `emulate: ["fork"]`): the source's workdir is archived, `count` new sandboxes
 * are created, and the archive is streamed into each and extracted into its workdir. The copies share
 * files only: no memory, no processes, nothing outside the workdir. If any step fails, every sandbox this
 * call created is destroyed again before the error is reported.
 */
import { SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import type { DriverSandbox, ProviderDriver } from "../spec/provider-spec.js";
import { fileError } from "./e5-file-errors.js";
import { emulatedFiles } from "./e5-files.js";
import { randomToken } from "./e5-paths.js";
import { type EmulationContext, type ShellResult, stateDirOf } from "./emulation-context.js";
import { archiveScript, extractScript, workdirLayout } from "./lossy-workdir-tar.js";
import { shellQuote } from "./shell-quote.js";

/** Streamed file transfer used to move the archive; the E5 emulation fills in what is missing. */
export interface ForkFileMethods {
  readonly doReadFileStream?: ProviderDriver["doReadFileStream"] | undefined;
  readonly doWriteFileStream?: ProviderDriver["doWriteFileStream"] | undefined;
}

/** The most copies one fork call may make. */
const MAX_FORK_COUNT = 64;

/**
 * Builds the lossy fork. `createSibling` makes a fresh sandbox like the source; `destroy` removes one
 * (used to clean up after a failure).
 */
export function emulatedFork(
  ctx: EmulationContext,
  workdir: (sandbox: DriverSandbox) => Promise<string>,
  createSibling: (source: DriverSandbox, signal: AbortSignal) => Promise<DriverSandbox>,
  files: ForkFileMethods,
  destroy?: (sandbox: DriverSandbox, signal: AbortSignal) => Promise<void>,
): NonNullable<ProviderDriver["doFork"]> {
  const fallback = emulatedFiles(ctx);
  const read = files.doReadFileStream ?? fallback.doReadFileStream;
  const write = files.doWriteFileStream ?? fallback.doWriteFileStream;

  const run = async (sandbox: DriverSandbox, script: string, signal: AbortSignal): Promise<ShellResult> => {
    try {
      return await ctx.exec(sandbox, script, { signal });
    } catch (error) {
      throw toSandboxError(error, { provider: ctx.provider, operation: "fork" });
    }
  };
  const bestEffort = async (what: () => Promise<unknown>) => {
    try {
      await what();
    } catch {
      // Cleanup after a failure: the failure itself is what gets reported.
    }
  };

  return async (source, options) => {
    const { count, signal } = options;
    if (!Number.isInteger(count) || count < 1 || count > MAX_FORK_COUNT) {
      throw new SandboxError("Validation", `fork: count must be an integer from 1 to ${MAX_FORK_COUNT}`, {
        provider: ctx.provider,
        retryable: false,
      });
    }
    const layout = workdirLayout(await workdir(source), stateDirOf(ctx, source), ctx.provider);
    const token = randomToken();
    const archive = `${stateDirOf(ctx, source)}/fork-${token}.tar`;
    const packed = await run(source, archiveScript(layout, archive), signal);
    if (packed.exitCode !== 0) {
      await bestEffort(() => run(source, `rm -f ${shellQuote(archive)}`, AbortSignal.timeout(30_000)));
      throw fileError({ provider: ctx.provider, operation: "fork: archiving", path: layout.workdir }, packed);
    }

    const created: DriverSandbox[] = [];
    try {
      const attempts = await Promise.allSettled(
        Array.from({ length: count }, async () => {
          const sibling = await createSibling(source, signal);
          created.push(sibling);
          return sibling;
        }),
      );
      const failed = attempts.find((a): a is PromiseRejectedResult => a.status === "rejected");
      if (failed) throw failed.reason;
      const siblings = attempts.map((a) => (a as PromiseFulfilledResult<DriverSandbox>).value);

      await Promise.all(
        siblings.map(async (sibling, index) => {
          const target = workdirLayout(await workdir(sibling), stateDirOf(ctx, sibling), ctx.provider);
          const incoming = `${stateDirOf(ctx, sibling)}/fork-${token}-${index}.tar`;
          const stream = await read(source, archive, { signal });
          await write(sibling, incoming, stream, { signal });
          const unpacked = await run(
            sibling,
            `(
${extractScript(target, incoming, false)}
)
s=$?; rm -f ${shellQuote(incoming)}; exit $s`,
            signal,
          );
          if (unpacked.exitCode !== 0) {
            throw fileError(
              { provider: ctx.provider, operation: "fork: extracting", path: target.workdir },
              unpacked,
            );
          }
        }),
      );
      return siblings;
    } catch (error) {
      if (destroy) {
        await Promise.all(
          created.map((sibling) => bestEffort(() => destroy(sibling, AbortSignal.timeout(60_000)))),
        );
      }
      throw toSandboxError(error, { provider: ctx.provider, operation: "fork" });
    } finally {
      await bestEffort(() => run(source, `rm -f ${shellQuote(archive)}`, AbortSignal.timeout(30_000)));
    }
  };
}
