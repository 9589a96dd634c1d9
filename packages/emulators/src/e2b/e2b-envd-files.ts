/**
 * envd's `/files` endpoint (spec/envd/envd.yaml). GET downloads a file (404 when missing, 400 for a
 * directory; gzip when the client accepts it). POST uploads `multipart/form-data` — any number of `file`
 * parts, each named by the `path` query or by its own file name — or a raw `application/octet-stream`
 * body (optionally gzip-encoded), creating parent directories owned by the user, truncating, then setting
 * `X-Metadata-*` headers as the file's metadata. Both check signed URLs like envd.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { posix } from "node:path";
import { Readable } from "node:stream";
import { createGunzip, createGzip } from "node:zlib";
import { ConnectFailure } from "./e2b-connect-protocol.js";
import { type E2BMachine, HelperFailure } from "./e2b-machine.js";
import { expandAndResolve } from "./e2b-paths.js";
import { checkFileAccess, fileUrlParameters, type SignedOperation } from "./e2b-signatures.js";

const TSPECIALS = '()<>@,;:\\"/[]?=';

/**
 * Go's `mime.FormatMediaType` for one parameter, as envd sets `Content-Disposition`: a token as is, other
 * ASCII quoted, anything with control or non-ASCII bytes RFC 2231-encoded (`filename*=utf-8''%C3%BC`).
 */
export function formatMediaType(type: string, attribute: string, value: string): string {
  const bytes = Buffer.from(value, "utf8");
  const needsEncoding = bytes.some((b) => (b < 0x20 || b > 0x7e) && b !== 0x09);
  if (needsEncoding) {
    let encoded = "";
    for (const b of bytes) {
      const ch = String.fromCharCode(b);
      encoded +=
        b <= 0x20 || b >= 0x7f || ch === "*" || ch === "'" || ch === "%" || TSPECIALS.includes(ch)
          ? `%${b.toString(16).toUpperCase().padStart(2, "0")}`
          : ch;
    }
    return `${type}; ${attribute}*=utf-8''${encoded}`;
  }
  const token = value !== "" && [...value].every((ch) => ch > " " && ch < "\x7f" && !TSPECIALS.includes(ch));
  if (token) return `${type}; ${attribute}=${value}`;
  return `${type}; ${attribute}="${value.replace(/["\\]/g, (ch) => `\\${ch}`)}"`;
}

/** What the files endpoint needs of its sandbox. */
export interface EnvdFilesHost {
  readonly machine: E2BMachine;
  /** envd's access token (`secure` sandboxes); signed URLs are checked against it. */
  readonly accessToken: string | undefined;
  now(): number;
}

const METADATA_HEADER_PREFIX = "x-metadata-";
/** envd's limits on metadata: printable ASCII, keys up to 246 bytes, 4 KiB in total. */
const METADATA_KEY_MAX = 255 - "user.e2b.".length;
const METADATA_TOTAL_MAX = 4096;

function jsonError(res: ServerResponse, code: number, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(code, { "Content-Type": "application/json" });
  res.end(JSON.stringify({ code, message }));
}

function statusOf(error: unknown): number {
  if (error instanceof HelperFailure) {
    switch (error.helperCode) {
      case "not_found":
        return 404;
      case "bad_request":
        return 400;
      case "insufficient_storage":
        return 507;
      default:
        return 500;
    }
  }
  if (error instanceof ConnectFailure) {
    if (error.code === "unauthenticated") return 401;
    if (error.code === "invalid_argument") return 400;
  }
  return 500;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `X-Metadata-<key>: value` headers, validated like envd (keys lowercased, as Go canonicalises them). */
function metadataOf(req: IncomingMessage): Record<string, string> | string {
  const metadata: Record<string, string> = {};
  let total = 0;
  for (const [name, value] of Object.entries(req.headers)) {
    if (!name.startsWith(METADATA_HEADER_PREFIX) || value === undefined) continue;
    const key = name.slice(METADATA_HEADER_PREFIX.length);
    const text = Array.isArray(value) ? (value[0] ?? "") : value;
    if (key === "") continue;
    if (key.length > METADATA_KEY_MAX) return `metadata key "${key}" exceeds ${METADATA_KEY_MAX} bytes`;
    for (const [label, s] of [
      ["key", key],
      [`value for key "${key}"`, text],
    ] as const) {
      for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c < 0x20 || c > 0x7e) {
          return `metadata ${label} contains non-printable-ASCII byte 0x${c.toString(16).padStart(2, "0")} at offset ${i}`;
        }
      }
    }
    total += "user.e2b.".length + key.length + text.length;
    metadata[key] = text;
  }
  if (total > METADATA_TOTAL_MAX) return `total metadata size ${total} exceeds ${METADATA_TOTAL_MAX} bytes`;
  return metadata;
}

function acceptsGzip(req: IncomingMessage): boolean {
  const header = req.headers["accept-encoding"];
  if (!header) return false;
  return String(header)
    .split(",")
    .some((part) => {
      const [name, ...params] = part.trim().split(";");
      if (name?.trim().toLowerCase() !== "gzip") return false;
      const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
      return q === undefined || Number(q.slice(2)) > 0;
    });
}

/** Handles `/files` for one sandbox. */
export async function serveFiles(
  host: EnvdFilesHost,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const method = req.method ?? "GET";
  if (method !== "GET" && method !== "POST") {
    req.resume();
    return jsonError(res, 405, "method not allowed");
  }
  const operation: SignedOperation = method === "GET" ? "read" : "write";
  const params = fileUrlParameters(url);
  const tokenHeader = req.headers["x-access-token"];
  const denied = checkFileAccess(
    params,
    operation,
    host.accessToken,
    typeof tokenHeader === "string" ? tokenHeader : undefined,
    host.now(),
  );
  if (denied) {
    req.resume();
    return jsonError(res, 401, denied);
  }
  const { machine } = host;
  let user: Awaited<ReturnType<E2BMachine["user"]>>;
  try {
    user = await machine.user(params.username ?? machine.layout.defaultUser);
  } catch (error) {
    req.resume();
    return jsonError(res, 401, messageOf(error));
  }
  if (method === "GET") return download(host, req, res, () => expandAndResolve(params.path, user));

  const metadata = metadataOf(req);
  if (typeof metadata === "string") {
    req.resume();
    return jsonError(res, 400, `invalid metadata: ${metadata}`);
  }
  const encoding = req.headers["content-encoding"];
  if (encoding !== undefined && encoding !== "identity" && encoding !== "gzip") {
    req.resume();
    return jsonError(res, 400, `error decompressing request body: unsupported Content-Encoding: ${encoding}`);
  }
  const body: Readable = encoding === "gzip" ? req.pipe(createGunzip()) : req;
  const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  const owner = machine.ownerOf(user);
  const written: Record<string, unknown>[] = [];
  const upload = async (path: string, data: Readable) => {
    const entry = await machine.helper(
      "write",
      { path, ...owner, metadata },
      { stdin: Readable.toWeb(data) as ReadableStream<Uint8Array> },
    );
    written.push(entry as Record<string, unknown>);
  };
  try {
    if (type === "application/octet-stream") {
      if (!url.searchParams.has("path")) {
        req.resume();
        return jsonError(res, 400, "path query parameter is required for raw body upload");
      }
      await upload(expandAndResolve(params.path, user), body);
    } else if (type.startsWith("multipart/")) {
      const form = await new Request("http://envd/files", {
        method: "POST",
        headers: { "content-type": String(req.headers["content-type"] ?? "") },
        body: Readable.toWeb(body) as ReadableStream<Uint8Array>,
        duplex: "half",
      } as RequestInit)
        .formData()
        .catch((error: unknown) => {
          throw new ConnectFailure("internal", `error parsing multipart form: ${messageOf(error)}`);
        });
      const seen = new Set<string>();
      for (const [name, value] of form.entries()) {
        if (name !== "file") continue;
        // A part without a file name arrives as a string; envd takes any part named "file".
        const file = typeof value === "string" ? new File([value], "") : (value as File);
        const requested = url.searchParams.has("path") ? params.path : file.name;
        const path = expandAndResolve(requested ?? "", user);
        if (seen.has(path)) {
          return jsonError(
            res,
            400,
            `you cannot upload multiple files to the same path '${path}' in one upload request, only the first specified file was uploaded`,
          );
        }
        seen.add(path);
        await upload(path, Readable.fromWeb(file.stream() as import("node:stream/web").ReadableStream));
      }
    } else {
      req.resume();
      return jsonError(
        res,
        400,
        `unsupported content type: ${String(req.headers["content-type"] ?? "")}, expected multipart/form-data or application/octet-stream`,
      );
    }
  } catch (error) {
    req.resume();
    const status = statusOf(error);
    const message = messageOf(error);
    return jsonError(
      res,
      status,
      status === 400 && !(error instanceof HelperFailure) ? `error resolving path: ${message}` : message,
    );
  }
  const text = JSON.stringify(written);
  res.writeHead(200, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

async function download(
  host: EnvdFilesHost,
  req: IncomingMessage,
  res: ServerResponse,
  resolvePath: () => string,
): Promise<void> {
  req.resume();
  let path: string;
  try {
    path = resolvePath();
  } catch (error) {
    return jsonError(res, 400, `error expanding and resolving path: ${messageOf(error)}`);
  }
  const stop = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) stop.abort();
  });
  const chunks: Buffer[] = [];
  let sink: ((chunk: Buffer) => void) | undefined;
  let done: Promise<void>;
  try {
    const started = await host.machine.helperStream(
      "read",
      { path },
      {
        signal: stop.signal,
        onLine: (line) => {
          const chunk = Buffer.from(line, "base64");
          if (sink) sink(chunk);
          else chunks.push(chunk);
        },
      },
    );
    done = started.done;
  } catch (error) {
    return jsonError(res, statusOf(error), messageOf(error));
  }
  const gzip = acceptsGzip(req);
  const name = posix.basename(path);
  const headers: Record<string, string> = {
    "Content-Type": "application/octet-stream",
    "Content-Disposition": formatMediaType("inline", "filename", name),
    Vary: "Accept-Encoding",
  };
  if (gzip) headers["Content-Encoding"] = "gzip";
  res.writeHead(200, headers);
  const target = gzip ? createGzip() : undefined;
  if (target) target.pipe(res);
  const write = (chunk: Buffer) => (target ? target.write(chunk) : res.write(chunk));
  for (const chunk of chunks.splice(0)) write(chunk);
  sink = write;
  try {
    await done;
  } catch {
    res.destroy();
    return;
  }
  if (target) target.end();
  else res.end();
}
