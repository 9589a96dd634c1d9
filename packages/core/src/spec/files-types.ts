/** The kind of a directory entry; symlinks are reported as symlinks, never followed. */
export type FileType = "file" | "dir" | "symlink" | "other";

/** Metadata of one path. */
export interface FileInfo {
  /** The base name. */
  name: string;
  /** The absolute path inside the sandbox. */
  path: string;
  /** The entry kind (of the link itself for symlinks). */
  type: FileType;
  /** Size in bytes. */
  size: number;
  /** Last modification time, when the provider reports it. */
  mtime?: Date | undefined;
  /** Permission bits (e.g. 0o644), when the provider reports them. */
  mode?: number | undefined;
}

/** One entry of `files.list()`. */
export type DirEntry = FileInfo;

/** A change seen by `files.watch()`. */
export interface WatchEvent {
  /** What happened. */
  type: "create" | "modify" | "delete";
  /** The absolute path that changed. */
  path: string;
}
