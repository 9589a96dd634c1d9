/**
 * The templates an emulated sandbox can start from: E2B's base template (`base`, the backend's default
 * image laid out as E2B's base image), any extra names the user maps to backend templates, and snapshots.
 *
 * A snapshot is a template too (E2B names it `<namespace>/<name>:default` or `<id>:default`). Where the
 * backend can seed a new sandbox from its own snapshot (`honours: "template"` and the snapshot
 * capability: Docker commits an image), the snapshot is the backend's; elsewhere it is a gzip tarball of the
 * sandbox's home and `/tmp` kept in the emulator's memory and unpacked into a fresh base sandbox — files
 * only, which is all E2B's snapshot API promises to a new sandbox anyway (processes never carry over).
 */
import { randomBytes } from "node:crypto";
import type { AnyCapabilities, Sandbox, SnapshotRef } from "@sbox/core";

/** How machines of a template are made. */
export type E2BTemplateSource =
  | { readonly kind: "backend"; readonly template?: string | undefined }
  | {
      readonly kind: "backend-snapshot";
      readonly template: string;
      readonly ref: SnapshotRef;
      /** A sandbox of the backend to delete the snapshot through (the one it was taken from). */
      readonly owner: Sandbox<AnyCapabilities>;
    }
  | { readonly kind: "archive"; readonly archive: Buffer; readonly base: E2BTemplate };

/** A template or snapshot. */
export interface E2BTemplate {
  readonly templateID: string;
  /** Names users pass to `Sandbox.create` (`base`, `team/name`). */
  readonly aliases: readonly string[];
  /** Full names (`namespace/alias:tag`). */
  readonly names: readonly string[];
  readonly createdAt: Date;
  readonly snapshot: boolean;
  /** The sandbox a snapshot was taken from. */
  readonly sourceSandboxID?: string | undefined;
  readonly source: E2BTemplateSource;
}

/**
 * More templates: names that run on the backend's default image, or names mapped to a backend template
 * each (a Docker image per E2B template, say; `undefined` for the default).
 */
export type E2BExtraTemplates = readonly string[] | Readonly<Record<string, string | undefined>>;

/** The id of E2B's base template (E2B's public `base` template id). */
export const BASE_TEMPLATE_ID = "rki5dems9wqfm4r03t7g";

/** The namespace snapshot names live in (E2B uses the team's slug). */
export const SNAPSHOT_NAMESPACE = "emulator";

function newTemplateId(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  return [...randomBytes(20)].map((b) => alphabet[b % alphabet.length]).join("");
}

/** Strips a `:tag` from a template reference. */
function withoutTag(reference: string): string {
  const slash = reference.lastIndexOf("/");
  const colon = reference.lastIndexOf(":");
  return colon > slash ? reference.slice(0, colon) : reference;
}

/** The registry of templates of one emulator. */
export class E2BTemplates {
  private readonly byId = new Map<string, E2BTemplate>();

  /**
   * `extra` maps more template names to backend templates (a Docker image per E2B template, say); `base`
   * is always there and uses the backend's default.
   */
  constructor(now: Date, extra: E2BExtraTemplates = {}) {
    const add = (id: string, alias: string, template: string | undefined) =>
      this.byId.set(id, {
        templateID: id,
        aliases: [alias],
        names: [alias],
        createdAt: now,
        snapshot: false,
        source: { kind: "backend", template },
      });
    add(BASE_TEMPLATE_ID, "base", undefined);
    const entries = Array.isArray(extra)
      ? extra.map((alias): [string, string | undefined] => [alias, undefined])
      : Object.entries(extra as Readonly<Record<string, string | undefined>>);
    for (const [alias, template] of entries) {
      if (alias === "base") throw new TypeError('the template "base" is always there; pick another name');
      add(newTemplateId(), alias, template);
    }
  }

  /** Finds a template by id, alias or full name (a `:tag` is ignored). */
  resolve(reference: string): E2BTemplate | undefined {
    const bare = withoutTag(reference);
    const direct = this.byId.get(bare);
    if (direct) return direct;
    for (const template of this.byId.values()) {
      if (template.aliases.includes(bare) || template.names.some((name) => withoutTag(name) === bare)) {
        return template;
      }
    }
    return undefined;
  }

  /** Records a snapshot taken from `sourceSandboxID`; `name` becomes `emulator/<name>`. */
  addSnapshot(
    source: E2BTemplateSource,
    sourceSandboxID: string,
    name: string | undefined,
    now: Date,
  ): E2BTemplate {
    const existing = name ? this.resolve(`${SNAPSHOT_NAMESPACE}/${name}`) : undefined;
    const id = existing?.templateID ?? newTemplateId();
    const alias = name ? `${SNAPSHOT_NAMESPACE}/${name}` : undefined;
    const template: E2BTemplate = {
      templateID: id,
      aliases: alias ? [alias, name!] : [],
      names: alias ? [`${alias}:default`] : [`${id}:default`],
      createdAt: now,
      snapshot: true,
      sourceSandboxID,
      source,
    };
    this.byId.set(id, template);
    return template;
  }

  /** The id a snapshot is referred to by (`snapshotID` in E2B's answers). */
  static snapshotIdOf(template: E2BTemplate): string {
    return template.names[0] ?? `${template.templateID}:default`;
  }

  /** Removes a template; `undefined` when there was none. */
  remove(reference: string): E2BTemplate | undefined {
    const template = this.resolve(reference);
    if (!template) return undefined;
    this.byId.delete(template.templateID);
    return template;
  }

  /** Every template, oldest first. */
  all(): E2BTemplate[] {
    return [...this.byId.values()].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  }
}
