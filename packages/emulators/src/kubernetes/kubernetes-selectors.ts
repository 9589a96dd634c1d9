/**
 * Label and field selectors as the API server parses them. Label selectors: `k=v`, `k==v`, `k!=v`,
 * `k in (a,b)`, `k notin (a,b)`, `k` (exists), `!k` (does not exist), joined by commas. Field selectors:
 * `path=v`, `path==v`, `path!=v` over the fields a resource supports (`metadata.name`,
 * `metadata.namespace`, and `status.phase`, `spec.nodeName`, `spec.restartPolicy` for pods). A selector that
 * does not parse is a 400, as on a real server.
 */
import { badRequest } from "./kubernetes-status.js";

/** A compiled selector: does an object match. */
export type Matcher = (object: Record<string, unknown>) => boolean;

type Requirement =
  | { key: string; op: "=" | "!="; value: string }
  | { key: string; op: "in" | "notin"; values: string[] }
  | { key: string; op: "exists" | "!exists" };

const KEY = /^([a-z0-9A-Z]([-a-z0-9A-Z.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$/;
const VALUE = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?)?$/;

/** Splits at commas outside parentheses. */
function terms(selector: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = "";
  for (const c of selector) {
    if (c === "(") depth += 1;
    if (c === ")") depth -= 1;
    if (c === "," && depth === 0) {
      out.push(current);
      current = "";
    } else current += c;
  }
  out.push(current);
  return out.map((t) => t.trim()).filter((t) => t !== "");
}

function parseLabelTerm(term: string): Requirement {
  const set = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term);
  if (set) {
    const values = set[3]!
      .split(",")
      .map((v) => v.trim())
      .filter((v) => v !== "");
    for (const v of values)
      if (!VALUE.test(v)) throw badRequest(`unable to parse requirement: invalid label value: "${v}"`);
    return { key: checkKey(set[1]!), op: set[2] as "in" | "notin", values };
  }
  const compare = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
  if (compare) {
    const value = compare[3]!.trim();
    if (!VALUE.test(value)) throw badRequest(`unable to parse requirement: invalid label value: "${value}"`);
    return { key: checkKey(compare[1]!), op: compare[2] === "!=" ? "!=" : "=", value };
  }
  if (term.startsWith("!")) return { key: checkKey(term.slice(1).trim()), op: "!exists" };
  return { key: checkKey(term), op: "exists" };
}

function checkKey(key: string): string {
  if (!KEY.test(key) || key.length > 317)
    throw badRequest(`unable to parse requirement: invalid label key "${key}"`);
  return key;
}

function matches(req: Requirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, req.key);
  const value = labels[req.key];
  switch (req.op) {
    case "=":
      return has && value === req.value;
    case "!=":
      return !has || value !== req.value;
    case "in":
      return has && req.values.includes(value!);
    case "notin":
      return !has || !req.values.includes(value!);
    case "exists":
      return has;
    case "!exists":
      return !has;
  }
}

/** Compiles a label selector string (empty selects everything). */
export function labelSelector(selector: string | null | undefined): Matcher {
  if (!selector) return () => true;
  const requirements = terms(selector).map(parseLabelTerm);
  return (object) => {
    const labels = ((object.metadata as { labels?: Record<string, string> } | undefined)?.labels ??
      {}) as Record<string, string>;
    return requirements.every((r) => matches(r, labels));
  };
}

/** A `LabelSelector` object (`matchLabels`, `matchExpressions`) as a predicate over a label map. */
export function labelSelectorObject(
  selector:
    | {
        matchLabels?: Record<string, string>;
        matchExpressions?: { key: string; operator: string; values?: string[] }[];
      }
    | undefined,
): (labels: Record<string, string>) => boolean {
  if (!selector) return () => false;
  const requirements: Requirement[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {}))
    requirements.push({ key, op: "=", value });
  for (const e of selector.matchExpressions ?? []) {
    const op = e.operator;
    if (op === "In") requirements.push({ key: e.key, op: "in", values: e.values ?? [] });
    else if (op === "NotIn") requirements.push({ key: e.key, op: "notin", values: e.values ?? [] });
    else if (op === "Exists") requirements.push({ key: e.key, op: "exists" });
    else if (op === "DoesNotExist") requirements.push({ key: e.key, op: "!exists" });
    else return () => false;
  }
  return (labels) => requirements.every((r) => matches(r, labels));
}

function fieldValue(object: Record<string, unknown>, path: string): string | undefined {
  let current: unknown = object;
  for (const part of path.split(".")) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  if (current === undefined || current === null) return "";
  return typeof current === "string" ? current : String(current);
}

/** Compiles a field selector over the fields `allowed` names (always `metadata.name` and `metadata.namespace`). */
export function fieldSelector(selector: string | null | undefined, allowed: readonly string[] = []): Matcher {
  if (!selector) return () => true;
  const fields = new Set(["metadata.name", "metadata.namespace", ...allowed]);
  const requirements = terms(selector).map((term) => {
    const m = /^([^=!]+)(==|=|!=)(.*)$/.exec(term);
    if (!m) throw badRequest(`invalid selector: '${selector}'; can't understand '${term}'`);
    const field = m[1]!.trim();
    if (!fields.has(field)) throw badRequest(`field label not supported: ${field}`);
    return { field, negate: m[2] === "!=", value: m[3]!.trim() };
  });
  return (object) =>
    requirements.every((r) => {
      const equal = fieldValue(object, r.field) === r.value;
      return r.negate ? !equal : equal;
    });
}
