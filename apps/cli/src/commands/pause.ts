import type { CommandDefinition } from "./command-definition.js";
import { stateChangeCommand } from "./state-change-command.js";

/** `sbox pause ID...`: pause sandboxes (freeze processes; resume continues them). */
export const pauseCommand: CommandDefinition = stateChangeCommand(
  "pause",
  "pause sandboxes (freeze processes; resume continues them)",
  "pausing",
);
