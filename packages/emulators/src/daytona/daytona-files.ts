/**
 * The toolbox's file transfer routes `@daytonaio/sdk` uses for whole files: `POST /files/bulk-upload`
 * (multipart: `files[i].path` fields and `files[i].file` parts) and `POST /files/bulk-download` (JSON
 * `{ paths }`, answered as multipart with a `file` part per file, named by its path, or an `error` part with
 * a JSON `ErrorResponse` for a file that cannot be read), plus `POST /files/permissions`. Files are read and
 * written through the backend sandbox's file API.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AnyCapabilities, Sandbox } from "@sbox/core";
import { readBody } from "../http-server.js";
import { DaytonaApiError } from "./daytona-fleet.js";

/** Largest upload the emulator takes in one request (Daytona streams; the emulator buffers). */
export const DAYTONA_UPLOAD_LIMIT_BYTES: number = 512 * 1024 * 1024;

interface Part {
  readonly name: string;
  readonly filename: string | undefined;
  readonly data: Buffer;
}

/** Splits a `multipart/form-data` body into its parts. */
export function parseMultipart(body: Buffer, contentType: string): Part[] {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  if (!boundary) throw new DaytonaApiError(400, "multipart body without a boundary");
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  const parts: Part[] = [];
  let at = body.indexOf(delimiter);
  while (at !== -1) {
    const start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString() === "--") break;
    const next = body.indexOf(delimiter, start);
    if (next === -1) throw new DaytonaApiError(400, "multipart body is not terminated");
    const raw = body.subarray(start + 2, next - 2);
    const split = raw.indexOf("\r\n\r\n");
    if (split === -1) throw new DaytonaApiError(400, "multipart part without headers");
    const headers = raw.subarray(0, split).toString("utf8");
    const disposition = /content-disposition:[^\r\n]*/i.exec(headers)?.[0] ?? "";
    const name = /\bname="([^"]*)"/i.exec(disposition)?.[1];
    if (name === undefined) throw new DaytonaApiError(400, "multipart part without a name");
    const filename = /\bfilename="([^"]*)"/i.exec(disposition)?.[1];
    parts.push({ name, filename, data: raw.subarray(split + 4) });
    at = next;
  }
  return parts;
}

/** The HTTP status of a backend file failure. */
function statusOf(error: unknown): number {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  if (code === "NotFound") return 404;
  if (code === "Validation" || code === "Conflict") return 400;
  if (code === "Unauthorized") return 403;
  return 500;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `POST /files/bulk-upload`. */
export async function bulkUpload(
  sandbox: Sandbox<AnyCapabilities>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const type = req.headers["content-type"] ?? "";
  if (!type.startsWith("multipart/form-data")) throw new DaytonaApiError(400, "expected multipart/form-data");
  const parts = parseMultipart(await readBody(req, DAYTONA_UPLOAD_LIMIT_BYTES), type);
  const paths = new Map<string, string>();
  const files = new Map<string, Buffer>();
  for (const part of parts) {
    const match = /^files\[(\d+)\]\.(path|file)$/.exec(part.name);
    if (!match) continue;
    if (match[2] === "path") paths.set(match[1]!, part.data.toString("utf8"));
    else files.set(match[1]!, part.data);
  }
  for (const [index, data] of files) {
    const path = paths.get(index);
    if (!path) throw new DaytonaApiError(400, `files[${index}] has no path`);
    try {
      await sandbox.files.write(path, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    } catch (error) {
      throw new DaytonaApiError(statusOf(error), `cannot write ${path}: ${messageOf(error)}`);
    }
  }
  res.writeHead(200).end();
}

/** `POST /files/bulk-download`: one multipart answer, a part per requested path. */
export async function bulkDownload(
  sandbox: Sandbox<AnyCapabilities>,
  body: Record<string, unknown>,
  res: ServerResponse,
): Promise<void> {
  const paths = body.paths;
  if (!Array.isArray(paths) || paths.length === 0 || !paths.every((p) => typeof p === "string" && p !== "")) {
    throw new DaytonaApiError(400, "paths must be a non-empty array of paths");
  }
  const boundary = `daytona-${randomBytes(12).toString("hex")}`;
  const chunks: Buffer[] = [];
  for (const path of paths as string[]) {
    // Quoted as Go's mime/multipart (the toolbox daemon's) quotes a filename: backslash and quote escaped.
    const quoted = path.replaceAll("\\", "\\\\").replaceAll('"', '\\"');
    try {
      const data = await sandbox.files.read(path);
      chunks.push(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${quoted}"\r\n` +
            `Content-Type: application/octet-stream\r\nContent-Length: ${data.byteLength}\r\n\r\n`,
        ),
        Buffer.from(data.buffer, data.byteOffset, data.byteLength),
        Buffer.from("\r\n"),
      );
    } catch (error) {
      const status = statusOf(error);
      const payload = JSON.stringify({
        statusCode: status,
        message: `cannot read ${path}: ${messageOf(error)}`,
        code: status === 404 ? "FILE_NOT_FOUND" : "FILE_READ_FAILED",
        timestamp: new Date().toISOString(),
        path: "/files/bulk-download",
        method: "POST",
      });
      chunks.push(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="error"; filename="${quoted}"\r\n` +
            `Content-Type: application/json\r\n\r\n${payload}\r\n`,
        ),
      );
    }
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  const answer = Buffer.concat(chunks);
  res.writeHead(200, {
    "Content-Type": `multipart/form-data; boundary=${boundary}`,
    "Content-Length": String(answer.byteLength),
  });
  res.end(answer);
}

/** `GET /files/download?path=`: one file, its bytes as the answer. */
export async function downloadOne(
  sandbox: Sandbox<AnyCapabilities>,
  url: URL,
  res: ServerResponse,
): Promise<void> {
  const path = url.searchParams.get("path");
  if (!path) throw new DaytonaApiError(400, "path is required");
  let data: Uint8Array;
  try {
    data = await sandbox.files.read(path);
  } catch (error) {
    throw new DaytonaApiError(statusOf(error), `cannot read ${path}: ${messageOf(error)}`);
  }
  res.writeHead(200, {
    "Content-Type": "application/octet-stream",
    "Content-Length": String(data.byteLength),
  });
  res.end(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
}

/** `POST /files/permissions?path=&mode=` (mode in octal; owner and group are not modelled). */
export async function setPermissions(
  sandbox: Sandbox<AnyCapabilities>,
  url: URL,
  res: ServerResponse,
): Promise<void> {
  const path = url.searchParams.get("path");
  const mode = url.searchParams.get("mode");
  if (!path) throw new DaytonaApiError(400, "path is required");
  if (url.searchParams.has("owner") || url.searchParams.has("group")) {
    throw new DaytonaApiError(400, "owner and group are not supported by this emulator");
  }
  if (mode === null || !/^[0-7]{3,4}$/.test(mode))
    throw new DaytonaApiError(400, "mode must be octal, e.g. 644");
  const result = await sandbox.commands.run(["chmod", mode, "--", path]);
  if (result.exitCode !== 0) {
    throw new DaytonaApiError(/No such file/i.test(result.stderr) ? 404 : 400, result.stderr.trim());
  }
  res.writeHead(200).end();
}
