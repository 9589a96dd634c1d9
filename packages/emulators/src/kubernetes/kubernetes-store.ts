/**
 * The emulated etcd and the generic parts of the API server's registry: objects by resource, namespace and
 * name; one global `resourceVersion` counter; a bounded history of changes that watches resume from (older
 * versions answer 410 Expired, as after a compaction); admission hooks per resource (defaulting,
 * validation, immutable fields); graceful deletion (an object that needs it keeps a `deletionTimestamp`
 * until its owner finishes it, as the kubelet does for pods); and the garbage collector — removing an
 * object deletes every object whose `ownerReferences` name it (background propagation), or strips the
 * reference (`Orphan`).
 */
import { randomUUID } from "node:crypto";
import type { EmulatorClock } from "../clock.js";
import { clone, DNS_SUBDOMAIN, type KubeObject, nameSuffix, timestamp } from "./kubernetes-objects.js";
import { groupVersion, NAMESPACE, type ResourceDefinition } from "./kubernetes-resources.js";
import type { Matcher } from "./kubernetes-selectors.js";
import { alreadyExists, conflict, invalid, KubeApiError, notFound } from "./kubernetes-status.js";

/** What happened to an object. */
export type ChangeType = "ADDED" | "MODIFIED" | "DELETED";

/** One change, as watches deliver it. */
export interface StoreEvent {
  readonly type: ChangeType;
  readonly definition: ResourceDefinition;
  readonly object: KubeObject;
  readonly resourceVersion: number;
}

/** Per-resource behaviour of the registry. */
export interface AdmissionHooks {
  /** Defaults and validates a new object (throw a `KubeApiError` to refuse it). */
  create?(object: KubeObject): void;
  /** Validates an update of the main resource (`previous` is the stored object). */
  update?(next: KubeObject, previous: KubeObject): void;
  /** `"graceful"` keeps the object with a `deletionTimestamp` until `finishDeletion` (pods). */
  deletion?(object: KubeObject, gracePeriodSeconds: number | undefined): "graceful" | "immediate";
}

/** How long the change history is (watches from older versions get 410). */
const HISTORY_LIMIT = 10_000;

/** Options of a delete. */
export interface DeleteOptions {
  readonly gracePeriodSeconds?: number | undefined;
  readonly propagationPolicy?: "Background" | "Foreground" | "Orphan" | undefined;
  readonly preconditions?: { uid?: string; resourceVersion?: string } | undefined;
  readonly dryRun?: boolean | undefined;
}

function keyOf(definition: ResourceDefinition, namespace: string | undefined, name: string): string {
  return `${definition.group}/${definition.plural}/${definition.namespaced ? (namespace ?? "") : ""}/${name}`;
}

/** The object store of one emulator. */
export class KubernetesStore {
  private readonly objects = new Map<string, { definition: ResourceDefinition; object: KubeObject }>();
  private readonly history: StoreEvent[] = [];
  private readonly listeners = new Set<(event: StoreEvent) => void>();
  private readonly hooks = new Map<ResourceDefinition, AdmissionHooks>();
  private version = 1000;

  constructor(private readonly clock: EmulatorClock) {}

  /** The current resourceVersion (of the whole store, as list answers carry it). */
  get resourceVersion(): string {
    return String(this.version);
  }

  /** Installs the admission hooks of one resource. */
  setHooks(definition: ResourceDefinition, hooks: AdmissionHooks): void {
    this.hooks.set(definition, hooks);
  }

  /** Calls `listener` with every change, after it is stored. */
  subscribe(listener: (event: StoreEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Changes after `resourceVersion`, or `"expired"` when the history no longer reaches back that far. */
  changesSince(resourceVersion: number): StoreEvent[] | "expired" {
    const oldest = this.history[0]?.resourceVersion ?? this.version + 1;
    if (resourceVersion < oldest - 1 && resourceVersion < this.version) return "expired";
    return this.history.filter((e) => e.resourceVersion > resourceVersion);
  }

  private emit(type: ChangeType, definition: ResourceDefinition, object: KubeObject): void {
    const event: StoreEvent = { type, definition, object: clone(object), resourceVersion: this.version };
    this.history.push(event);
    if (this.history.length > HISTORY_LIMIT) this.history.splice(0, this.history.length - HISTORY_LIMIT);
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // A failing watcher or controller must not break the write that notified it.
      }
    }
  }

  private bump(object: KubeObject): void {
    this.version += 1;
    object.metadata.resourceVersion = String(this.version);
  }

  /** A copy of the object, or `undefined`. */
  get(definition: ResourceDefinition, namespace: string | undefined, name: string): KubeObject | undefined {
    const entry = this.objects.get(keyOf(definition, namespace, name));
    return entry ? clone(entry.object) : undefined;
  }

  /** A copy of the object; 404 when absent. */
  require(definition: ResourceDefinition, namespace: string | undefined, name: string): KubeObject {
    const found = this.get(definition, namespace, name);
    if (!found) throw notFound(definition.plural, definition.group, name);
    return found;
  }

  /** Copies of the objects of a resource, in one namespace or all, that `matcher` accepts; sorted by name. */
  list(definition: ResourceDefinition, namespace?: string | undefined, matcher?: Matcher): KubeObject[] {
    const out: KubeObject[] = [];
    for (const entry of this.objects.values()) {
      if (entry.definition !== definition) continue;
      if (namespace !== undefined && definition.namespaced && entry.object.metadata.namespace !== namespace)
        continue;
      if (matcher && !matcher(entry.object as unknown as Record<string, unknown>)) continue;
      out.push(clone(entry.object));
    }
    out.sort((a, b) =>
      `${a.metadata.namespace ?? ""}/${a.metadata.name}`.localeCompare(
        `${b.metadata.namespace ?? ""}/${b.metadata.name}`,
      ),
    );
    return out;
  }

  /** Stores a new object: names it (`generateName`), sets uid, versions and timestamps, runs admission. */
  create(
    definition: ResourceDefinition,
    namespace: string | undefined,
    input: KubeObject,
    options: { dryRun?: boolean | undefined } = {},
  ): KubeObject {
    const object = clone(input);
    object.apiVersion = groupVersion(definition);
    object.kind = definition.kind;
    object.metadata = { ...(object.metadata ?? {}) };
    const meta = object.metadata;
    if (definition.namespaced) {
      if (meta.namespace && namespace && meta.namespace !== namespace) {
        throw new KubeApiError(
          400,
          "BadRequest",
          "the namespace of the provided object does not match the namespace sent on the request",
        );
      }
      meta.namespace = namespace ?? meta.namespace ?? "default";
      const ns = this.get(NAMESPACE, undefined, meta.namespace);
      if (!ns) throw notFound("namespaces", "", meta.namespace);
      if ((ns.status as { phase?: string } | undefined)?.phase === "Terminating") {
        throw new KubeApiError(
          403,
          "Forbidden",
          `${definition.plural} "${meta.name ?? meta.generateName ?? ""}" is forbidden: unable to create new content in namespace ${meta.namespace} because it is being terminated`,
        );
      }
    } else {
      delete meta.namespace;
    }
    if (!meta.name) {
      if (!meta.generateName) {
        throw invalid(definition.kind, definition.group, "", [
          {
            field: "metadata.name",
            message: "Required value: name or generateName is required",
            reason: "FieldValueRequired",
          },
        ]);
      }
      do meta.name = `${meta.generateName}${nameSuffix()}`;
      while (this.objects.has(keyOf(definition, meta.namespace, meta.name)));
    }
    if (meta.name.length > 253 || !DNS_SUBDOMAIN.test(meta.name)) {
      throw invalid(definition.kind, definition.group, meta.name, [
        {
          field: "metadata.name",
          message: `Invalid value: "${meta.name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
        },
      ]);
    }
    const key = keyOf(definition, meta.namespace, meta.name);
    if (this.objects.has(key)) throw alreadyExists(definition.plural, definition.group, meta.name);
    meta.uid = randomUUID();
    meta.creationTimestamp = timestamp(this.clock.now());
    meta.generation = 1;
    delete meta.resourceVersion;
    delete meta.deletionTimestamp;
    this.hooks.get(definition)?.create?.(object);
    if (options.dryRun) return object;
    this.bump(object);
    this.objects.set(key, { definition, object });
    this.emit("ADDED", definition, object);
    return clone(object);
  }

  /**
   * Replaces an object. `subresource: "status"` changes only `status`; otherwise `status` is kept (for
   * resources with a status subresource) and `metadata.generation` moves when `spec` changed. A stale
   * `resourceVersion` is a 409 Conflict.
   */
  update(
    definition: ResourceDefinition,
    input: KubeObject,
    options: { subresource?: "status" | undefined; dryRun?: boolean | undefined } = {},
  ): KubeObject {
    const name = input.metadata?.name ?? "";
    const namespace = definition.namespaced ? input.metadata?.namespace : undefined;
    const entry = this.objects.get(keyOf(definition, namespace, name));
    if (!entry) throw notFound(definition.plural, definition.group, name);
    const previous = entry.object;
    if (
      input.metadata.resourceVersion &&
      input.metadata.resourceVersion !== previous.metadata.resourceVersion
    ) {
      throw conflict(
        definition.plural,
        definition.group,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
      );
    }
    if (input.metadata.uid && input.metadata.uid !== previous.metadata.uid) {
      throw conflict(
        definition.plural,
        definition.group,
        name,
        "Precondition failed: UID in object meta does not match",
      );
    }
    let next: KubeObject;
    if (options.subresource === "status") {
      next = clone(previous);
      next.status = clone(input.status ?? {});
    } else {
      next = clone(input);
      next.apiVersion = previous.apiVersion;
      next.kind = previous.kind;
      // The server owns these.
      next.metadata = {
        ...next.metadata,
        uid: previous.metadata.uid,
        creationTimestamp: previous.metadata.creationTimestamp,
        generation: previous.metadata.generation,
        ...(definition.namespaced ? { namespace: previous.metadata.namespace } : {}),
      };
      if (previous.metadata.deletionTimestamp) {
        next.metadata.deletionTimestamp = previous.metadata.deletionTimestamp;
        next.metadata.deletionGracePeriodSeconds = previous.metadata.deletionGracePeriodSeconds;
      }
      if (definition.subresources.status) next.status = clone(previous.status);
      if (JSON.stringify(next.spec ?? null) !== JSON.stringify(previous.spec ?? null)) {
        next.metadata.generation = (previous.metadata.generation ?? 1) + 1;
      }
      this.hooks.get(definition)?.update?.(next, previous);
    }
    if (options.dryRun) return next;
    if (JSON.stringify(next) === JSON.stringify(previous)) return clone(previous);
    this.bump(next);
    entry.object = next;
    this.emit("MODIFIED", definition, next);
    if (
      next.metadata.deletionTimestamp &&
      (next.metadata.finalizers ?? []).length === 0 &&
      previous.metadata.finalizers?.length
    ) {
      this.remove(definition, next.metadata.namespace, name);
    }
    return clone(next);
  }

  /**
   * Deletes an object: graceful ones get a `deletionTimestamp` (their owner calls {@link remove} when
   * done), others are removed now, as are those whose finalizers are empty.
   */
  delete(
    definition: ResourceDefinition,
    namespace: string | undefined,
    name: string,
    options: DeleteOptions = {},
  ): KubeObject {
    const entry = this.objects.get(keyOf(definition, namespace, name));
    if (!entry) throw notFound(definition.plural, definition.group, name);
    const current = entry.object;
    const pre = options.preconditions;
    if (pre?.uid && pre.uid !== current.metadata.uid) {
      throw conflict(
        definition.plural,
        definition.group,
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    if (pre?.resourceVersion && pre.resourceVersion !== current.metadata.resourceVersion) {
      throw conflict(
        definition.plural,
        definition.group,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
      );
    }
    if (options.dryRun) return clone(current);
    const mode =
      this.hooks.get(definition)?.deletion?.(clone(current), options.gracePeriodSeconds) ?? "immediate";
    const finalizers = current.metadata.finalizers ?? [];
    if (mode === "graceful" || finalizers.length > 0) {
      if (!current.metadata.deletionTimestamp) {
        const next = clone(current);
        next.metadata.deletionTimestamp = timestamp(
          this.clock.now() + (options.gracePeriodSeconds ?? 0) * 1000,
        );
        next.metadata.deletionGracePeriodSeconds = options.gracePeriodSeconds ?? 0;
        this.bump(next);
        entry.object = next;
        this.emit("MODIFIED", definition, next);
      }
      if (options.propagationPolicy === "Orphan") this.orphanDependents(current.metadata.uid ?? "");
      return clone(entry.object);
    }
    return this.remove(definition, namespace, name, options.propagationPolicy);
  }

  /** Removes an object for good and collects its dependents. */
  remove(
    definition: ResourceDefinition,
    namespace: string | undefined,
    name: string,
    propagation: DeleteOptions["propagationPolicy"] = "Background",
  ): KubeObject {
    const key = keyOf(definition, namespace, name);
    const entry = this.objects.get(key);
    if (!entry) throw notFound(definition.plural, definition.group, name);
    this.objects.delete(key);
    const gone = clone(entry.object);
    this.bump(gone);
    this.emit("DELETED", definition, gone);
    const uid = gone.metadata.uid ?? "";
    if (propagation === "Orphan") this.orphanDependents(uid);
    else this.collectDependents(uid);
    return gone;
  }

  private dependentsOf(uid: string): { definition: ResourceDefinition; object: KubeObject }[] {
    return [...this.objects.values()].filter((e) =>
      (e.object.metadata.ownerReferences ?? []).some((r) => r.uid === uid),
    );
  }

  private collectDependents(uid: string): void {
    for (const { definition, object } of this.dependentsOf(uid)) {
      try {
        this.delete(definition, object.metadata.namespace, object.metadata.name ?? "");
      } catch {
        // Already gone.
      }
    }
  }

  private orphanDependents(uid: string): void {
    for (const { definition, object } of this.dependentsOf(uid)) {
      const next = clone(object);
      next.metadata.ownerReferences = (next.metadata.ownerReferences ?? []).filter((r) => r.uid !== uid);
      this.update(definition, next);
    }
  }
}
