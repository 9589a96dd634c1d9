/**
 * The REST surface of the emulated API server: discovery, then for every served resource the verbs
 * `get`, `list` (label and field selectors, Table output), `watch`, `create` (`generateName`, `dryRun`),
 * `update`, `patch` (merge, strategic merge, JSON patch), `delete` (grace period, propagation policy,
 * preconditions) and `deletecollection`, plus the `status` subresource and `pods/log`. Every call needs
 * the emulator's bearer token; failures answer a Status with the API server's reason and code.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { readBody, sendJsonResponse } from "../http-server.js";
import { coreVersions, groupInfo, groupList, resourceList, versionInfo } from "./kubernetes-discovery.js";
import type { Kubelet } from "./kubernetes-kubelet.js";
import type { KubeObject } from "./kubernetes-objects.js";
import { applyPatch } from "./kubernetes-patch.js";
import { serveLogs } from "./kubernetes-pod-logs.js";
import { findResource, groupVersion, POD, type ResourceDefinition } from "./kubernetes-resources.js";
import { fieldSelector, labelSelector, type Matcher } from "./kubernetes-selectors.js";
import { badRequest, KubeApiError, methodNotAllowed } from "./kubernetes-status.js";
import type { DeleteOptions, KubernetesStore } from "./kubernetes-store.js";
import { toTable, wantsTable } from "./kubernetes-table.js";
import { serveWatch } from "./kubernetes-watch.js";

/** What the routes need. */
export interface ApiContext {
  readonly store: KubernetesStore;
  readonly kubelet: Kubelet;
  readonly serverAddress: () => string;
  now(): number;
  authorized(req: IncomingMessage): boolean;
  /** Checks an object before it is written; returns warnings for the client (`Warning` headers). */
  admissionWarnings(definition: ResourceDefinition, object: KubeObject): string[];
}

/** Field selectors each kind supports besides `metadata.name` and `metadata.namespace`. */
const FIELD_LABELS: Readonly<Record<string, readonly string[]>> = {
  Pod: [
    "status.phase",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "status.podIP",
  ],
  Event: [
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "reason",
    "type",
    "source",
  ],
  Secret: ["type"],
  Namespace: ["status.phase"],
};

/** Largest JSON body accepted (the API server's limit is 3 MiB per object in etcd; requests up to 3 MiB). */
const BODY_LIMIT = 3 * 1024 * 1024;

interface Target {
  definition: ResourceDefinition;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
}

function parseTarget(parts: string[], group: string, version: string): Target | undefined {
  let namespace: string | undefined;
  let rest = parts;
  if (rest[0] === "namespaces" && rest.length >= 3 && rest[2] !== "status" && rest[2] !== "finalize") {
    namespace = decodeURIComponent(rest[1]!);
    rest = rest.slice(2);
  }
  const definition = findResource(group, version, rest[0] ?? "");
  if (!definition) return undefined;
  if (rest.length > 3) return undefined;
  return {
    definition,
    namespace,
    name: rest[1] === undefined ? undefined : decodeURIComponent(rest[1]),
    subresource: rest[2],
  };
}

async function readObject(req: IncomingMessage): Promise<unknown> {
  const type = String(req.headers["content-type"] ?? "application/json");
  if (type.includes("protobuf")) {
    throw new KubeApiError(
      415,
      "UnsupportedMediaType",
      "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
    );
  }
  const body = await readBody(req, BODY_LIMIT).catch((error: Error) => {
    throw new KubeApiError(413, "RequestEntityTooLarge", `the request is too large: ${error.message}`);
  });
  if (body.length === 0) return {};
  try {
    return JSON.parse(body.toString("utf8")) as unknown;
  } catch (error) {
    throw badRequest(`the body of the request could not be decoded: ${(error as Error).message}`);
  }
}

function listKind(definition: ResourceDefinition): string {
  return `${definition.kind}List`;
}

function deleteOptionsOf(url: URL, body: Record<string, unknown>): DeleteOptions {
  const grace = url.searchParams.get("gracePeriodSeconds") ?? (body.gracePeriodSeconds as number | undefined);
  const policy = (url.searchParams.get("propagationPolicy") ??
    body.propagationPolicy ??
    (body.orphanDependents === true ? "Orphan" : undefined)) as DeleteOptions["propagationPolicy"];
  if (policy !== undefined && !["Background", "Foreground", "Orphan"].includes(policy)) {
    throw badRequest(`propagationPolicy ${String(policy)} is not supported`);
  }
  return {
    ...(grace !== undefined && grace !== null ? { gracePeriodSeconds: Number(grace) } : {}),
    ...(policy ? { propagationPolicy: policy } : {}),
    ...(body.preconditions ? { preconditions: body.preconditions as DeleteOptions["preconditions"] } : {}),
    dryRun:
      url.searchParams.getAll("dryRun").includes("All") ||
      (Array.isArray(body.dryRun) && body.dryRun.includes("All")),
  };
}

/** Handles one REST request. */
export async function serveKubernetesApi(
  context: ApiContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  setRoute: (route: string) => void,
): Promise<void> {
  try {
    await route(context, req, res, url, setRoute);
  } catch (error) {
    req.resume();
    const failure =
      error instanceof KubeApiError
        ? error
        : new KubeApiError(
            500,
            "InternalError",
            `Internal error occurred: ${error instanceof Error ? error.message : String(error)}`,
          );
    if (!res.headersSent) sendJsonResponse(res, failure.code, failure.toStatus());
    else res.end();
  }
}

async function route(
  context: ApiContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  setRoute: (route: string) => void,
): Promise<void> {
  const path = url.pathname.replace(/\/+$/, "") || "/";
  const method = req.method ?? "GET";
  if (path === "/healthz" || path === "/livez" || path === "/readyz") {
    setRoute(`GET ${path}`);
    res.writeHead(200, { "Content-Type": "text/plain" });
    res.end("ok");
    return;
  }
  if (!context.authorized(req)) {
    setRoute(`${method} ${path}`);
    throw new KubeApiError(401, "Unauthorized", "Unauthorized");
  }
  if (path === "/version") {
    setRoute("GET /version");
    return sendJsonResponse(res, 200, versionInfo());
  }
  if (path === "/api") {
    setRoute("GET /api");
    return sendJsonResponse(res, 200, coreVersions(context.serverAddress()));
  }
  if (path === "/apis") {
    setRoute("GET /apis");
    return sendJsonResponse(res, 200, groupList());
  }
  const parts = path.split("/").filter((p) => p !== "");
  let group: string;
  let version: string;
  let rest: string[];
  if (parts[0] === "api" && parts[1] === "v1") {
    group = "";
    version = "v1";
    rest = parts.slice(2);
  } else if (parts[0] === "apis" && parts.length >= 2) {
    group = parts[1]!;
    if (parts.length === 2) {
      setRoute("GET /apis/{group}");
      const info = groupInfo(group);
      if (!info) throw new KubeApiError(404, "NotFound", "the server could not find the requested resource");
      return sendJsonResponse(res, 200, info);
    }
    version = parts[2]!;
    rest = parts.slice(3);
  } else {
    setRoute(`${method} ${path}`);
    throw new KubeApiError(404, "NotFound", "the server could not find the requested resource");
  }
  if (rest.length === 0) {
    setRoute(group ? "GET /apis/{group}/{version}" : "GET /api/v1");
    const list = resourceList(group, version);
    if (!list) throw new KubeApiError(404, "NotFound", "the server could not find the requested resource");
    return sendJsonResponse(res, 200, list);
  }
  const target = parseTarget(rest, group, version);
  if (!target) {
    setRoute(`${method} ${path}`);
    throw new KubeApiError(404, "NotFound", "the server could not find the requested resource");
  }
  const { definition, name, subresource } = target;
  const namespace = definition.namespaced ? target.namespace : undefined;
  if (definition.namespaced && name !== undefined && namespace === undefined) {
    throw new KubeApiError(404, "NotFound", "the server could not find the requested resource");
  }
  const base = `${group ? `/apis/${group}/${version}` : "/api/v1"}${definition.namespaced ? "/namespaces/{namespace}" : ""}/${definition.plural}`;
  setRoute(`${method} ${base}${name !== undefined ? "/{name}" : ""}${subresource ? `/${subresource}` : ""}`);
  if (subresource && !definition.subresources[subresource]) {
    throw new KubeApiError(404, "NotFound", "the server could not find the requested resource");
  }
  const dryRun = url.searchParams.getAll("dryRun").includes("All");

  if (name === undefined) {
    const matches = combine(
      labelSelector(url.searchParams.get("labelSelector")),
      fieldSelector(url.searchParams.get("fieldSelector"), FIELD_LABELS[definition.kind] ?? []),
    );
    if (method === "GET") {
      if (["true", "1"].includes(url.searchParams.get("watch") ?? "")) {
        const timeout = url.searchParams.get("timeoutSeconds");
        return serveWatch(context.store, req, res, {
          definition,
          namespace,
          matches,
          resourceVersion: url.searchParams.get("resourceVersion") ?? undefined,
          timeoutSeconds: timeout ? Number(timeout) : undefined,
        });
      }
      return sendList(context, req, res, url, definition, context.store.list(definition, namespace, matches));
    }
    if (method === "POST") {
      const body = (await readObject(req)) as KubeObject;
      checkKind(body, definition);
      if (definition.namespaced && namespace === undefined)
        throw new KubeApiError(404, "NotFound", "the server could not find the requested resource");
      const warnings = context.admissionWarnings(definition, body);
      const created = context.store.create(definition, namespace, body, { dryRun });
      return sendJsonResponse(res, 201, created, warningHeaders(warnings));
    }
    if (method === "DELETE") {
      const body = (await readObject(req)) as Record<string, unknown>;
      const options = deleteOptionsOf(url, body);
      const items = context.store
        .list(definition, namespace, matches)
        .map((o) => context.store.delete(definition, o.metadata.namespace, o.metadata.name ?? "", options));
      return sendJsonResponse(res, 200, {
        kind: listKind(definition),
        apiVersion: groupVersion(definition),
        metadata: { resourceVersion: context.store.resourceVersion },
        items,
      });
    }
    throw methodNotAllowed();
  }

  if (subresource === "log" && definition === POD) {
    if (method !== "GET") throw methodNotAllowed();
    const pod = context.store.require(POD, namespace, name);
    return serveLogs(
      pod,
      context.kubelet.runtime(namespace ?? "default", name),
      url,
      context.now(),
      req,
      res,
    );
  }
  if (subresource === "exec" || subresource === "attach" || subresource === "portforward") {
    req.resume();
    throw new KubeApiError(400, "BadRequest", "Upgrade request required");
  }
  if (subresource && subresource !== "status" && subresource !== "scale") throw methodNotAllowed();

  if (method === "GET") {
    const object = context.store.require(definition, namespace, name);
    if (subresource === "scale") return sendJsonResponse(res, 200, scaleOf(object));
    if (wantsTable(req.headers.accept)) return sendTable(context, res, url, definition, [object]);
    return sendJsonResponse(res, 200, object);
  }
  if (method === "PUT" || method === "PATCH") {
    const current = context.store.require(definition, namespace, name);
    const body = await readObject(req);
    let next: KubeObject;
    if (subresource === "scale") {
      const patched =
        method === "PUT"
          ? body
          : applyPatch(scaleOf(current), String(req.headers["content-type"] ?? ""), body);
      const replicas = (patched as { spec?: { replicas?: unknown } }).spec?.replicas;
      if (!Number.isInteger(replicas) || (replicas as number) < 0)
        throw badRequest("spec.replicas must be a non-negative integer");
      next = { ...current, spec: { ...(current.spec ?? {}), replicas } };
      return sendJsonResponse(res, 200, scaleOf(context.store.update(definition, next, { dryRun })));
    }
    if (method === "PUT") next = body as KubeObject;
    else {
      next = applyPatch(current, String(req.headers["content-type"] ?? ""), body) as KubeObject;
      // A patch applies to the current version unless it names one itself.
      if (!(body as { metadata?: { resourceVersion?: string } })?.metadata?.resourceVersion)
        next.metadata = { ...next.metadata, resourceVersion: current.metadata.resourceVersion };
    }
    if (!next || typeof next !== "object" || !next.metadata) throw badRequest("the object has no metadata");
    if (next.metadata.name !== undefined && next.metadata.name !== name) {
      throw badRequest(
        `the name of the object (${next.metadata.name}) does not match the name on the URL (${name})`,
      );
    }
    next.metadata.name = name;
    if (definition.namespaced) next.metadata.namespace = namespace;
    checkKind(next, definition);
    const warnings = subresource === "status" ? [] : context.admissionWarnings(definition, next);
    const updated = context.store.update(definition, next, {
      dryRun,
      ...(subresource === "status" ? { subresource: "status" as const } : {}),
    });
    return sendJsonResponse(res, 200, updated, warningHeaders(warnings));
  }
  if (method === "DELETE") {
    if (subresource) throw methodNotAllowed();
    const body = (await readObject(req)) as Record<string, unknown>;
    const deleted = context.store.delete(definition, namespace, name, deleteOptionsOf(url, body));
    return sendJsonResponse(res, 200, deleted);
  }
  throw methodNotAllowed();
}

function combine(a: Matcher, b: Matcher): Matcher {
  return (o) => a(o) && b(o);
}

function warningHeaders(warnings: readonly string[]): Record<string, string> {
  if (warnings.length === 0) return {};
  return { Warning: warnings.map((w) => `299 - ${JSON.stringify(w)}`).join(", ") };
}

function checkKind(object: KubeObject, definition: ResourceDefinition): void {
  if (!object || typeof object !== "object" || Array.isArray(object))
    throw badRequest("the body must be a JSON object");
  if (object.kind !== undefined && object.kind !== definition.kind) {
    throw badRequest(
      `the API version in the data (${object.apiVersion}) does not match the expected API version (${groupVersion(definition)}), or kind ${object.kind} is not ${definition.kind}`,
    );
  }
  if (object.apiVersion !== undefined && object.apiVersion !== groupVersion(definition)) {
    throw badRequest(
      `the API version in the data (${object.apiVersion}) does not match the expected API version (${groupVersion(definition)})`,
    );
  }
}

function scaleOf(object: KubeObject): Record<string, unknown> {
  return {
    kind: "Scale",
    apiVersion: "autoscaling/v1",
    metadata: {
      name: object.metadata.name,
      namespace: object.metadata.namespace,
      uid: object.metadata.uid,
      resourceVersion: object.metadata.resourceVersion,
    },
    spec: { replicas: (object.spec as { replicas?: number } | undefined)?.replicas ?? 1 },
    status: {
      replicas: (object.status as { replicas?: number } | undefined)?.replicas ?? 0,
      selector: (object.status as { selector?: string } | undefined)?.selector ?? "",
    },
  };
}

function sendTable(
  context: ApiContext,
  res: ServerResponse,
  url: URL,
  definition: ResourceDefinition,
  objects: KubeObject[],
): void {
  sendJsonResponse(
    res,
    200,
    toTable(
      definition,
      objects,
      context.now(),
      context.store.resourceVersion,
      url.searchParams.get("includeObject") ?? "Metadata",
    ),
  );
}

function sendList(
  context: ApiContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  definition: ResourceDefinition,
  items: KubeObject[],
): void {
  if (wantsTable(req.headers.accept)) {
    sendTable(context, res, url, definition, items);
    return;
  }
  sendJsonResponse(res, 200, {
    kind: listKind(definition),
    apiVersion: groupVersion(definition),
    metadata: { resourceVersion: context.store.resourceVersion },
    items,
  });
}
