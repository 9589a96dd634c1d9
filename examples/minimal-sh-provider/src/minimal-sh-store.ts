import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { SandboxError } from "@sbox/core/spec";

/** What the provider keeps about one sandbox, next to its directory, so any provider instance can find it. */
export interface MinimalShRecord {
  id: string;
  /** The sandbox's working directory. */
  dir: string;
  env: Record<string, string>;
  metadata: Record<string, string>;
  createdAt: string;
  /** When `setTimeout` said the sandbox's time runs out (ISO); `client.reap()` destroys it after that. */
  expiresAt?: string | undefined;
}

const ID = /^[a-f0-9]{16}$/;

/** The on-disk registry of sandboxes under one root directory: `<root>/<id>/` plus `<root>/<id>.json`. */
export class MinimalShStore {
  constructor(readonly root: string) {}

  /** Validates an id before it becomes part of a path: an id such as `../x` must not escape the root. */
  private recordPath(id: string): string {
    if (!ID.test(id)) throw new SandboxError("NotFound", `no sandbox ${JSON.stringify(id)}`);
    return join(this.root, `${id}.json`);
  }

  async create(record: Omit<MinimalShRecord, "dir">): Promise<MinimalShRecord> {
    const full = { ...record, dir: join(this.root, record.id) };
    await mkdir(full.dir, { recursive: true });
    await writeFile(this.recordPath(record.id), JSON.stringify(full));
    return full;
  }

  /** Replaces the record of an existing sandbox; `NotFound` when there is none. */
  async update(id: string, change: (record: MinimalShRecord) => MinimalShRecord): Promise<MinimalShRecord> {
    const next = change(await this.read(id));
    await writeFile(this.recordPath(id), JSON.stringify(next));
    return next;
  }

  /** Reads a record; `NotFound` when there is none. */
  async read(id: string): Promise<MinimalShRecord> {
    try {
      return JSON.parse(await readFile(this.recordPath(id), "utf8")) as MinimalShRecord;
    } catch (error) {
      // Named rather than left to the core's ENOENT mapping, so the message shows the id, not a host path.
      if ((error as { code?: unknown }).code === "ENOENT") {
        throw new SandboxError("NotFound", `no sandbox ${id}`, { cause: error });
      }
      throw error;
    }
  }

  async remove(id: string): Promise<void> {
    await rm(join(this.root, id), { recursive: true, force: true });
    await rm(this.recordPath(id), { force: true });
  }

  async *list(): AsyncGenerator<MinimalShRecord> {
    let names: string[];
    try {
      names = await readdir(this.root);
    } catch {
      return;
    }
    for (const name of names) {
      if (!name.endsWith(".json") || !ID.test(name.slice(0, -5))) continue;
      try {
        yield await this.read(name.slice(0, -5));
      } catch {
        // Destroyed between readdir and read: not listed.
      }
    }
  }
}
