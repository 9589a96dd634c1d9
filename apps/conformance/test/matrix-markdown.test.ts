import type { CaseReport, ConformanceReport } from "@sbox/conformance";
import { CAPABILITY_NAMES, type CapabilityMap } from "@sbox/core/spec";
import { describe, expect, it } from "vitest";
import { renderMatrix } from "../src/matrix-markdown.js";

function map(overrides: Partial<Record<string, string>>): CapabilityMap {
  return Object.fromEntries(
    CAPABILITY_NAMES.map((n) => [n, overrides[n] ?? "unsupported"]),
  ) as unknown as CapabilityMap;
}

function report(
  cases: CaseReport[],
  effective: CapabilityMap,
  mode: ConformanceReport["mode"] = "declared",
): ConformanceReport {
  const count = (s: string) => cases.filter((c) => c.status === s).length;
  return {
    provider: "fake",
    mode,
    runId: "r",
    startedAt: "2026-01-01T00:00:00.000Z",
    durationMs: 42_000,
    declared: effective,
    effective,
    flags: {} as ConformanceReport["flags"],
    cases,
    selection: { exclude: {}, notSelected: [] },
    leaked: [],
    summary: {
      passed: count("passed"),
      failed: count("failed"),
      skipped: count("skipped"),
      excluded: count("excluded"),
      coreOnly: cases.filter((c) => c.status === "passed" && c.coreOnly).length,
    },
  };
}

const at = new Date("2026-01-02T00:00:00Z");

describe("renderMatrix", () => {
  const cases: CaseReport[] = [
    { id: "exec.stdout.captured", title: "t", requires: [], status: "passed", ms: 1 },
    { id: "errors.validation.env-key", title: "t", requires: [], coreOnly: true, status: "passed", ms: 1 },
    {
      id: "pty.interactive",
      title: "t",
      requires: ["pty"],
      status: "failed",
      reason: "pty.interactive: expected | x",
      ms: 1,
    },
    { id: "files.watch.events", title: "t", requires: ["filesWatch"], status: "passed", ms: 1 },
    { id: "files.watch.recursive", title: "t", requires: ["filesWatch"], status: "passed", ms: 1 },
    {
      id: "unsupported.metrics",
      title: "t",
      requires: [],
      unsupportedOf: "metrics",
      coreOnly: true,
      status: "passed",
      ms: 1,
    },
    {
      id: "placement.region",
      title: "t",
      requires: ["region"],
      status: "skipped",
      reason: "needs fixtures.region",
      ms: 0,
    },
  ];
  const text = renderMatrix(
    [
      {
        target: "fake (x)",
        report: report(cases, map({ pty: "native", filesWatch: "emulated", region: "native" })),
      },
    ],
    [{ target: "e2b", reason: "live provider: set E2B_API_KEY to run it" }],
    { details: true, generatedAt: at },
  );
  const row = (name: string) => text.split("\n").find((line) => line.startsWith(`| ${name} |`));

  it("shows level and result per capability, one column per provider", () => {
    expect(row("capability")).toBe("| capability | fake |");
    expect(row("pty")).toBe("| pty | native ❌ 1/1 |");
    expect(row("filesWatch")).toBe("| filesWatch | emulated ✅ |");
    expect(row("metrics")).toBe("| metrics | — |");
    expect(row("*base contract*")).toBe("| *base contract* | ✅ |");
  });

  it("says when a declared capability went untested, apart from an unsupported one not checked", () => {
    expect(row("region")).toBe("| region | native ➖ untested |");
    expect(row("gpu")).toBe("| gpu | — ➖ |");
  });

  it("marks a capability with an excluded case partial, never ✅, and core-only passes as such", () => {
    const partial = report(
      [
        { id: "ports.expose.http", title: "t", requires: ["exposePort"], status: "passed", ms: 1 },
        {
          id: "ports.expose.after-resume",
          title: "t",
          requires: ["exposePort"],
          status: "excluded",
          reason: "needs a public DNS name",
          ms: 0,
        },
        {
          id: "network.egress.block-all",
          title: "t",
          requires: ["egressControl"],
          status: "excluded",
          reason: "test server",
          ms: 0,
        },
        { id: "exec.abort.x", title: "t", requires: ["streaming"], coreOnly: true, status: "passed", ms: 1 },
        { id: "exec.streaming.y", title: "t", requires: ["streaming"], status: "failed", reason: "r", ms: 1 },
        {
          id: "metrics.z",
          title: "t",
          requires: ["metrics"],
          coreOnly: true,
          status: "passed",
          ms: 1,
        },
      ],
      map({ exposePort: "native", egressControl: "native", streaming: "native", metrics: "emulated" }),
    );
    const lines = renderMatrix([{ target: "fake", report: partial }], [], {
      details: true,
      generatedAt: at,
    }).split("\n");
    const line = (name: string) => lines.find((l) => l.startsWith(`| ${name} |`));
    expect(line("exposePort")).toBe("| exposePort | native ◐ 1/2 |");
    expect(line("egressControl")).toBe("| egressControl | native ◐ 0/1 |");
    // An excluded case counts in the total of a failed cell too.
    expect(line("streaming")).toBe("| streaming | native ❌ 1/2 |");
    expect(line("metrics")).toBe("| metrics | emulated ➖ core only |");
    expect(lines).toContain("- ➖ `ports.expose.after-resume`: needs a public DNS name");
  });

  it("reads reports written before coreOnly existed", () => {
    const old = report(cases, map({}));
    const { coreOnly: _dropped, ...summary } = old.summary;
    const text = renderMatrix(
      [{ target: "old", report: { ...old, summary: summary as typeof old.summary } }],
      [],
      { details: false, generatedAt: at },
    );
    expect(text).toContain("| old | declared | 5 | 0 | 1 | 1 | 0 | 0 | 42 s |");
  });

  it("folds the modes and set-ups of one provider into its column", () => {
    const declared = report(
      [{ id: "exec.streaming.first-chunk", title: "t", requires: ["streaming"], status: "passed", ms: 1 }],
      map({ streaming: "native" }),
    );
    const primitives = report(
      [{ id: "exec.streaming.first-chunk", title: "t", requires: ["streaming"], status: "passed", ms: 1 }],
      map({ streaming: "emulated" }),
      "primitives-only",
    );
    const other = { ...declared, provider: "other" };
    const folded = renderMatrix(
      [
        { target: "fake (a)", report: declared },
        { target: "fake (a)", report: primitives },
        { target: "other", report: other },
      ],
      [],
      { details: false, generatedAt: at },
    );
    const lines = folded.split("\n");
    expect(lines.find((line) => line.startsWith("| capability |"))).toBe("| capability | fake | other |");
    expect(lines.find((line) => line.startsWith("| streaming |"))).toBe(
      "| streaming | native/emulated ✅ | native ✅ |",
    );
    // Readable in a terminal: no line of the matrix is wider than its widest cells need.
    expect(
      Math.max(...lines.filter((line) => line.startsWith("| ")).map((line) => line.length)),
    ).toBeLessThan(90);
  });

  it("summarises each run and names why a target did not run", () => {
    expect(row("provider")).toBe(
      "| provider | mode | passed | core-only | failed | skipped | excluded | leaked | time |",
    );
    // 5 passed, of which 2 hold only the core: counted apart.
    expect(row("fake (x)")).toBe("| fake (x) | declared | 3 | 2 | 1 | 1 | 0 | 0 | 42 s |");
    expect(text).toContain("- **e2b**: live provider: set E2B_API_KEY to run it");
  });

  it("lists failures with their reason, escaping table syntax", () => {
    expect(text).toContain("- ❌ `pty.interactive`: pty.interactive: expected \\| x");
    expect(renderMatrix([], [], { details: false, generatedAt: at })).toContain(
      "No provider could run here.",
    );
  });
});
