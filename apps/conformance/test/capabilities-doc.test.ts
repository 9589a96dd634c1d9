import type { ConformanceReport } from "@sbox/conformance";
import { CAPABILITY_DESCRIPTIONS, EMULATION_DESCRIPTIONS, FLAG_DESCRIPTIONS } from "@sbox/core";
import { CAPABILITY_NAMES, type CapabilityMap } from "@sbox/core/spec";
import { describe, expect, it } from "vitest";
import { renderCapabilitiesDoc } from "../src/capabilities-doc.js";

function map(level: string, overrides: Record<string, string> = {}): CapabilityMap {
  return Object.fromEntries(
    CAPABILITY_NAMES.map((n) => [n, overrides[n] ?? level]),
  ) as unknown as CapabilityMap;
}

function report(provider: string, declared: CapabilityMap): ConformanceReport {
  return {
    provider,
    mode: "declared",
    runId: "r",
    startedAt: "2026-01-01T00:00:00.000Z",
    durationMs: 1,
    declared,
    effective: declared,
    flags: { previewModel: "localhost" } as ConformanceReport["flags"],
    cases: [],
    selection: { exclude: {}, notSelected: [] },
    leaked: [],
    summary: { passed: 0, failed: 0, skipped: 0, excluded: 0, coreOnly: 0 },
  };
}

describe("docs/capabilities.md", () => {
  const doc = renderCapabilitiesDoc([
    { target: "local (bwrap)", report: report("local", map("native", { volumes: "unsupported" })) },
    {
      target: "local (none)",
      report: report("local", map("native", { volumes: "unsupported", egressControl: "unsupported" })),
    },
    { target: "docker", report: report("docker", map("emulated")) },
  ]);
  const lines = doc.split("\n");

  it("describes every capability, flag and emulation from the code", () => {
    for (const name of CAPABILITY_NAMES) {
      expect(
        lines.some((line) => line.includes(`| \`${name}\` | ${CAPABILITY_DESCRIPTIONS[name].summary} |`)),
      ).toBe(true);
    }
    for (const flag of Object.keys(FLAG_DESCRIPTIONS)) expect(doc).toContain(`| \`${flag}\` |`);
    for (const emulation of EMULATION_DESCRIPTIONS)
      expect(doc).toContain(`| ${emulation.id} | ${emulation.emulates} |`);
  });

  it("tables what each provider declares, one column per provider, set-ups folded", () => {
    expect(lines).toContain("| capability | local | docker |");
    expect(lines).toContain("| volumes | — | emulated |");
    expect(lines).toContain("| egressControl | native/— | emulated |");
    expect(lines).toContain("| *previewModel* | localhost | localhost |");
  });

  it("has no provider table without runs", () => {
    expect(renderCapabilitiesDoc([])).not.toContain("What each provider declares");
  });
});
