/** The input of each tool, as the model sends it (after validation). */

/** `run_command`. */
export interface RunCommandInput {
  command: string;
  cwd?: string | undefined;
  env?: Record<string, string> | undefined;
  timeoutMs?: number | undefined;
  background?: boolean | undefined;
}
/** `run_code`. */
export interface RunCodeInput {
  code: string;
  language?: string | undefined;
}
/** `read_file`. */
export interface ReadFileInput {
  path: string;
  startLine?: number | undefined;
  endLine?: number | undefined;
}
/** `write_file`. */
export interface WriteFileInput {
  path: string;
  content: string;
}
/** `edit_file`. */
export interface EditFileInput {
  path: string;
  oldString: string;
  newString: string;
  replaceAll?: boolean | undefined;
}
/** `list_files`. */
export interface ListFilesInput {
  path?: string | undefined;
  depth?: number | undefined;
}
/** `search_files`. */
export interface SearchFilesInput {
  pattern: string;
  path?: string | undefined;
  glob?: string | undefined;
  ignoreCase?: boolean | undefined;
  literal?: boolean | undefined;
}
/** `remove_file`. */
export interface RemoveFileInput {
  path: string;
  recursive?: boolean | undefined;
}
/** `expose_port`. */
export interface ExposePortInput {
  port: number;
  private?: boolean | undefined;
}
/** `create_snapshot`. */
export interface CreateSnapshotInput {
  name?: string | undefined;
}
/** `restore_snapshot`. */
export interface RestoreSnapshotInput {
  id: string;
}
/** `extend_timeout`. */
export interface ExtendTimeoutInput {
  timeoutMs: number;
}
/** `set_egress`. */
export interface SetEgressInput {
  mode: "allow-all" | "block-all" | "allow-list";
  allow?: string[] | undefined;
}
/** Tools that take no input. */
export type NoInput = Record<string, never>;

/** Input type per tool name. */
export interface ToolInputs {
  run_command: RunCommandInput;
  run_code: RunCodeInput;
  read_file: ReadFileInput;
  write_file: WriteFileInput;
  edit_file: EditFileInput;
  list_files: ListFilesInput;
  search_files: SearchFilesInput;
  remove_file: RemoveFileInput;
  expose_port: ExposePortInput;
  create_snapshot: CreateSnapshotInput;
  list_snapshots: NoInput;
  restore_snapshot: RestoreSnapshotInput;
  extend_timeout: ExtendTimeoutInput;
  pause_sandbox: NoInput;
  resume_sandbox: NoInput;
  stop_sandbox: NoInput;
  set_egress: SetEgressInput;
}
