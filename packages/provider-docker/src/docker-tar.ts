/**
 * The small part of the tar format the archive API needs: headers for one file going in, and a
 * streaming reader for the first entry coming out. ustar headers, with a PAX record when a name is longer
 * than 100 bytes or a size does not fit the 11-digit octal field. Bodies are never buffered whole.
 */

const BLOCK = 512;
/** Two zero blocks end an archive. */
export const TAR_END: Buffer = Buffer.alloc(BLOCK * 2);

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, "0")}\0`;
}

function rawHeader(name: Buffer, size: number, mode: number, mtime: number, type: string): Buffer {
  const header = Buffer.alloc(BLOCK);
  name.copy(header, 0, 0, Math.min(name.length, 100));
  header.write(octal(mode & 0o7777, 8), 100, "ascii");
  header.write(octal(0, 8), 108, "ascii");
  header.write(octal(0, 8), 116, "ascii");
  header.write(octal(size, 12), 124, "ascii");
  header.write(octal(Math.floor(mtime / 1000), 12), 136, "ascii");
  header.write("        ", 148, "ascii");
  header.write(type, 156, "ascii");
  header.write("ustar\0", 257, "ascii");
  header.write("00", 263, "ascii");
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "ascii");
  return header;
}

function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  let length = Buffer.byteLength(body) + 1;
  while (String(length).length + Buffer.byteLength(body) !== length)
    length = String(length).length + Buffer.byteLength(body);
  return Buffer.from(`${length}${body}`, "utf8");
}

/** Zero bytes that pad an entry of `size` bytes to a whole block. */
export function tarPadding(size: number): Buffer {
  const rest = size % BLOCK;
  return rest === 0 ? Buffer.alloc(0) : Buffer.alloc(BLOCK - rest);
}

/** The header block(s) of one regular file: a PAX record first when the name or size needs one. */
export function tarFileHeader(name: string, size: number, mode: number, mtime: number = Date.now()): Buffer {
  const nameBytes = Buffer.from(name, "utf8");
  const records: Buffer[] = [];
  if (nameBytes.length > 100) records.push(paxRecord("path", name));
  if (size > 0o77777777777) records.push(paxRecord("size", String(size)));
  const main = rawHeader(
    nameBytes.length > 100 ? Buffer.from("sbox-long-name") : nameBytes,
    size > 0o77777777777 ? 0 : size,
    mode,
    mtime,
    "0",
  );
  if (records.length === 0) return main;
  const pax = Buffer.concat(records);
  return Buffer.concat([
    rawHeader(Buffer.from("PaxHeader"), pax.length, 0o644, mtime, "x"),
    pax,
    tarPadding(pax.length),
    main,
  ]);
}

/** The header of the first real entry of an archive. */
export interface TarEntry {
  name: string;
  /** `"0"` file, `"5"` dir, `"2"` symlink, `"1"` hard link... */
  type: string;
  size: number;
  mode: number;
  linkName: string;
  mtime: Date;
}

function parseNumber(field: Buffer): number {
  // Base-256 (GNU) for values that do not fit octal.
  if ((field[0] ?? 0) & 0x80) {
    let value = 0;
    for (let i = 1; i < field.length; i++) value = value * 256 + (field[i] ?? 0);
    return value;
  }
  const text = field.toString("ascii").replace(/\0.*$/s, "").trim();
  return text === "" ? 0 : Number.parseInt(text, 8);
}

function cString(field: Buffer): string {
  const end = field.indexOf(0);
  return field.subarray(0, end === -1 ? field.length : end).toString("utf8");
}

/**
 * Reads the first entry of a tar stream: {@link header} skips PAX and GNU long-name records and returns
 * the entry; {@link body} then yields exactly its bytes as they arrive.
 */
export class TarFirstEntryReader {
  private readonly source: AsyncIterator<Buffer>;
  private pending: Buffer = Buffer.alloc(0);
  private entry: TarEntry | undefined;

  constructor(source: AsyncIterable<Buffer>) {
    this.source = source[Symbol.asyncIterator]();
  }

  private async fill(bytes: number): Promise<boolean> {
    while (this.pending.length < bytes) {
      const next = await this.source.next();
      if (next.done) return false;
      this.pending = this.pending.length === 0 ? next.value : Buffer.concat([this.pending, next.value]);
    }
    return true;
  }

  private take(bytes: number): Buffer {
    const out = this.pending.subarray(0, bytes);
    this.pending = this.pending.subarray(bytes);
    return out;
  }

  private async readExactly(bytes: number): Promise<Buffer> {
    if (!(await this.fill(bytes))) throw new Error("tar stream ended early");
    return Buffer.from(this.take(bytes));
  }

  /** The first real entry, or undefined for an empty archive. */
  async header(): Promise<TarEntry | undefined> {
    let paxPath: string | undefined;
    let paxSize: number | undefined;
    let longName: string | undefined;
    for (;;) {
      if (!(await this.fill(BLOCK))) return undefined;
      const block = this.take(BLOCK);
      if (block.every((byte) => byte === 0)) return undefined;
      const type = String.fromCharCode(block[156] || 48);
      const size = parseNumber(block.subarray(124, 136));
      if (type === "x" || type === "g" || type === "L" || type === "K") {
        const data = await this.readExactly(size);
        await this.readExactly(tarPadding(size).length);
        if (type === "x") {
          let offset = 0;
          while (offset < data.length) {
            const space = data.indexOf(0x20, offset);
            if (space < 0) break;
            const length = Number.parseInt(data.subarray(offset, space).toString("ascii"), 10);
            if (!(length > 0)) break;
            const record = data.subarray(space + 1, offset + length - 1).toString("utf8");
            const eq = record.indexOf("=");
            const key = record.slice(0, eq);
            const value = record.slice(eq + 1);
            if (key === "path") paxPath = value;
            if (key === "size") paxSize = Number(value);
            offset += length;
          }
        } else if (type === "L") {
          longName = cString(data);
        }
        continue;
      }
      const prefix = cString(block.subarray(345, 500));
      const name =
        paxPath ??
        longName ??
        (prefix ? `${prefix}/${cString(block.subarray(0, 100))}` : cString(block.subarray(0, 100)));
      this.entry = {
        name,
        type,
        size: paxSize ?? size,
        mode: parseNumber(block.subarray(100, 108)),
        linkName: cString(block.subarray(157, 257)),
        mtime: new Date(parseNumber(block.subarray(136, 148)) * 1000),
      };
      return this.entry;
    }
  }

  /** Yields the body of the entry returned by {@link header}, chunk by chunk as it arrives. */
  async *body(): AsyncGenerator<Buffer> {
    let remaining = this.entry?.type === "0" || this.entry?.type === "7" ? this.entry.size : 0;
    if (remaining > 0 && this.pending.length > 0) {
      const head = this.take(Math.min(remaining, this.pending.length));
      remaining -= head.length;
      yield head;
    }
    while (remaining > 0) {
      const next = await this.source.next();
      if (next.done) throw new Error("tar stream ended inside the file");
      const chunk = next.value;
      if (chunk.length <= remaining) {
        remaining -= chunk.length;
        yield chunk;
      } else {
        this.pending = chunk.subarray(remaining);
        const head = chunk.subarray(0, remaining);
        remaining = 0;
        yield head;
      }
    }
  }

  /** Stops reading the source (closes the connection). */
  async close(): Promise<void> {
    await this.source.return?.();
  }
}
