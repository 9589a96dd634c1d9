import { describe, expect, it } from "vitest";
import { colourEnabled, createColours, stripAnsi } from "./colour.js";
import { formatBytes, formatDuration } from "./format.js";
import { toJson } from "./json-output.js";
import { renderProgressLine } from "./progress-bar.js";
import { startSpinner } from "./spinner.js";
import { renderTable } from "./table.js";

describe("colour", () => {
  it("is on only for a terminal, and NO_COLOR always wins", () => {
    expect(colourEnabled({ isTTY: true }, {})).toBe(true);
    expect(colourEnabled({ isTTY: false }, {})).toBe(false);
    expect(colourEnabled({ isTTY: true }, { NO_COLOR: "1" })).toBe(false);
    expect(colourEnabled({ isTTY: true }, { NO_COLOR: "" })).toBe(true);
    expect(colourEnabled({ isTTY: true }, { TERM: "dumb" })).toBe(false);
    expect(colourEnabled({ isTTY: false }, { FORCE_COLOR: "1" })).toBe(true);
    expect(colourEnabled({ isTTY: false }, { FORCE_COLOR: "1", NO_COLOR: "1" })).toBe(false);
    expect(createColours(false).red("x")).toBe("x");
    expect(stripAnsi(createColours(true).red("x"))).toBe("x");
  });
});

describe("renderTable", () => {
  it("aligns columns by visible width, ignoring colour codes, and keeps cells on one line", () => {
    const colours = createColours(true);
    const text = renderTable(
      [
        { id: "a", state: colours.green("running"), labels: "k=v\nnext" },
        { id: "longer-id", state: "stopped", labels: "-" },
      ],
      [
        { header: "ID", cell: (row) => row.id },
        { header: "STATE", cell: (row) => row.state },
        { header: "LABELS", cell: (row) => row.labels },
      ],
    );
    const lines = text.trimEnd().split("\n").map(stripAnsi);
    expect(lines).toEqual([
      "ID          STATE     LABELS",
      "a           running   k=v next",
      "longer-id   stopped   -",
    ]);
  });
});

describe("toJson", () => {
  it("writes dates as ISO strings, survives cycles, drops functions", () => {
    const value: Record<string, unknown> = { at: new Date("2024-01-02T03:04:05.000Z"), fn: () => 1, n: 1n };
    value.self = value;
    expect(JSON.parse(toJson(value))).toEqual({ at: "2024-01-02T03:04:05.000Z", n: "1", self: "[circular]" });
  });
});

describe("progress and spinner", () => {
  it("renders a bar with percent, amounts and rate", () => {
    const line = renderProgressLine("file.bin", 512 * 1024, 1024 * 1024, 1000, 100);
    expect(line).toMatch(/^file\.bin\s+\[#{12}-{12}\]\s+50%\s+512\.0 KiB \/ 1\.0 MiB\s+512\.0 KiB\/s$/);
    expect(renderProgressLine("x", 10, 0, 0, 80)).toContain("10 B");
    expect(formatBytes(3 * 1024 * 1024 * 1024)).toBe("3.0 GiB");
  });

  it("draws nothing when the wait is shorter than its delay or when disabled", async () => {
    const written: string[] = [];
    const stream = { isTTY: true, write: (chunk: string | Uint8Array) => written.push(String(chunk)) > 0 };
    const quick = startSpinner(stream, "fast", { enabled: true, delayMs: 200 });
    quick.stop();
    startSpinner(stream, "off", { enabled: false, delayMs: 0 }).stop();
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(written).toEqual([]);
    const slow = startSpinner(stream, "slow", { enabled: true, delayMs: 10 });
    await new Promise((resolve) => setTimeout(resolve, 60));
    slow.stop();
    expect(written.join("")).toContain("slow");
    expect(written.at(-1)).toBe("\r\x1b[2K");
  });
});

describe("formatDuration", () => {
  it("rounds before choosing the unit", () => {
    expect(formatDuration(999)).toBe("999ms");
    expect(formatDuration(59_600)).toBe("1m");
    expect(formatDuration(3_599_000)).toBe("1h");
    expect(formatDuration(-90_000)).toBe("2m");
    expect(formatDuration(23.6 * 3_600_000)).toBe("1d");
  });
});
