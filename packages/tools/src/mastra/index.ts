/** `@sbox/tools/mastra`: the sandbox tools as Mastra tools. Needs `@mastra/core`. */
export type { MastraTool, MastraToolsOptions } from "./mastra-tools.js";
export { createMastraTools } from "./mastra-tools.js";
