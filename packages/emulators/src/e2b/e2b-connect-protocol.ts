/**
 * The Connect protocol as envd speaks it, from the public specification (connectrpc.com/docs/protocol):
 * unary calls carry a JSON body and answer a JSON body (errors as `{ code, message }` with an HTTP status
 * per code); streaming calls carry enveloped messages — a flags byte, a big-endian 32-bit length, the JSON
 * message — and end with an envelope flagged 0x02 whose JSON holds the error, if any. Server streams
 * answer HTTP 200 and put errors in that last envelope; client streams (StreamInput) read envelopes as they
 * arrive. Only the JSON codec is served: the `e2b` SDK builds its transport with `useBinaryFormat: false`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { readBody } from "../http-server.js";

/** Flag of the last envelope of a stream (the "end-stream" message). */
export const END_STREAM_FLAG = 0x02;
/** Flag of a compressed envelope (refused: nothing here negotiates compression). */
export const COMPRESSED_FLAG = 0x01;

/** Connect error codes and the HTTP status a unary error is answered with. */
export const CONNECT_CODE_STATUS = {
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
} as const;

/** A Connect error code. */
export type ConnectCode = keyof typeof CONNECT_CODE_STATUS;

/** An error a handler throws to answer with a Connect error. */
export class ConnectFailure extends Error {
  constructor(
    readonly code: ConnectCode,
    message: string,
  ) {
    super(message);
  }
}

/** A JSON message. */
export type ConnectMessage = Record<string, unknown>;

/** Encodes one envelope. */
export function encodeEnvelope(flags: number, data: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + data.byteLength);
  out.writeUInt8(flags, 0);
  out.writeUInt32BE(data.byteLength, 1);
  out.set(data, 5);
  return out;
}

/** Largest message accepted (envd's own limit is larger; this bounds the emulator's memory). */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/** Reads envelopes from a request body as they arrive. */
async function* readEnvelopes(req: IncomingMessage): AsyncGenerator<{ flags: number; data: Buffer }> {
  let pending: Buffer = Buffer.alloc(0);
  for await (const chunk of req) {
    pending = pending.byteLength === 0 ? (chunk as Buffer) : Buffer.concat([pending, chunk as Buffer]);
    while (pending.byteLength >= 5) {
      const length = pending.readUInt32BE(1);
      if (length > MAX_MESSAGE_BYTES) {
        throw new ConnectFailure("resource_exhausted", `message of ${length} bytes is larger than allowed`);
      }
      if (pending.byteLength < 5 + length) break;
      yield { flags: pending.readUInt8(0), data: pending.subarray(5, 5 + length) };
      pending = pending.subarray(5 + length);
    }
  }
  if (pending.byteLength > 0) {
    throw new ConnectFailure("invalid_argument", "protocol error: incomplete envelope");
  }
}

function errorJson(error: unknown): { code: ConnectCode; message: string } {
  if (error instanceof ConnectFailure) return { code: error.code, message: error.message };
  return { code: "internal", message: error instanceof Error ? error.message : String(error) };
}

function parseMessage(data: Buffer): ConnectMessage {
  if (data.byteLength === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(data.toString("utf8"));
  } catch (error) {
    throw new ConnectFailure("invalid_argument", `protocol error: invalid JSON message: ${String(error)}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ConnectFailure("invalid_argument", "protocol error: a message must be a JSON object");
  }
  return value as ConnectMessage;
}

function mediaType(req: IncomingMessage): string {
  return (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
}

function unsupported(res: ServerResponse, type: string, expected: string): void {
  req415(res, `unsupported content type ${JSON.stringify(type)}: this envd speaks ${expected} only`);
}

function req415(res: ServerResponse, message: string): void {
  res.writeHead(415, { "Content-Type": "application/json" });
  res.end(JSON.stringify({ code: "internal", message }));
}

/** Answers a unary call: the handler gets the decoded request and returns the response message. */
export async function serveUnary(
  req: IncomingMessage,
  res: ServerResponse,
  handler: (message: ConnectMessage) => Promise<ConnectMessage> | ConnectMessage,
): Promise<void> {
  try {
    const type = mediaType(req);
    if (type !== "application/json") {
      req.resume();
      unsupported(res, type, "application/json for unary calls");
      return;
    }
    if (req.headers["content-encoding"] && req.headers["content-encoding"] !== "identity") {
      throw new ConnectFailure("unimplemented", "compressed requests are not supported");
    }
    const reply = await handler(parseMessage(await readBody(req, MAX_MESSAGE_BYTES)));
    const body = Buffer.from(JSON.stringify(reply));
    res.writeHead(200, { "Content-Type": "application/json", "Content-Length": body.byteLength });
    res.end(body);
  } catch (error) {
    req.resume();
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
  send(message: ConnectMessage): Promise<void>;
  /** True once the client went away or the stream was dropped. */
  readonly closed: boolean;
  /** Called once when the client goes away or the stream is dropped. */
  onClose(listener: () => void): void;
  /**
   * Cuts the connection without an end-stream message, as a sandbox that dies under envd does: the client
   * sees a broken stream, never a clean end.
   */
  drop(): void;
}

function streamOf(res: ServerResponse): ServerStream & { end(message: ConnectMessage): void } {
  let closed = false;
  const listeners: (() => void)[] = [];
  const close = () => {
    if (closed) return;
    closed = true;
    for (const listener of listeners.splice(0)) listener();
  };
  res.on("close", close);
  return {
    get closed() {
      return closed;
    },
    onClose(listener) {
      if (closed) listener();
      else listeners.push(listener);
    },
    drop() {
      res.socket?.destroy();
      res.destroy();
      close();
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
    end(message) {
      if (closed) return;
      res.end(encodeEnvelope(END_STREAM_FLAG, Buffer.from(JSON.stringify(message))));
    },
  };
}

/**
 * Answers a server-streaming call. The handler gets the single request message and a stream; when it
 * returns the end-stream envelope is written (with the error when it threw), unless the stream was dropped.
 */
export async function serveServerStream(
  req: IncomingMessage,
  res: ServerResponse,
  handler: (message: ConnectMessage, stream: ServerStream) => Promise<void>,
): Promise<void> {
  const type = mediaType(req);
  if (type !== "application/connect+json") {
    req.resume();
    unsupported(res, type, "application/connect+json for streaming calls");
    return;
  }
  const stream = streamOf(res);
  res.writeHead(200, { "Content-Type": "application/connect+json" });
  let end: ConnectMessage = {};
  try {
    let first: { flags: number; data: Buffer } | undefined;
    for await (const envelope of readEnvelopes(req)) {
      first ??= envelope;
    }
    if (!first) throw new ConnectFailure("invalid_argument", "protocol error: missing request message");
    if (first.flags & COMPRESSED_FLAG) {
      throw new ConnectFailure("unimplemented", "compressed messages are not supported");
    }
    await handler(parseMessage(first.data), stream);
  } catch (error) {
    end = { error: errorJson(error) };
  }
  stream.end(end);
}

/**
 * Answers a client-streaming call: `onMessage` sees each request message as it arrives; the response is
 * one enveloped message and the end-stream envelope.
 */
export async function serveClientStream(
  req: IncomingMessage,
  res: ServerResponse,
  onMessage: (message: ConnectMessage, index: number) => Promise<void>,
): Promise<void> {
  const type = mediaType(req);
  if (type !== "application/connect+json") {
    req.resume();
    unsupported(res, type, "application/connect+json for streaming calls");
    return;
  }
  let end: ConnectMessage = {};
  let index = 0;
  try {
    for await (const envelope of readEnvelopes(req)) {
      if (envelope.flags & END_STREAM_FLAG) break;
      if (envelope.flags & COMPRESSED_FLAG) {
        throw new ConnectFailure("unimplemented", "compressed messages are not supported");
      }
      await onMessage(parseMessage(envelope.data), index++);
    }
  } catch (error) {
    req.resume();
    end = { error: errorJson(error) };
  }
  res.writeHead(200, { "Content-Type": "application/connect+json" });
  if (!end.error) res.write(encodeEnvelope(0, Buffer.from("{}")));
  res.end(encodeEnvelope(END_STREAM_FLAG, Buffer.from(JSON.stringify(end))));
}
