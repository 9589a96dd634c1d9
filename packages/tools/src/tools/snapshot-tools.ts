import { SandboxError, type SnapshotRef } from "@sbox/core";
import { z } from "zod";
import type { ToolContext, ToolDefinition } from "./tool-definition.js";
import type { CreateSnapshotInput, NoInput, RestoreSnapshotInput } from "./tool-inputs.js";

function snapshotsOf(context: ToolContext) {
  const { sandbox } = context;
  if (!sandbox.can("snapshot")) throw new SandboxError("NotSupported", "snapshots are not supported here");
  return sandbox.snapshots;
}

function describe(ref: SnapshotRef): string {
  return `${ref.id}${ref.name ? ` "${ref.name}"` : ""} (${ref.createdAt.toISOString()})`;
}

const empty = () => z.strictObject({}) as unknown as z.ZodType<NoInput>;

/** `create_snapshot`. */
export const createSnapshotTool: ToolDefinition<"create_snapshot"> = {
  name: "create_snapshot",
  description: () => "Save a snapshot of the sandbox now, to restore later with restore_snapshot.",
  schema: () =>
    z.strictObject({
      name: z.string().min(1).max(200).optional().describe("A name to recognise it by."),
    }) as z.ZodType<CreateSnapshotInput>,
  async run(input, context) {
    const ref = await snapshotsOf(context).create(input.name === undefined ? {} : { name: input.name });
    return { text: `Created snapshot ${describe(ref)}.`, data: { id: ref.id, name: ref.name } };
  },
};

/** `list_snapshots`. */
export const listSnapshotsTool: ToolDefinition<"list_snapshots"> = {
  name: "list_snapshots",
  description: () => "List the snapshots of the sandbox.",
  schema: empty,
  async run(_input, context) {
    const refs = await snapshotsOf(context).list();
    return {
      text: refs.length === 0 ? "No snapshots." : refs.map(describe).join("\n"),
      data: refs.map((ref) => ({ id: ref.id, name: ref.name, createdAt: ref.createdAt.toISOString() })),
    };
  },
};

/** `restore_snapshot`. */
export const restoreSnapshotTool: ToolDefinition<"restore_snapshot"> = {
  name: "restore_snapshot",
  description: () =>
    "Restore the sandbox to a snapshot (by id from list_snapshots). Everything changed since is lost.",
  schema: () =>
    z.strictObject({ id: z.string().min(1).describe("The snapshot id.") }) as z.ZodType<RestoreSnapshotInput>,
  async run(input, context) {
    const snapshots = snapshotsOf(context);
    const ref = (await snapshots.list()).find((candidate) => candidate.id === input.id);
    if (!ref) throw new SandboxError("NotFound", `no snapshot with id ${input.id}`);
    await snapshots.restore(ref);
    return { text: `Restored snapshot ${describe(ref)}.`, data: { id: ref.id } };
  },
};
