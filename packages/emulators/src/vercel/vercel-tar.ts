/**
 * The body of `POST /v2/sandboxes/sessions/:id/fs/write`: a gzipped tar stream (the SDK packs it with
 * tar-stream, ustar headers, pax `path` records for long names). Read here without a dependency: ustar,
 * pax (`x`, `g`) and GNU long names (`L`, `K`). Anything else is refused with a clear message rather than
 * written wrongly.
 */
import { gunzipSync } from "node:zlib";

/** One entry of the archive. */
export interface TarEntry {
  readonly name: string;
  readonly type: "file" | "dir" | "symlink";
  readonly mode: number;
  readonly data: Uint8Array;
  readonly linkname?: string | undefined;
}

/** The archive cannot be read (the route answers 400 with `message`). */
export class TarFormatError extends Error {}

const BLOCK = 512;

function text(block: Uint8Array, start: number, length: number): string {
  const slice = block.subarray(start, start + length);
  const end = slice.indexOf(0);
  return Buffer.from(end < 0 ? slice : slice.subarray(0, end)).toString("utf8");
}

function octal(block: Uint8Array, start: number, length: number): number {
  const raw = text(block, start, length).trim();
  if (raw === "") return 0;
  if (!/^[0-7]+$/.test(raw))
    throw new TarFormatError(`bad octal field ${JSON.stringify(raw)} in a tar header`);
  return Number.parseInt(raw, 8);
}

function paxRecords(data: Uint8Array): Record<string, string> {
  const out: Record<string, string> = {};
  const buffer = Buffer.from(data);
  let at = 0;
  while (at < buffer.length) {
    const space = buffer.indexOf(0x20, at);
    if (space < 0) break;
    const length = Number.parseInt(buffer.subarray(at, space).toString("ascii"), 10);
    if (!Number.isFinite(length) || length <= 0) throw new TarFormatError("bad pax record length");
    const record = buffer.subarray(space + 1, at + length - 1).toString("utf8");
    const eq = record.indexOf("=");
    if (eq > 0) out[record.slice(0, eq)] = record.slice(eq + 1);
    at += length;
  }
  return out;
}

/** Reads a gzipped (or plain) tar archive. */
export function readTarGz(body: Uint8Array): TarEntry[] {
  let tar: Uint8Array;
  try {
    tar = body[0] === 0x1f && body[1] === 0x8b ? gunzipSync(body) : body;
  } catch (error) {
    throw new TarFormatError(
      `the body is not valid gzip: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const entries: TarEntry[] = [];
  let at = 0;
  let pax: Record<string, string> = {};
  let longName: string | undefined;
  let longLink: string | undefined;
  while (at + BLOCK <= tar.length) {
    const header = tar.subarray(at, at + BLOCK);
    if (header.every((byte) => byte === 0)) break;
    const size = octal(header, 124, 12);
    const typeflag = String.fromCharCode(header[156] ?? 0);
    const data = tar.subarray(at + BLOCK, at + BLOCK + size);
    if (data.length < size) throw new TarFormatError("the tar archive is truncated");
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    if (typeflag === "x") {
      pax = { ...pax, ...paxRecords(data) };
      continue;
    }
    if (typeflag === "g") continue;
    if (typeflag === "L" || typeflag === "K") {
      const value = text(data, 0, data.length);
      if (typeflag === "L") longName = value;
      else longLink = value;
      continue;
    }
    const prefix = text(header, 345, 155);
    const base = text(header, 0, 100);
    const name = pax.path ?? longName ?? (prefix ? `${prefix}/${base}` : base);
    const linkname = pax.linkpath ?? longLink ?? text(header, 157, 100);
    pax = {};
    longName = undefined;
    longLink = undefined;
    const mode = octal(header, 100, 8) & 0o7777;
    if (typeflag === "0" || typeflag === "\0" || typeflag === "7") {
      entries.push({ name, type: "file", mode, data: new Uint8Array(data) });
    } else if (typeflag === "5") {
      entries.push({ name, type: "dir", mode, data: new Uint8Array() });
    } else if (typeflag === "2") {
      entries.push({ name, type: "symlink", mode, data: new Uint8Array(), linkname });
    } else {
      throw new TarFormatError(
        `unsupported tar entry type ${JSON.stringify(typeflag)} for ${JSON.stringify(name)}`,
      );
    }
  }
  return entries;
}
