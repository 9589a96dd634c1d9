/**
 * Shapes and small helpers shared by the emulator's parts: an API object is plain JSON with `metadata`;
 * times are RFC 3339 with second precision as the API server writes them.
 */
import { signalNumber as linuxSignalNumber } from "@sbox/core/spec";

/** `metav1.ObjectMeta`, the fields the emulator reads and writes. */
export interface ObjectMeta {
  name?: string | undefined;
  generateName?: string | undefined;
  namespace?: string | undefined;
  uid?: string | undefined;
  resourceVersion?: string | undefined;
  generation?: number | undefined;
  creationTimestamp?: string | undefined;
  deletionTimestamp?: string | undefined;
  deletionGracePeriodSeconds?: number | undefined;
  labels?: Record<string, string> | undefined;
  annotations?: Record<string, string> | undefined;
  ownerReferences?: OwnerReference[] | undefined;
  finalizers?: string[] | undefined;
  [key: string]: unknown;
}

/** `metav1.OwnerReference`. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** Any API object. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: Record<string, unknown> | undefined;
  status?: Record<string, unknown> | undefined;
  [key: string]: unknown;
}

/** RFC 3339 at second precision (`2026-12-01T10:00:00Z`). */
export function timestamp(ms: number): string {
  return `${new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19)}Z`;
}

/** A deep copy (objects handed out must never alias the store's). */
export function clone<T>(value: T): T {
  return structuredClone(value);
}

/** A controller owner reference to `owner`. */
export function ownerReferenceTo(owner: KubeObject): OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name ?? "",
    uid: owner.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Whether `object` is controlled by the object with `uid`. */
export function isOwnedBy(object: KubeObject, uid: string): boolean {
  return (object.metadata.ownerReferences ?? []).some((ref) => ref.uid === uid);
}

/** A random lowercase alphanumeric suffix, as `generateName` gets (5 characters). */
export function nameSuffix(length = 5): string {
  const alphabet = "bcdfghjklmnpqrstvwxz2456789";
  let out = "";
  for (let i = 0; i < length; i++) out += alphabet[Math.floor(Math.random() * alphabet.length)];
  return out;
}

/** DNS-1123 subdomain (most object names). */
export const DNS_SUBDOMAIN: RegExp = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** DNS-1123 label (container and namespace names). */
export const DNS_LABEL: RegExp = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** FNV-1a 32-bit of `text` as 8 hex digits: agent-sandbox's NameHash for its tracking labels. */
export function nameHash(text: string): string {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, "utf8")) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

/** The number of a signal name (`SIGTERM` → 15; unknown names count as SIGKILL). */
export function signalNumber(signal: string): number {
  return linuxSignalNumber(signal) ?? 9;
}

/** The exit code a container runtime reports for a process: its code, or 128 + the signal that ended it. */
export function containerExitCode(exitCode: number, signal: string | undefined): number {
  return signal ? 128 + signalNumber(signal) : exitCode;
}
