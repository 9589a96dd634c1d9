/**
 * The Connect protocol as envd speaks it, written from the public specification (connectrpc.com/docs/protocol):
 * unary calls are a JSON request body answered with a JSON body (errors as `{ code, message }` with an HTTP
 * status per code); server-streaming calls carry enveloped messages — one flags byte, a big-endian 32-bit
 * length, then the JSON message — and end with an envelope flagged 0x02 whose JSON holds the error, if any.
 * Only the JSON codec is implemented: the `e2b` SDK creates its transport with `useBinaryFormat: false`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** Flag of the last envelope of a stream (the "end-stream" message). */
export const END_STREAM_FLAG = 0x02;
/** Flag of a compressed envelope (never sent here; refused when received). */
export const COMPRESSED_FLAG = 0x01;

/** Connect error codes and the HTTP status a unary error is answered with. */
export const CONNECT_CODE_STATUS: Readonly<Record<string, number>> = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  aborted: 409,
  out_of_range: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  data_loss: 500,
  unauthenticated: 401,
};

/** An error a handler throws to answer with a Connect error. */
export class ConnectFailure extends Error {
  constructor(
    readonly code: keyof typeof CONNECT_CODE_STATUS,
    message: string,
  ) {
    super(message);
  }
}

/** Encodes one envelope. */
export function encodeEnvelope(flags: number, data: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + data.byteLength);
  out.writeUInt8(flags, 0);
  out.writeUInt32BE(data.byteLength, 1);
  out.set(data, 5);
  return out;
}

/** Splits a complete body into envelopes; a truncated envelope is a protocol error. */
export function decodeEnvelopes(body: Uint8Array): { flags: number; data: Buffer }[] {
  const buf = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const out: { flags: number; data: Buffer }[] = [];
  let offset = 0;
  while (offset < buf.byteLength) {
    if (buf.byteLength - offset < 5)
      throw new ConnectFailure("invalid_argument", "protocol error: incomplete envelope");
    const flags = buf.readUInt8(offset);
    const length = buf.readUInt32BE(offset + 1);
    if (buf.byteLength - offset - 5 < length) {
      throw new ConnectFailure("invalid_argument", "protocol error: envelope shorter than its length prefix");
    }
    out.push({ flags, data: buf.subarray(offset + 5, offset + 5 + length) });
    offset += 5 + length;
  }
  return out;
}

/** Reads a whole request body. */
export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function errorJson(error: unknown): { code: string; message: string } {
  if (error instanceof ConnectFailure) return { code: error.code, message: error.message };
  return { code: "internal", message: error instanceof Error ? error.message : String(error) };
}

function parseJson(data: Buffer): Record<string, unknown> {
  if (data.byteLength === 0) return {};
  try {
    const value = JSON.parse(data.toString("utf8")) as unknown;
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("not an object");
    return value as Record<string, unknown>;
  } catch (error) {
    throw new ConnectFailure("invalid_argument", `protocol error: invalid JSON message: ${String(error)}`);
  }
}

/** Answers a unary call: the handler gets the decoded request and returns the response message. */
export async function serveUnary(
  req: IncomingMessage,
  res: ServerResponse,
  handler: (message: Record<string, unknown>) => Promise<Record<string, unknown>> | Record<string, unknown>,
): Promise<void> {
  try {
    const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim();
    if (type !== "application/json") {
      res.writeHead(415, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ code: "internal", message: `unsupported content type ${type}` }));
      return;
    }
    const reply = await handler(parseJson(await readBody(req)));
    const body = Buffer.from(JSON.stringify(reply));
    res.writeHead(200, { "Content-Type": "application/json", "Content-Length": body.byteLength });
    res.end(body);
  } catch (error) {
    const json = errorJson(error);
    if (!res.headersSent) {
      res.writeHead(CONNECT_CODE_STATUS[json.code] ?? 500, { "Content-Type": "application/json" });
    }
    res.end(JSON.stringify(json));
  }
}

/** The sending side of a server stream. */
export interface ServerStream {
  /** Sends one message; resolves when the socket can take more (back-pressure). */
  send(message: Record<string, unknown>): Promise<void>;
  /** True once the client went away. */
  readonly closed: boolean;
  /** Called when the client goes away. */
  onClose(listener: () => void): void;
}

/**
 * Answers a server-streaming call. The handler gets the single request message and a stream; when it
 * returns the end-stream envelope is written (with the error when it threw). Streams always answer HTTP
 * 200: errors travel in the end-stream message.
 */
export async function serveServerStream(
  req: IncomingMessage,
  res: ServerResponse,
  handler: (message: Record<string, unknown>, stream: ServerStream) => Promise<void>,
): Promise<void> {
  let closed = false;
  const listeners: (() => void)[] = [];
  res.on("close", () => {
    closed = true;
    for (const listener of listeners.splice(0)) listener();
  });
  const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim();
  if (type !== "application/connect+json") {
    res.writeHead(415, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ code: "internal", message: `unsupported content type ${type}` }));
    return;
  }
  res.writeHead(200, { "Content-Type": "application/connect+json" });
  const stream: ServerStream = {
    get closed() {
      return closed;
    },
    onClose(listener) {
      if (closed) listener();
      else listeners.push(listener);
    },
    send(message) {
      if (closed) return Promise.resolve();
      const ok = res.write(encodeEnvelope(0, Buffer.from(JSON.stringify(message))));
      if (ok) return Promise.resolve();
      return new Promise((resolve) => {
        const done = () => {
          res.off("drain", done);
          res.off("close", done);
          resolve();
        };
        res.on("drain", done);
        res.on("close", done);
      });
    },
  };
  let end: Record<string, unknown> = {};
  try {
    const envelopes = decodeEnvelopes(await readBody(req));
    const first = envelopes[0];
    if (!first) throw new ConnectFailure("invalid_argument", "protocol error: missing request message");
    if (first.flags & COMPRESSED_FLAG)
      throw new ConnectFailure("internal", "compressed messages are not supported");
    await handler(parseJson(first.data), stream);
  } catch (error) {
    end = { error: errorJson(error) };
  }
  if (!closed) res.end(encodeEnvelope(END_STREAM_FLAG, Buffer.from(JSON.stringify(end))));
}
