import { z } from "zod";
import type { ToolDefinition } from "./tool-definition.js";
import type { ExtendTimeoutInput, NoInput } from "./tool-inputs.js";

const empty = () => z.strictObject({}) as unknown as z.ZodType<NoInput>;

/** `extend_timeout`: the sandbox's remaining time to live. */
export const extendTimeoutTool: ToolDefinition<"extend_timeout"> = {
  name: "extend_timeout",
  description: () =>
    "Set how long the sandbox stays alive from now, in milliseconds, when a task needs more time.",
  schema: () =>
    z.strictObject({
      timeoutMs: z
        .number()
        .int()
        .min(1000)
        .max(7 * 24 * 3600 * 1000)
        .describe("Time to live from now, in ms."),
    }) as z.ZodType<ExtendTimeoutInput>,
  async run(input, context) {
    await context.sandbox.setTimeout(input.timeoutMs);
    return {
      text: `The sandbox now lives ${input.timeoutMs} ms from now.`,
      data: { timeoutMs: input.timeoutMs },
    };
  },
};

/** `pause_sandbox`. */
export const pauseSandboxTool: ToolDefinition<"pause_sandbox"> = {
  name: "pause_sandbox",
  description: () => "Pause the sandbox (its processes freeze). Nothing runs until resume_sandbox.",
  schema: empty,
  async run(_input, context) {
    await context.sandbox.pause();
    return { text: "The sandbox is paused; call resume_sandbox to continue." };
  },
};

/** `resume_sandbox`. */
export const resumeSandboxTool: ToolDefinition<"resume_sandbox"> = {
  name: "resume_sandbox",
  description: () => "Resume a paused sandbox.",
  schema: empty,
  async run(_input, context) {
    await context.sandbox.resume();
    return { text: "The sandbox is running again." };
  },
};

/** `stop_sandbox`. */
export const stopSandboxTool: ToolDefinition<"stop_sandbox"> = {
  name: "stop_sandbox",
  description: () => "Stop the sandbox: every process ends. Use it only when the work is finished.",
  schema: empty,
  async run(_input, context) {
    await context.sandbox.stop();
    return { text: "The sandbox is stopped." };
  },
};
