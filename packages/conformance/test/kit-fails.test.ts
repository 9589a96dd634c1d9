import { afterEach, describe, expect, it } from "vitest";
import { minimalShProvider } from "../../../examples/minimal-sh-provider/src/index.js";
import { expectNoDriverCall } from "../src/cases/case-helpers.js";
import {
  type CaseReport,
  type ConformanceReport,
  defineConformanceCases,
  runConformanceReport,
} from "../src/index.js";
import {
  claimsPtyNative,
  dropsStderr,
  fixtureRoot,
  leaksSandboxes,
  liesAboutExitCodes,
} from "./fixtures/broken-providers.js";

const roots: (() => void)[] = [];
afterEach(() => {
  for (const remove of roots.splice(0)) remove();
});

function root(): string {
  const fixture = fixtureRoot();
  roots.push(fixture.remove);
  return fixture.root;
}

function caseOf(report: ConformanceReport, id: string): CaseReport {
  const found = report.cases.find((c) => c.id === id);
  if (!found) throw new Error(`no case ${id} in the report: ${report.cases.map((c) => c.id).join(", ")}`);
  return found;
}

describe("the kit fails broken providers, naming the case and the expectation", () => {
  it("a provider that drops stderr fails exec.stderr.separate", async () => {
    const dir = root();
    const report = await runConformanceReport({
      provider: () => dropsStderr(dir),
      only: ["exec.stderr.separate", "exec.stdout.captured"],
    });
    const failed = caseOf(report, "exec.stderr.separate");
    expect(failed.status).toBe("failed");
    expect(failed.reason).toBe('exec.stderr.separate: expected stderr "err\\nerr2\\n", got ""');
    expect(caseOf(report, "exec.stdout.captured").status).toBe("passed");
    expect(report.leaked).toEqual([]);
  });

  it("a factory that ignores an option it does not know fails options.unknown-refused; one that refuses it passes", async () => {
    const dir = root();
    const ignoring = await runConformanceReport({
      provider: () => dropsStderr(dir),
      providerWithOptions: () => dropsStderr(dir),
      only: ["options.unknown-refused"],
    });
    const failed = caseOf(ignoring, "options.unknown-refused");
    expect(failed.status).toBe("failed");
    expect(failed.reason).toContain("a provider (the option was accepted and ignored)");
    const checking = await runConformanceReport({
      provider: () => minimalShProvider({ root: dir }),
      providerWithOptions: (extra) => minimalShProvider({ root: dir, ...extra }),
      only: ["options.unknown-refused"],
    });
    expect(caseOf(checking, "options.unknown-refused").status).toBe("passed");
    const without = await runConformanceReport({
      provider: () => minimalShProvider({ root: dir }),
      only: ["options.unknown-refused"],
    });
    expect(caseOf(without, "options.unknown-refused")).toMatchObject({
      status: "skipped",
      reason: expect.stringContaining("providerWithOptions"),
    });
  });

  it("a provider that reports 1 for every non-zero exit code fails the exit-code cases", async () => {
    const dir = root();
    const report = await runConformanceReport({
      provider: () => liesAboutExitCodes(dir),
      only: ["exec.exit-code"],
    });
    const all = caseOf(report, "exec.exit-code.all-values");
    expect(all.status).toBe("failed");
    expect(all.reason).toMatch(
      /^exec\.exit-code\.all-values: expected each exit code back exactly; 254 wrong: .*exit 2 gave 1/,
    );
    expect(caseOf(report, "exec.exit-code.non-zero-is-data").reason).toBe(
      "exec.exit-code.non-zero-is-data: expected exit code 3, got 1",
    );
    expect(caseOf(report, "exec.exit-code.command-not-found").reason).toBe(
      "exec.exit-code.command-not-found: expected exit code of a missing program 127, got 1",
    );
  });

  it("a provider that claims pty native without doCreatePty fails the manifest case, and every other case says why", async () => {
    const dir = root();
    const report = await runConformanceReport({
      provider: () => claimsPtyNative(dir),
      only: ["manifest", "exec.stdout.captured"],
    });
    const manifest = caseOf(report, "manifest.declaration");
    expect(manifest.status).toBe("failed");
    expect(manifest.reason).toContain(
      "manifest.declaration: expected checkProviderManifest to report no problem, got 1",
    );
    expect(manifest.reason).toContain("pty is declared native but driver method doCreatePty is missing");
    const other = caseOf(report, "exec.stdout.captured");
    expect(other.status).toBe("failed");
    expect(other.reason).toMatch(
      /^exec\.stdout\.captured: createSandboxClient rejected the provider: .*doCreatePty/,
    );
  });

  it("a provider whose destroy leaves the sandbox running fails the destroy case and the leak check", async () => {
    const dir = root();
    const report = await runConformanceReport({
      provider: () => leaksSandboxes(dir),
      only: ["lifecycle.destroy.idempotent"],
    });
    const destroy = caseOf(report, "lifecycle.destroy.idempotent");
    expect(destroy.status).toBe("failed");
    expect(destroy.reason).toBe(
      'lifecycle.destroy.idempotent: expected getInfo().state after destroy "destroyed", got "running"',
    );
    const leak = caseOf(report, "run.no-sandbox-left");
    expect(leak.status).toBe("failed");
    expect(leak.reason).toMatch(
      /^run\.no-sandbox-left: expected no sandbox left, found 1: minimal-sh:[0-9a-f]{16} \(state running\)/,
    );
    expect(report.leaked).toHaveLength(1);
    expect(report.summary.failed).toBe(2);
  });
});

describe("the same cases pass on the healthy provider they were broken from", () => {
  it("passes the cases the fixtures fail, leaves nothing behind, and reports skips and exclusions apart", async () => {
    const dir = root();
    const report = await runConformanceReport({
      provider: () => minimalShProvider({ root: dir }),
      only: [
        "manifest",
        "exec.stderr.separate",
        "exec.exit-code",
        "lifecycle.destroy",
        "pty",
        "unsupported.pty",
        "unsupported.metrics",
        "exec.stdout",
      ],
      exclude: { "exec.stdout.captured": "shown as excluded by this test" },
    });
    const byStatus = (status: string) => report.cases.filter((c) => c.status === status).map((c) => c.id);
    expect(byStatus("failed")).toEqual([]);
    expect(byStatus("passed")).toEqual([
      "manifest.declaration",
      "manifest.effective-capabilities",
      "lifecycle.destroy.idempotent",
      "lifecycle.destroy.ends-processes",
      "exec.stderr.separate",
      "exec.exit-code.all-values",
      "exec.exit-code.non-zero-is-data",
      "exec.exit-code.command-not-found",
      "exec.exit-code.spoofed-marker",
      "exec.stdout.binary",
      "unsupported.pty",
      "run.no-sandbox-left",
    ]);
    // Cases that hold only the core are labelled, and counted apart.
    const coreOnly = report.cases.filter((c) => c.coreOnly).map((c) => c.id);
    expect(coreOnly).toEqual(["manifest.effective-capabilities", "unsupported.pty", "unsupported.metrics"]);
    expect(report.summary.coreOnly).toBe(2);
    expect(report.summary.passed).toBe(12);
    // The report says how the cases were chosen: what `only` left out is named, not hidden.
    expect(report.selection.only).toEqual([
      "manifest",
      "exec.stderr.separate",
      "exec.exit-code",
      "lifecycle.destroy",
      "pty",
      "unsupported.pty",
      "unsupported.metrics",
      "exec.stdout",
    ]);
    expect(report.selection.exclude).toEqual({ "exec.stdout.captured": "shown as excluded by this test" });
    expect(report.selection.notSelected).toContain("files.write.binary-roundtrip");
    expect(report.selection.notSelected).not.toContain("exec.stderr.separate");
    expect(report.selection.notSelected.length + report.cases.length - 1).toBe(
      defineConformanceCases().length,
    );
    expect(caseOf(report, "pty.interactive")).toMatchObject({
      status: "skipped",
      reason: "requires pty, which minimal-sh declares unsupported",
    });
    expect(caseOf(report, "unsupported.metrics")).toMatchObject({
      status: "skipped",
      reason: "not applicable: metrics is emulated (the positive cases hold it)",
    });
    expect(caseOf(report, "exec.stdout.captured")).toMatchObject({
      status: "excluded",
      reason: "excluded: shown as excluded by this test",
    });
    expect(report).toMatchObject({ provider: "minimal-sh", mode: "declared", leaked: [] });
    expect(report.effective.pty).toBe("unsupported");
  });

  it("refuses an exclude entry that names no case", async () => {
    const dir = root();
    await expect(
      runConformanceReport({
        provider: () => minimalShProvider({ root: dir }),
        exclude: { "exec.no-such-case": "typo" },
      }),
    ).rejects.toMatchObject({ code: "Validation", message: expect.stringContaining("exec.no-such-case") });
  });

  it("proves a refusal happened before the provider: a probe that reaches the driver fails the case", async () => {
    const dir = root();
    const report = await runConformanceReport({
      provider: () => minimalShProvider({ root: dir }),
      only: ["kit.self-test"],
      extraCases: [
        {
          id: "kit.self-test.driver-reached",
          title: "a probe that calls the provider is caught",
          requires: [],
          run: async (ctx) => {
            const sandbox = await ctx.quietSandbox();
            await expectNoDriverCall(ctx, sandbox, "getInfo()", () => sandbox.getInfo());
          },
        },
      ],
    });
    expect(caseOf(report, "kit.self-test.driver-reached").reason).toBe(
      "kit.self-test.driver-reached: expected getInfo() to be refused before any provider call, but the driver was called: doGetInfo",
    );
    expect(report.leaked).toEqual([]);
  });
});
