/**
 * PATCH bodies by content type: JSON merge patch (RFC 7386), JSON patch (RFC 6902), and strategic merge
 * patch as far as the emulated resources need it (a merge patch whose lists of named objects —
 * containers, env, ports, volumes, conditions by `type` — merge by that key, with `$patch: delete` and
 * `$patch: replace`). Server-side apply (`application/apply-patch+yaml`) is refused with 415.
 */
import { KubeApiError } from "./kubernetes-status.js";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isObject(value: unknown): value is Record<string, Json> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** RFC 7386. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

const MERGE_KEYS = ["name", "type", "containerPort", "mountPath", "port"];

function mergeKeyOf(list: unknown[]): string | undefined {
  const first = list.find(isObject);
  if (!first) return undefined;
  return MERGE_KEYS.find((key) => list.every((item) => isObject(item) && key in item) && key in first);
}

/** Strategic merge patch for the list shapes the emulated resources have. */
export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  if (patch.$patch === "replace") {
    const { $patch: _, ...rest } = patch;
    return structuredClone(rest);
  }
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$")) continue;
    const current = out[key];
    if (value === null) delete out[key];
    else if (Array.isArray(value) && Array.isArray(current)) {
      const mergeKey = mergeKeyOf([...current, ...value]);
      if (!mergeKey) {
        out[key] = structuredClone(value);
        continue;
      }
      const merged = current.map((item) => structuredClone(item));
      for (const item of value) {
        if (!isObject(item)) continue;
        const index = merged.findIndex((m) => isObject(m) && m[mergeKey] === item[mergeKey]);
        if (item.$patch === "delete") {
          if (index >= 0) merged.splice(index, 1);
        } else if (index >= 0) merged[index] = strategicMergePatch(merged[index], item);
        else merged.push(strategicMergePatch(undefined, item));
      }
      out[key] = merged;
    } else out[key] = strategicMergePatch(current, value);
  }
  return out;
}

function pointer(path: string): string[] {
  if (path === "") return [];
  if (!path.startsWith("/"))
    throw new KubeApiError(422, "Invalid", `invalid JSON pointer ${JSON.stringify(path)}`);
  return path
    .slice(1)
    .split("/")
    .map((p) => p.replaceAll("~1", "/").replaceAll("~0", "~"));
}

function walk(root: unknown, parts: string[]): { parent: unknown; key: string } {
  let parent = root;
  for (const part of parts.slice(0, -1)) {
    if (Array.isArray(parent)) parent = parent[Number(part)];
    else if (isObject(parent)) parent = parent[part];
    else parent = undefined;
    if (parent === undefined)
      throw new KubeApiError(422, "Invalid", `the JSON patch path ${parts.join("/")} does not exist`);
  }
  return { parent, key: parts[parts.length - 1] ?? "" };
}

function getAt(root: unknown, parts: string[]): unknown {
  let current = root;
  for (const part of parts) {
    if (Array.isArray(current)) current = current[Number(part)];
    else if (isObject(current)) current = current[part];
    else return undefined;
  }
  return current;
}

/** RFC 6902. */
export function jsonPatch(target: unknown, operations: unknown): unknown {
  if (!Array.isArray(operations))
    throw new KubeApiError(400, "BadRequest", "a JSON patch must be a list of operations");
  let doc = structuredClone(target);
  for (const op of operations as { op?: string; path?: string; from?: string; value?: unknown }[]) {
    const parts = pointer(op.path ?? "");
    const set = (value: unknown, insert: boolean) => {
      if (parts.length === 0) {
        doc = structuredClone(value);
        return;
      }
      const { parent, key } = walk(doc, parts);
      if (Array.isArray(parent)) {
        const index = key === "-" ? parent.length : Number(key);
        if (insert) parent.splice(index, 0, structuredClone(value));
        else parent[index] = structuredClone(value);
      } else if (isObject(parent)) parent[key] = structuredClone(value) as Json;
    };
    const removeAt = () => {
      const { parent, key } = walk(doc, parts);
      if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else if (isObject(parent)) {
        if (!(key in parent))
          throw new KubeApiError(422, "Invalid", `unable to remove nonexistent key: ${key}`);
        delete parent[key];
      }
    };
    switch (op.op) {
      case "add":
        set(op.value, true);
        break;
      case "replace":
        if (getAt(doc, parts) === undefined)
          throw new KubeApiError(
            422,
            "Invalid",
            `replace operation does not apply: doc is missing key: ${op.path}`,
          );
        set(op.value, false);
        break;
      case "remove":
        removeAt();
        break;
      case "move":
      case "copy": {
        const value = getAt(doc, pointer(op.from ?? ""));
        if (op.op === "move") {
          const from = pointer(op.from ?? "");
          const { parent, key } = walk(doc, from);
          if (Array.isArray(parent)) parent.splice(Number(key), 1);
          else if (isObject(parent)) delete parent[key];
        }
        set(value, true);
        break;
      }
      case "test":
        if (JSON.stringify(getAt(doc, parts)) !== JSON.stringify(op.value)) {
          throw new KubeApiError(422, "Invalid", `testing value ${op.path} failed`);
        }
        break;
      default:
        throw new KubeApiError(400, "BadRequest", `unknown JSON patch operation ${JSON.stringify(op.op)}`);
    }
  }
  return doc;
}

/** Applies a PATCH body of `contentType` to `target`. */
export function applyPatch(target: unknown, contentType: string, body: unknown): unknown {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  if (type === "application/merge-patch+json") return mergePatch(target, body);
  if (type === "application/strategic-merge-patch+json") return strategicMergePatch(target, body);
  if (type === "application/json-patch+json") return jsonPatch(target, body);
  throw new KubeApiError(
    415,
    "UnsupportedMediaType",
    `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (server-side apply is not emulated)`,
  );
}
