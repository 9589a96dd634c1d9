import { describe, expect, it } from "vitest";
import { isUsageError } from "./usage-error.js";
import { parseDuration, parseEnv, parseInteger, parseLabels, parseProviderOptions } from "./value-parsers.js";

describe("value parsers", () => {
  it("parse durations with units; a bare number is seconds", () => {
    expect(parseDuration("500ms", "--t")).toBe(500);
    expect(parseDuration("30", "--t")).toBe(30_000);
    expect(parseDuration("1.5m", "--t")).toBe(90_000);
    expect(parseDuration("2h", "--t")).toBe(7_200_000);
    expect(parseDuration("1d", "--t")).toBe(86_400_000);
    for (const bad of ["", "0", "-1s", "1y", "soon", "1 h", "1e3"]) {
      expect(() => parseDuration(bad, "--t")).toThrow(/--t/);
    }
  });

  it("parse labels keeping = and hostile text in values", () => {
    expect(parseLabels(["a=b=c", "k=", "x=$(rm -rf /) 'q'\n"])).toEqual({
      a: "b=c",
      k: "",
      x: "$(rm -rf /) 'q'\n",
    });
    for (const bad of ["novalue", "=v", "bad key=v"]) {
      let thrown: unknown;
      try {
        parseLabels([bad]);
      } catch (error) {
        thrown = error;
      }
      expect(isUsageError(thrown)).toBe(true);
    }
  });

  it("parse env, copying a bare name from the host environment", () => {
    expect(parseEnv(["A=1", "B", "C=x=y"], { B: "from host" })).toEqual({ A: "1", B: "from host", C: "x=y" });
    expect(() => parseEnv(["MISSING"], {})).toThrow(/not set/);
    expect(() => parseEnv(["1A=x"], {})).toThrow(/invalid variable name/);
    expect(() => parseEnv(["A-B=x"], {})).toThrow(/invalid variable name/);
  });

  it("parse integers within bounds only", () => {
    expect(parseInteger("8080", "PORT", 1, 65535)).toBe(8080);
    for (const bad of ["0", "65536", "-1", "1.5", "0x10", " 80", ""]) {
      expect(() => parseInteger(bad, "PORT", 1, 65535)).toThrow(/PORT/);
    }
  });

  it("parse provider options into booleans, numbers, JSON and strings", () => {
    expect(parseProviderOptions(["a=true", "b=12", 'c={"x":1}', "d=text", "e=1.5.6"])).toEqual({
      a: true,
      b: 12,
      c: { x: 1 },
      d: "text",
      e: "1.5.6",
    });
    expect(() => parseProviderOptions(["c={bad"])).toThrow(/invalid JSON/);
  });
});
