/**
 * Lossy `snapshot` (opt-in with `emulate: ["snapshot"]`): a tarball of the workdir kept inside the sandbox
 * under `<stateDir>/snapshots/<id>.tar`, with `<id>.json` holding its name and creation time. Restore
 * empties the workdir and extracts the tarball. Not captured: memory, running processes, and anything
 * outside the workdir; snapshots live and die with the sandbox.
 */
import { SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import type { DriverSandbox, ProviderDriver, SnapshotRef } from "../spec/provider-spec.js";
import { decodeBase64 } from "./e5-base64.js";
import { FILE_EXIT, fileError } from "./e5-file-errors.js";
import { randomToken } from "./e5-paths.js";
import { type EmulationContext, type ShellResult, stateDirOf } from "./emulation-context.js";
import { archiveScript, extractScript, workdirLayout } from "./lossy-workdir-tar.js";
import { shellQuote } from "./shell-quote.js";

/** The snapshot methods this emulation provides. */
export type EmulatedSnapshotMethods = Required<
  Pick<ProviderDriver, "doCreateSnapshot" | "doRestoreSnapshot" | "doListSnapshots" | "doDeleteSnapshot">
>;

const ID = /^snap-[a-z0-9]+-[0-9a-f]+$/;
const MAX_NAME_LENGTH = 1024;

/** Builds the lossy snapshot methods; `workdir` tells where a sandbox's files live. */
export function emulatedSnapshots(
  ctx: EmulationContext,
  workdir: (sandbox: DriverSandbox) => Promise<string>,
): EmulatedSnapshotMethods {
  const storeOf = (sandbox: DriverSandbox) => `${stateDirOf(ctx, sandbox)}/snapshots`;
  const run = async (sandbox: DriverSandbox, script: string, signal: AbortSignal, operation: string) => {
    let result: ShellResult;
    try {
      result = await ctx.exec(sandbox, script, { signal });
    } catch (error) {
      throw toSandboxError(error, { provider: ctx.provider, operation });
    }
    return result;
  };
  const layoutOf = async (sandbox: DriverSandbox) =>
    workdirLayout(await workdir(sandbox), stateDirOf(ctx, sandbox), ctx.provider);
  const unknown = (ref: SnapshotRef, operation: string) =>
    new SandboxError("NotFound", `${operation}: no snapshot ${JSON.stringify(ref?.id)} in this sandbox`, {
      provider: ctx.provider,
      retryable: false,
    });
  const idOf = (ref: SnapshotRef, operation: string): string => {
    if (typeof ref?.id !== "string" || !ID.test(ref.id)) throw unknown(ref, operation);
    return ref.id;
  };

  return {
    async doCreateSnapshot(sandbox, options) {
      const store = storeOf(sandbox);
      const name = options.name;
      if (
        name !== undefined &&
        (typeof name !== "string" || name.length > MAX_NAME_LENGTH || name.includes("\0"))
      ) {
        throw new SandboxError(
          "Validation",
          `snapshots.create: name must be a string of at most ${MAX_NAME_LENGTH} characters without NUL`,
          { provider: ctx.provider, retryable: false },
        );
      }
      const layout = await layoutOf(sandbox);
      const id = `snap-${Date.now().toString(36)}-${randomToken(4)}`;
      const ref: SnapshotRef = { id, createdAt: new Date() };
      if (name !== undefined) ref.name = name;
      const meta = JSON.stringify({ id, name, createdAt: ref.createdAt.toISOString() });
      const base = `${store}/${id}`;
      const result = await run(
        sandbox,
        `${archiveScript(layout, `${base}.tar`)} || exit $?
printf '%s\\n' ${shellQuote(meta)} > ${shellQuote(`${base}.json.part`)} && mv -f ${shellQuote(`${base}.json.part`)} ${shellQuote(`${base}.json`)}`,
        options.signal,
        "snapshots.create",
      );
      if (result.exitCode !== 0) {
        throw fileError(
          {
            provider: ctx.provider,
            operation: "snapshots.create",
            path: layout.workdir,
            messages: { [FILE_EXIT.notFound]: "the workdir does not exist" },
          },
          result,
        );
      }
      return ref;
    },

    async doRestoreSnapshot(sandbox, ref, options) {
      const store = storeOf(sandbox);
      const id = idOf(ref, "snapshots.restore");
      const layout = await layoutOf(sandbox);
      const result = await run(
        sandbox,
        extractScript(layout, `${store}/${id}.tar`, true),
        options.signal,
        "snapshots.restore",
      );
      if (result.exitCode === FILE_EXIT.notFound) throw unknown(ref, "snapshots.restore");
      if (result.exitCode !== 0) {
        throw fileError(
          { provider: ctx.provider, operation: "snapshots.restore", path: layout.workdir },
          result,
        );
      }
    },

    async doListSnapshots(sandbox, options) {
      const store = storeOf(sandbox);
      const result = await run(
        sandbox,
        `d=${shellQuote(store)}
[ -d "$d" ] || exit 0
for f in "$d"/*.json; do [ -f "$f" ] && cat "$f"; done | base64`,
        options.signal,
        "snapshots.list",
      );
      if (result.exitCode !== 0) {
        throw fileError({ provider: ctx.provider, operation: "snapshots.list", path: store }, result);
      }
      const refs: SnapshotRef[] = [];
      for (const line of new TextDecoder().decode(decodeBase64(result.stdout)).split("\n")) {
        if (line.trim() === "") continue;
        let entry: { id?: unknown; name?: unknown; createdAt?: unknown };
        try {
          entry = JSON.parse(line) as typeof entry;
        } catch (cause) {
          throw new SandboxError("Provider", `snapshots.list: the snapshot index in ${store} is corrupted`, {
            provider: ctx.provider,
            cause,
          });
        }
        if (typeof entry.id !== "string" || typeof entry.createdAt !== "string") continue;
        const ref: SnapshotRef = { id: entry.id, createdAt: new Date(entry.createdAt) };
        if (typeof entry.name === "string") ref.name = entry.name;
        refs.push(ref);
      }
      return refs.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1));
    },

    async doDeleteSnapshot(sandbox, ref, options) {
      const store = storeOf(sandbox);
      const id = idOf(ref, "snapshots.delete");
      const base = `${store}/${id}`;
      const result = await run(
        sandbox,
        `[ -f ${shellQuote(`${base}.tar`)} ] || exit ${FILE_EXIT.notFound}
rm -f ${shellQuote(`${base}.tar`)} ${shellQuote(`${base}.json`)}`,
        options.signal,
        "snapshots.delete",
      );
      if (result.exitCode === FILE_EXIT.notFound) throw unknown(ref, "snapshots.delete");
      if (result.exitCode !== 0) {
        throw fileError({ provider: ctx.provider, operation: "snapshots.delete", path: base }, result);
      }
    },
  };
}
