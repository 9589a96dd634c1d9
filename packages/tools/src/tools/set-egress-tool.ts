import { type EgressPolicy, SandboxError } from "@sbox/core";
import { z } from "zod";
import type { ToolDefinition } from "./tool-definition.js";
import type { SetEgressInput } from "./tool-inputs.js";

/** `set_egress`: outbound network access of the sandbox. */
export const setEgressTool: ToolDefinition<"set_egress"> = {
  name: "set_egress",
  description: () =>
    'Change the sandbox\'s outbound network access: "block-all", "allow-all", or "allow-list" with the hosts or CIDRs in allow.',
  schema: () =>
    z
      .strictObject({
        mode: z.enum(["allow-all", "block-all", "allow-list"]).describe("The new policy."),
        allow: z
          .array(z.string().min(1).max(253))
          .max(256)
          .optional()
          .describe('Hosts or CIDRs for "allow-list".'),
      })
      .refine((input) => input.mode !== "allow-list" || (input.allow?.length ?? 0) > 0, {
        message: 'mode "allow-list" needs at least one entry in allow',
      }) as z.ZodType<SetEgressInput>,
  async run(input, context) {
    const { sandbox } = context;
    if (!sandbox.can("egressControl"))
      throw new SandboxError("NotSupported", "egress control is not supported here");
    const policy: EgressPolicy = input.mode === "allow-list" ? { allow: input.allow ?? [] } : input.mode;
    await sandbox.network.setEgress(policy);
    return {
      text: `Outbound network access is now ${input.mode === "allow-list" ? `allowed to ${(input.allow ?? []).join(", ")}` : input.mode}.`,
    };
  },
};
