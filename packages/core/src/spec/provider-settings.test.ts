/** loadSetting: explicit value, else environment variable, else default, always validated. */
import { afterEach, describe, expect, test } from "vitest";
import { SandboxError } from "../errors/sandbox-error.js";
import { invalidSetting, loadSetting, readEnv, settingParsers } from "./provider-settings.js";

const VARIABLE = "SBOX_TEST_SETTING_VALUE";

afterEach(() => {
  delete process.env[VARIABLE];
});

function validationMessage(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(SandboxError.isInstance(error)).toBe(true);
    expect((error as SandboxError).code).toBe("Validation");
    expect((error as SandboxError).provider).toBe("demo");
    return (error as SandboxError).message;
  }
  throw new Error("expected a Validation error");
}

describe("loadSetting", () => {
  const timeout = (value: unknown) =>
    loadSetting(
      "demo",
      { option: "requestTimeoutMs", value, env: VARIABLE, parse: settingParsers.positiveNumber },
      30_000,
    );

  test("the explicit value wins, then the environment variable, then the default", () => {
    process.env[VARIABLE] = "1500";
    expect(timeout(250)).toBe(250);
    expect(timeout(undefined)).toBe(1500);
    delete process.env[VARIABLE];
    expect(timeout(undefined)).toBe(30_000);
    process.env[VARIABLE] = "";
    expect(timeout(undefined)).toBe(30_000);
    expect(
      loadSetting("demo", { option: "x", value: undefined, parse: settingParsers.string }),
    ).toBeUndefined();
  });

  test("a bad value is a Validation error naming the option or the variable, and the value", () => {
    expect(validationMessage(() => timeout(-1))).toBe(
      "demo(): requestTimeoutMs must be a positive number, got -1",
    );
    process.env[VARIABLE] = "soon";
    expect(validationMessage(() => timeout(undefined))).toBe(
      'demo(): the environment variable SBOX_TEST_SETTING_VALUE must be a positive number, got "soon"',
    );
  });

  test("a secret setting is never quoted", () => {
    const message = validationMessage(() =>
      loadSetting("demo", {
        option: "apiKey",
        value: "key with spaces 123",
        secret: true,
        parse: settingParsers.matching(/^\S+$/, "be a key without spaces"),
      }),
    );
    expect(message).toBe("demo(): apiKey must be a key without spaces");
  });

  test("parsers: integers, booleans, URLs and custom ones", () => {
    const read = <T>(value: unknown, parse: (raw: unknown, from: "option" | "env") => T) =>
      loadSetting("demo", { option: "o", value, parse });
    expect(read(3, settingParsers.nonNegativeInteger)).toBe(3);
    expect(() => read(1.5, settingParsers.nonNegativeInteger)).toThrow(/non-negative integer/);
    process.env[VARIABLE] = "yes";
    expect(
      loadSetting("demo", { option: "o", value: undefined, env: VARIABLE, parse: settingParsers.boolean }),
    ).toBe(true);
    expect(read("https://api.example.test/", settingParsers.url(["https:"]))).toBe(
      "https://api.example.test",
    );
    expect(() => read("ftp://x", settingParsers.url(["https:"]))).toThrow(/https: URL/);
    const even = (raw: unknown) =>
      typeof raw === "number" && raw % 2 === 0 ? raw : invalidSetting("be even");
    expect(() => read(3, even)).toThrow("demo(): o must be even, got 3");
  });

  test("readEnv treats an empty variable as unset", () => {
    process.env[VARIABLE] = "";
    expect(readEnv(VARIABLE)).toBeUndefined();
    process.env[VARIABLE] = "v";
    expect(readEnv(VARIABLE)).toBe("v");
  });
});
