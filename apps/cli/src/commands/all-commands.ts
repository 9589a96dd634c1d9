import { capsCommand } from "./caps.js";
import type { CommandDefinition } from "./command-definition.js";
import { cpCommand } from "./cp.js";
import { createCommand } from "./create.js";
import { doctorCommand } from "./doctor.js";
import { emulateCommand } from "./emulate.js";
import { execCommand } from "./exec.js";
import { infoCommand } from "./info.js";
import { killCommand } from "./kill.js";
import { logsCommand } from "./logs.js";
import { lsCommand } from "./ls.js";
import { mcpCommand } from "./mcp.js";
import { pauseCommand } from "./pause.js";
import { portCommand } from "./port.js";
import { psCommand } from "./ps.js";
import { reapCommand } from "./reap.js";
import { resumeCommand } from "./resume.js";
import { rmCommand } from "./rm.js";
import { runCommand } from "./run.js";
import { shellCommand } from "./shell.js";
import { stopCommand } from "./stop.js";
import { ttlCommand } from "./ttl.js";

/**
 * Every command, in the order `sbox --help` lists them. A new command is one file under `commands/`
 * exporting a {@link CommandDefinition}, plus one line here.
 */
export const ALL_COMMANDS: readonly CommandDefinition[] = [
  runCommand,
  createCommand,
  execCommand,
  shellCommand,
  cpCommand,
  lsCommand,
  infoCommand,
  logsCommand,
  psCommand,
  killCommand,
  stopCommand,
  resumeCommand,
  pauseCommand,
  ttlCommand,
  rmCommand,
  reapCommand,
  portCommand,
  capsCommand,
  doctorCommand,
  emulateCommand,
  mcpCommand,
];

/** Alternative names accepted on the command line. */
export const COMMAND_ALIASES: Readonly<Record<string, string>> = {
  list: "ls",
  remove: "rm",
  destroy: "rm",
  capabilities: "caps",
  inspect: "info",
};
