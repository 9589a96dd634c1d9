/**
 * Namespaces: created `Active`; deleting one makes it `Terminating`, deletes everything in it (pods
 * gracefully, through the kubelet), and removes it once nothing is left, as the namespace controller does.
 * New objects in a terminating namespace are refused (403) by the store.
 */
import type { KubeObject } from "./kubernetes-objects.js";
import { NAMESPACE, RESOURCES } from "./kubernetes-resources.js";
import type { KubernetesStore } from "./kubernetes-store.js";

/** Installs the namespace behaviour on `store`; returns the function that stops it. */
export function manageNamespaces(store: KubernetesStore): () => void {
  store.setHooks(NAMESPACE, {
    create(namespace: KubeObject) {
      namespace.spec = { finalizers: ["kubernetes"] };
      namespace.status = { phase: "Active" };
      namespace.metadata.labels = {
        ...(namespace.metadata.labels ?? {}),
        "kubernetes.io/metadata.name": namespace.metadata.name ?? "",
      };
    },
    deletion: () => "graceful",
  });
  const emptying = new Set<string>();
  const sweep = (name: string) => {
    const left = RESOURCES.filter((r) => r.namespaced).some((r) => store.list(r, name).length > 0);
    if (left) return;
    emptying.delete(name);
    try {
      store.remove(NAMESPACE, undefined, name);
    } catch {
      // Already gone.
    }
  };
  return store.subscribe((event) => {
    if (
      event.definition === NAMESPACE &&
      event.type === "MODIFIED" &&
      event.object.metadata.deletionTimestamp
    ) {
      const name = event.object.metadata.name ?? "";
      if (emptying.has(name)) return;
      emptying.add(name);
      const terminating = store.get(NAMESPACE, undefined, name);
      if (terminating && (terminating.status as { phase?: string } | undefined)?.phase !== "Terminating") {
        terminating.status = { phase: "Terminating" };
        store.update(NAMESPACE, terminating, { subresource: "status" });
      }
      for (const definition of RESOURCES.filter((r) => r.namespaced)) {
        for (const object of store.list(definition, name)) {
          try {
            store.delete(definition, name, object.metadata.name ?? "");
          } catch {
            // Gone meanwhile.
          }
        }
      }
      queueMicrotask(() => sweep(name));
      return;
    }
    if (event.type === "DELETED" && event.definition.namespaced) {
      const ns = event.object.metadata.namespace ?? "";
      if (emptying.has(ns)) queueMicrotask(() => sweep(ns));
    }
  });
}
