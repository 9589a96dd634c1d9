import type { CommandDefinition } from "./command-definition.js";
import { stateChangeCommand } from "./state-change-command.js";

/** `sbox stop ID...`: stop sandboxes (compute off, files kept where the provider keeps them). */
export const stopCommand: CommandDefinition = stateChangeCommand(
  "stop",
  "stop sandboxes (compute off, files kept where the provider keeps them)",
  "stopping",
);
