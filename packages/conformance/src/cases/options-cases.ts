import { SandboxError } from "@sbox/core/spec";
import { ConformanceFailure, ConformanceSkip, show } from "../assertions.js";
import type { ConformanceCase } from "../conformance-case.js";

/** The option name the kit offers a provider factory; no provider has it. */
const UNKNOWN_OPTION = "sboxConformanceNoSuchOption";

/** Provider options: a factory checks what it is given, like the core checks a spec. */
export function optionsCases(): ConformanceCase[] {
  return [
    {
      id: "options.unknown-refused",
      title:
        "the provider factory refuses an option it does not know with a Validation error naming it, instead of ignoring it",
      requires: [],
      async run(ctx) {
        let outcome: unknown;
        try {
          const provider = ctx.providerWithOptions({ [UNKNOWN_OPTION]: true });
          await provider.doDispose?.().catch(() => {});
          outcome = provider;
        } catch (error) {
          if (error instanceof ConformanceSkip) throw error;
          outcome = error;
        }
        if (!SandboxError.isInstance(outcome)) {
          throw new ConformanceFailure(
            `expected the factory to throw a Validation SandboxError for option ${UNKNOWN_OPTION}, got ${outcome instanceof Error ? show(outcome) : "a provider (the option was accepted and ignored)"}`,
          );
        }
        if (outcome.code !== "Validation") {
          throw new ConformanceFailure(`expected code Validation, got ${outcome.code}: ${outcome.message}`);
        }
        if (!outcome.message.includes(UNKNOWN_OPTION)) {
          throw new ConformanceFailure(
            `expected the message to name the option ${UNKNOWN_OPTION}, got ${show(outcome.message)}`,
          );
        }
      },
    },
  ];
}
