import type { SandboxInfo } from "@sbox/core";
import type { ReconcileReport, StopExpiredResult } from "@sbox/manager";
import { expectNoCommand, expectPositionals } from "../args/positionals.js";
import { formatErrorLine } from "../output/error-line.js";
import { managerFor } from "../records/record-operations.js";
import type { CommandDefinition } from "./command-definition.js";
import { printSandboxes } from "./ls.js";
import { infoToJson } from "./sandbox-json.js";

/** `sbox reap`: stops (or destroys) sandboxes whose time to live has passed, and settles records. */
export const reapCommand: CommandDefinition = {
  name: "reap",
  summary: "stop or destroy sandboxes whose time to live has passed; settle records",
  usage: ["sbox reap [--json]"],
  details:
    "Runs client.reap() for the provider: sandboxes past their ttl are stopped (destroyed where stop is\n" +
    "unsupported). Where sandboxes are recorded (@sbox/manager) it also runs stopExpired() and reconcile()\n" +
    "over the records of every installed provider. Prints what was reaped. Safe to run from cron.",
  options: {},
  examples: ["sbox reap", "sbox reap -p docker --json"],
  async run(context, args) {
    expectPositionals(args, "reap", [], { max: 0 });
    expectNoCommand(args, "reap");
    const client = await context.client();
    const reaped: SandboxInfo[] = await context.waitFor("reaping expired sandboxes", () => client.reap());
    let expired: StopExpiredResult | undefined;
    let reconciled: ReconcileReport | undefined;
    const records = await context.records();
    if (records) {
      const providers = [context.providerName, ...(await records.list()).map((record) => record.provider)];
      const manager = await managerFor(context, providers);
      if (manager) {
        expired = await context.waitFor("stopping expired records", () => manager.stopExpired());
        reconciled = await context.waitFor("reconciling records", () => manager.reconcile());
      }
    }
    if (context.json) {
      context.printJson({
        reaped: reaped.map((info) => infoToJson(info)),
        records: expired
          ? {
              stopped: expired.stopped.map((record) => record.sandboxId),
              destroyed: expired.destroyed.map((record) => record.sandboxId),
              failed: expired.failed.map(({ id, error }) => ({
                id,
                code: error.code,
                message: error.message,
              })),
              reconciled: reconciled
                ? {
                    settled: reconciled.settled,
                    aligned: reconciled.aligned,
                    adopted: reconciled.adopted,
                    destroyed: reconciled.destroyed,
                    errors: reconciled.errors.map(({ id, error }) => ({
                      id,
                      code: error.code,
                      message: error.message,
                    })),
                  }
                : null,
            }
          : null,
      });
      return 0;
    }
    const recordLines: string[] = [];
    for (const record of expired?.stopped ?? [])
      recordLines.push(`stopped ${record.sandboxId} (record ${record.id})`);
    for (const record of expired?.destroyed ?? [])
      recordLines.push(`destroyed ${record.sandboxId} (record ${record.id})`);
    for (const change of [...(reconciled?.settled ?? []), ...(reconciled?.aligned ?? [])]) {
      recordLines.push(`record ${change.id}: ${change.from} -> ${change.to} (${change.detail})`);
    }
    for (const adopted of reconciled?.adopted ?? [])
      recordLines.push(`adopted ${adopted.sandboxId} as ${adopted.id}`);
    for (const destroyed of reconciled?.destroyed ?? []) {
      recordLines.push(`destroyed ${destroyed.sandboxId} (${destroyed.reason})`);
    }
    if (reaped.length > 0) printSandboxes(context, reaped);
    if (recordLines.length > 0) context.print(`${recordLines.join("\n")}\n`);
    for (const failure of [...(expired?.failed ?? []), ...(reconciled?.errors ?? [])]) {
      context.io.stderr.write(formatErrorLine(failure.error, { colours: context.err, debug: context.debug }));
    }
    if (reaped.length === 0 && recordLines.length === 0) context.note(context.err.dim("nothing expired"));
    return 0;
  },
};
