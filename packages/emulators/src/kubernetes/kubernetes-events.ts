/**
 * Core `v1 Event`s about objects (`Scheduled`, `Pulling`, `Failed`, `BackOff`, `Killing`...), as the
 * kubelet and controllers record them, so `kubectl describe` and `kubectl get events` show what happened.
 * Repeats of the same event bump its `count`.
 */
import type { EmulatorClock } from "../clock.js";
import { type KubeObject, nameSuffix, timestamp } from "./kubernetes-objects.js";
import { EVENT } from "./kubernetes-resources.js";
import type { KubernetesStore } from "./kubernetes-store.js";

/** Records events about objects. */
export type EventRecorder = (
  involved: KubeObject,
  type: "Normal" | "Warning",
  reason: string,
  message: string,
  component?: string,
) => void;

/** An event recorder writing into `store`. */
export function eventRecorder(store: KubernetesStore, clock: EmulatorClock): EventRecorder {
  return (involved, type, reason, message, component = "kubelet") => {
    const namespace = involved.metadata.namespace ?? "default";
    const now = timestamp(clock.now());
    try {
      const same = store
        .list(EVENT, namespace)
        .find(
          (e) =>
            (e.involvedObject as { uid?: string } | undefined)?.uid === involved.metadata.uid &&
            e.reason === reason &&
            e.message === message,
        );
      if (same) {
        same.count = Number(same.count ?? 1) + 1;
        same.lastTimestamp = now;
        store.update(EVENT, same);
        return;
      }
      store.create(EVENT, namespace, {
        apiVersion: "v1",
        kind: "Event",
        metadata: { name: `${involved.metadata.name}.${nameSuffix(10)}`, namespace },
        involvedObject: {
          apiVersion: involved.apiVersion,
          kind: involved.kind,
          name: involved.metadata.name,
          namespace,
          uid: involved.metadata.uid,
          resourceVersion: involved.metadata.resourceVersion,
        },
        reason,
        message,
        type,
        source: { component },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
        reportingComponent: component,
        reportingInstance: "sbox-emulator",
      });
    } catch {
      // A namespace being deleted takes no new events; nothing to record then.
    }
  };
}
