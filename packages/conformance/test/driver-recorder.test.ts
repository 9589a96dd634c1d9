import { afterEach, describe, expect, it } from "vitest";
import { minimalShProvider } from "../../../examples/minimal-sh-provider/src/index.js";
import { createDriverRecorder } from "../src/index.js";
import { fixtureRoot } from "./fixtures/broken-providers.js";

const removals: (() => void)[] = [];
afterEach(() => {
  for (const remove of removals.splice(0)) remove();
});

describe("createDriverRecorder", () => {
  it("logs every driver call with the sandbox it was about, and leaves absent methods absent", async () => {
    const fixture = fixtureRoot();
    removals.push(fixture.remove);
    const recorder = createDriverRecorder();
    const provider = recorder.record(minimalShProvider({ root: fixture.root }));
    expect(provider.doExecStream).toBeUndefined();
    expect("doExecStream" in provider).toBe(false);
    expect(provider.name).toBe("minimal-sh");

    const signal = new AbortController().signal;
    const start = recorder.mark();
    const sandbox = await provider.doCreate({}, { signal });
    const mark = recorder.mark();
    const result = await provider.doExec(sandbox, { command: { argv: ["printf", "%s", "hi"] }, signal });
    await provider.doDestroy(sandbox, { signal });

    expect(new TextDecoder().decode(result.stdout as Uint8Array)).toBe("hi");
    expect(recorder.since(start).map((c) => c.method)).toEqual(["doCreate", "doExec", "doDestroy"]);
    expect(recorder.since(mark, { sandboxId: sandbox.id }).map((c) => [c.method, c.sandboxId])).toEqual([
      ["doExec", sandbox.id],
      ["doDestroy", sandbox.id],
    ]);
    expect(recorder.since(mark, { sandboxId: "another" })).toEqual([]);
  });
});
