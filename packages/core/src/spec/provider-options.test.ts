import { describe, expect, test } from "vitest";
import { SandboxError } from "../errors/sandbox-error.js";
import { optionRules, validateProviderOptions } from "./provider-options.js";

const rules = {
  image: optionRules.nonEmptyString(),
  isolation: optionRules.oneOf(["auto", "none"]),
  requestTimeoutMs: optionRules.positiveNumber("a positive number of milliseconds"),
  apiKey: optionRules.secret(),
  network: optionRules.object({ egress: optionRules.oneOf(["allow-all", "block-all"]) }),
};

function problem(options: unknown): string {
  try {
    validateProviderOptions("demo", options, rules);
  } catch (error) {
    if (SandboxError.isInstance(error) && error.code === "Validation") return error.message;
    throw error;
  }
  return "accepted";
}

describe("validateProviderOptions", () => {
  test("an unknown key is refused, naming it and the accepted ones, with the near miss suggested", () => {
    expect(problem({ bogus: 1 })).toBe(
      'demo(): unknown option "bogus"; the options are image, isolation, requestTimeoutMs, apiKey, network',
    );
    expect(problem({ isolaton: "none" })).toMatch(
      /^demo\(\): unknown option "isolaton" \(did you mean "isolation"\?\)/,
    );
    expect(problem({ network: { egres: "block-all" } })).toMatch(
      /unknown option "network\.egres" \(did you mean "network\.egress"\?\); the options are network\.egress$/,
    );
  });

  test("a value of the wrong kind is refused, naming the key and what it takes", () => {
    expect(problem({ requestTimeoutMs: "abc" })).toBe(
      'demo(): option requestTimeoutMs must be a positive number of milliseconds, got "abc"',
    );
    expect(problem({ isolation: "bwrap" })).toBe(
      'demo(): option isolation must be one of "auto", "none", got "bwrap"',
    );
    expect(problem({ network: { egress: "some" } })).toMatch(/option network\.egress must be one of/);
    expect(problem({ network: "block-all" })).toMatch(/option network must be an object/);
    expect(problem("image=x")).toMatch(/options must be an object/);
  });

  test("a credential of the wrong kind is refused without showing it; undefined means not given", () => {
    const message = problem({ apiKey: 1234567890 });
    expect(message).toBe("demo(): option apiKey must be a non-empty string");
    expect(message).not.toContain("1234567890");
    expect(problem({ image: undefined, apiKey: undefined })).toBe("accepted");
    expect(problem(undefined)).toBe("accepted");
    expect(problem({ image: "busybox", network: { egress: "block-all" } })).toBe("accepted");
  });
});
