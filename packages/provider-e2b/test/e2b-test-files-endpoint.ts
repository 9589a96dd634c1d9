/**
 * envd's `/files` HTTP endpoint (spec/envd/envd.yaml): GET downloads a file (404 when missing, 400 for a
 * directory); POST uploads, as `multipart/form-data` (field `file`) or raw `application/octet-stream`
 * (optionally gzip-encoded), creating parent directories and answering the written entries.
 */
import { createReadStream, createWriteStream, mkdirSync, statSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { basename, dirname } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { ConnectFailure } from "./e2b-test-connect-protocol.js";
import type { FilesystemService } from "./e2b-test-filesystem-service.js";

function jsonError(res: ServerResponse, code: number, message: string): void {
  if (!res.headersSent) res.writeHead(code, { "Content-Type": "application/json" });
  res.end(JSON.stringify({ code, message }));
}

function errnoOf(error: unknown): string | undefined {
  return (error as { code?: string }).code;
}

/** Status of a failure while writing a file, as envd answers it. */
function writeFailure(error: unknown): [number, string] {
  if (errnoOf(error) === "ENOSPC") return [507, "not enough disk space available"];
  return [500, `error writing file: ${String(error)}`];
}

async function writeOne(path: string, body: Readable): Promise<void> {
  try {
    mkdirSync(dirname(path), { recursive: true });
  } catch (error) {
    throw Object.assign(new Error(`error ensuring directories: ${String(error)}`), { status: 500 });
  }
  try {
    if (statSync(path).isDirectory()) {
      throw Object.assign(new Error(`path is a directory: ${path}`), { status: 400 });
    }
  } catch (error) {
    if ((error as { status?: number }).status) throw error;
  }
  try {
    await pipeline(body, createWriteStream(path));
  } catch (error) {
    const [status, message] = writeFailure(error);
    throw Object.assign(new Error(message), { status });
  }
}

/** Handles `/files` for one sandbox. */
export async function serveFiles(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  filesystem: FilesystemService,
): Promise<void> {
  let path: string;
  try {
    path = filesystem.resolvePath(url.searchParams.get("path") ?? "", {
      ...req.headers,
      ...(url.searchParams.get("username")
        ? { authorization: `Basic ${Buffer.from(`${url.searchParams.get("username")}:`).toString("base64")}` }
        : {}),
    });
  } catch (error) {
    if (error instanceof ConnectFailure && error.code === "unauthenticated")
      return jsonError(res, 401, error.message);
    return jsonError(res, 400, `error resolving path: ${String((error as Error).message)}`);
  }
  if (req.method === "GET") {
    let size: number;
    try {
      const stats = statSync(path);
      if (stats.isDirectory()) return jsonError(res, 400, `path '${path}' is a directory`);
      size = stats.size;
    } catch (error) {
      if (errnoOf(error) === "ENOENT") return jsonError(res, 404, `path '${path}' does not exist`);
      return jsonError(res, 500, `error checking if path exists '${path}': ${String(error)}`);
    }
    res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": size });
    await pipeline(createReadStream(path), res).catch(() => res.destroy());
    return;
  }
  if (req.method !== "POST") return jsonError(res, 405, "method not allowed");
  const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim();
  const body: Readable = req.headers["content-encoding"] === "gzip" ? req.pipe(createGunzip()) : req;
  try {
    if (type === "application/octet-stream") {
      if (!url.searchParams.get("path"))
        return jsonError(res, 400, "path query parameter is required for raw body upload");
      await writeOne(path, body);
    } else if (type.startsWith("multipart/")) {
      const form = await new Request("http://envd/files", {
        method: "POST",
        headers: { "content-type": req.headers["content-type"] ?? "" },
        body: Readable.toWeb(body) as ReadableStream<Uint8Array>,
        duplex: "half",
      } as RequestInit).formData();
      const files = form.getAll("file");
      if (files.length !== 1) return jsonError(res, 400, "expected exactly one file part with a path query");
      const file = files[0] as Blob;
      await writeOne(path, Readable.fromWeb(file.stream() as import("node:stream/web").ReadableStream));
    } else {
      return jsonError(
        res,
        400,
        `unsupported content type: ${type}, expected multipart/form-data or application/octet-stream`,
      );
    }
  } catch (error) {
    req.resume();
    return jsonError(res, (error as { status?: number }).status ?? 500, (error as Error).message);
  }
  const reply = JSON.stringify([{ path, name: basename(path), type: "file" }]);
  res.writeHead(200, { "Content-Type": "application/json" });
  res.end(reply);
}
