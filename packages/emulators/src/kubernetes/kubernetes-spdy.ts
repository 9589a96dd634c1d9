/**
 * The server side of SPDY/3.1 as Kubernetes streaming uses it (moby/spdystream in kubectl and client-go):
 * the client opens streams with SYN_STREAM (headers such as `streamType`, `port`, `requestID`), the server
 * answers each with SYN_REPLY before any data, both sides send DATA frames and half-close with FIN, RST_STREAM
 * aborts a stream, PING is echoed, GOAWAY ends the session. Header blocks are zlib-compressed with the
 * SPDY/3 dictionary, one compression context per direction for the whole session (so every header block
 * is inflated in order, even of frames that are otherwise ignored). Flow control (SETTINGS, WINDOW_UPDATE)
 * is read and ignored, as spdystream does. The bytes come from a raw upgraded socket or, for
 * `SPDY/3.1+portforward.k8s.io`, from WebSocket binary messages (kubectl's port-forward tunnel).
 */
import { constants, createDeflate, createInflate, type Deflate, type Inflate } from "node:zlib";
import { SPDY_HEADER_DICTIONARY } from "./kubernetes-spdy-dictionary.js";

/** Where the session's bytes go. */
export interface SpdyTransport {
  /** Sends bytes; resolves when the transport can take more. */
  write(bytes: Buffer): Promise<void>;
  /** Ends the connection. */
  close(): void;
}

const CONTROL = 0x8000;
const VERSION = 3;
const SYN_STREAM = 1;
const SYN_REPLY = 2;
const RST_STREAM = 3;
const PING = 6;
const GOAWAY = 7;
const HEADERS = 8;
const FLAG_FIN = 0x01;
/** RST_STREAM status codes. */
export const SPDY_RST = {
  PROTOCOL_ERROR: 1,
  INVALID_STREAM: 2,
  REFUSED_STREAM: 3,
  CANCEL: 5,
  INTERNAL_ERROR: 6,
} as const;
/** Largest DATA payload sent in one frame. */
const MAX_DATA = 32 * 1024;

/** One stream the client opened. */
export class SpdyStream {
  private dataListener: ((chunk: Buffer) => void) | undefined;
  private endListener: (() => void) | undefined;
  private early: Buffer[] = [];
  private remoteEnded = false;
  private localEnded = false;
  private reset = false;
  private readonly closeListeners = new Set<() => void>();

  constructor(
    readonly id: number,
    /** Header names lowercased; multiple values joined with NUL as on the wire. */
    readonly headers: Readonly<Record<string, string>>,
    private readonly session: SpdySession,
  ) {}

  /** Receives the stream's data (buffered until a listener is set). */
  onData(listener: (chunk: Buffer) => void): void {
    this.dataListener = listener;
    for (const chunk of this.early.splice(0)) listener(chunk);
  }

  /** Called once the client half-closed (or immediately if it already did). */
  onEnd(listener: () => void): void {
    this.endListener = listener;
    if (this.remoteEnded) listener();
  }

  /** Called when the stream is reset or the session ends. */
  onClose(listener: () => void): void {
    this.closeListeners.add(listener);
  }

  /** Whether the client half-closed its side. */
  get ended(): boolean {
    return this.remoteEnded;
  }

  /** @internal */
  deliver(chunk: Buffer): void {
    if (this.reset || chunk.length === 0) return;
    if (this.dataListener) this.dataListener(chunk);
    else this.early.push(chunk);
  }

  /** @internal */
  remoteEnd(): void {
    if (this.remoteEnded) return;
    this.remoteEnded = true;
    this.endListener?.();
  }

  /** @internal */
  closed(): void {
    if (this.reset) return;
    this.reset = true;
    for (const listener of this.closeListeners) listener();
  }

  /** Sends data on the stream. */
  async write(data: Uint8Array): Promise<void> {
    if (this.localEnded || this.reset) return;
    const bytes = Buffer.from(data);
    for (let at = 0; at < bytes.length; at += MAX_DATA) {
      await this.session.sendData(this.id, bytes.subarray(at, at + MAX_DATA), false);
    }
  }

  /** Half-closes the server's side. */
  async end(): Promise<void> {
    if (this.localEnded || this.reset) return;
    this.localEnded = true;
    await this.session.sendData(this.id, Buffer.alloc(0), true);
  }

  /** Aborts the stream. */
  async abort(status: number = SPDY_RST.CANCEL): Promise<void> {
    if (this.reset) return;
    this.closed();
    await this.session.sendReset(this.id, status);
  }
}

/** A SPDY/3.1 server session over one transport. */
export class SpdySession {
  private buffer: Buffer = Buffer.alloc(0);
  private readonly inflater: Inflate = createInflate({ dictionary: SPDY_HEADER_DICTIONARY });
  private readonly deflater: Deflate = createDeflate({ dictionary: SPDY_HEADER_DICTIONARY });
  private readonly streams = new Map<number, SpdyStream>();
  private queue: Promise<void> = Promise.resolve();
  private writes: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly closeListeners = new Set<() => void>();

  constructor(
    private readonly transport: SpdyTransport,
    private readonly onStream: (stream: SpdyStream) => void,
  ) {
    this.inflater.on("error", () => this.close());
    this.deflater.on("error", () => this.close());
  }

  /** Called once the session is over. */
  onClose(listener: () => void): void {
    this.closeListeners.add(listener);
  }

  /** Feeds bytes received from the client. */
  receive(bytes: Buffer): void {
    if (this.closed) return;
    this.buffer = this.buffer.length === 0 ? bytes : Buffer.concat([this.buffer, bytes]);
    while (this.buffer.length >= 8) {
      const length = this.buffer.readUIntBE(5, 3);
      if (this.buffer.length < 8 + length) break;
      const frame = this.buffer.subarray(0, 8 + length);
      this.buffer = this.buffer.subarray(8 + length);
      this.queue = this.queue.then(() => this.handle(frame)).catch(() => this.close());
    }
  }

  private inflate(block: Buffer): Promise<Buffer> {
    return this.zlibRound(this.inflater, block);
  }

  private deflate(block: Buffer): Promise<Buffer> {
    return this.zlibRound(this.deflater, block);
  }

  private zlibRound(stream: Inflate | Deflate, input: Buffer): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const out: Buffer[] = [];
      const onData = (chunk: Buffer) => out.push(chunk);
      stream.on("data", onData);
      stream.write(input, (error) => {
        if (error) {
          stream.off("data", onData);
          reject(error);
          return;
        }
        stream.flush(constants.Z_SYNC_FLUSH, () => {
          stream.off("data", onData);
          resolve(Buffer.concat(out));
        });
      });
    });
  }

  private parseHeaders(block: Buffer): Record<string, string> {
    const headers: Record<string, string> = {};
    let at = 4;
    const count = block.readUInt32BE(0);
    for (let i = 0; i < count; i++) {
      const nameLength = block.readUInt32BE(at);
      const name = block
        .subarray(at + 4, at + 4 + nameLength)
        .toString("latin1")
        .toLowerCase();
      at += 4 + nameLength;
      const valueLength = block.readUInt32BE(at);
      headers[name] = block.subarray(at + 4, at + 4 + valueLength).toString("latin1");
      at += 4 + valueLength;
    }
    return headers;
  }

  private async handle(frame: Buffer): Promise<void> {
    const first = frame.readUInt16BE(0);
    const flags = frame[4]!;
    const body = frame.subarray(8);
    if ((first & CONTROL) === 0) {
      const id = frame.readUInt32BE(0) & 0x7fffffff;
      const stream = this.streams.get(id);
      if (!stream) return;
      stream.deliver(Buffer.from(body));
      if (flags & FLAG_FIN) stream.remoteEnd();
      return;
    }
    const type = frame.readUInt16BE(2);
    if (type === SYN_STREAM) {
      const id = body.readUInt32BE(0) & 0x7fffffff;
      const headers = this.parseHeaders(await this.inflate(body.subarray(10)));
      const stream = new SpdyStream(id, headers, this);
      this.streams.set(id, stream);
      await this.sendReply(id);
      if (flags & FLAG_FIN) stream.remoteEnd();
      this.onStream(stream);
      return;
    }
    if (type === SYN_REPLY || type === HEADERS) {
      await this.inflate(body.subarray(4));
      return;
    }
    if (type === RST_STREAM) {
      const id = body.readUInt32BE(0) & 0x7fffffff;
      const stream = this.streams.get(id);
      this.streams.delete(id);
      stream?.closed();
      return;
    }
    if (type === PING) {
      await this.send(frame);
      return;
    }
    if (type === GOAWAY) this.close();
  }

  private send(bytes: Buffer): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.writes = this.writes
      .then(() => (this.closed ? undefined : this.transport.write(bytes)))
      .catch(() => this.close());
    return this.writes;
  }

  private control(type: number, flags: number, body: Buffer): Buffer {
    const head = Buffer.alloc(8);
    head.writeUInt16BE(CONTROL | VERSION, 0);
    head.writeUInt16BE(type, 2);
    head.writeUInt32BE(body.length, 4);
    head[4] = flags;
    return Buffer.concat([head, body]);
  }

  private async sendReply(id: number): Promise<void> {
    // The reply and its compressed (empty) header block must go out in compression order: serialise.
    const block = await this.deflate(Buffer.from([0, 0, 0, 0]));
    const streamId = Buffer.alloc(4);
    streamId.writeUInt32BE(id);
    await this.send(this.control(SYN_REPLY, 0, Buffer.concat([streamId, block])));
  }

  /** @internal */
  sendData(id: number, data: Buffer, fin: boolean): Promise<void> {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(id & 0x7fffffff, 0);
    head.writeUInt32BE(data.length, 4);
    head[4] = fin ? FLAG_FIN : 0;
    return this.send(Buffer.concat([head, data]));
  }

  /** @internal */
  async sendReset(id: number, status: number): Promise<void> {
    this.streams.delete(id);
    const body = Buffer.alloc(8);
    body.writeUInt32BE(id & 0x7fffffff, 0);
    body.writeUInt32BE(status, 4);
    await this.send(this.control(RST_STREAM, 0, body));
  }

  /** Sends GOAWAY and ends the session. */
  async goAway(): Promise<void> {
    const body = Buffer.alloc(8);
    await this.send(this.control(GOAWAY, 0, body));
    this.close();
  }

  /** Ends the session: every stream is closed, the transport too. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const stream of this.streams.values()) stream.closed();
    this.streams.clear();
    this.inflater.destroy();
    this.deflater.destroy();
    this.transport.close();
    for (const listener of this.closeListeners) listener();
  }
}
