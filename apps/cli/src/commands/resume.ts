import type { CommandDefinition } from "./command-definition.js";
import { stateChangeCommand } from "./state-change-command.js";

/** `sbox resume ID...`: resume stopped or paused sandboxes. */
export const resumeCommand: CommandDefinition = stateChangeCommand(
  "resume",
  "resume stopped or paused sandboxes",
  "resuming",
);
