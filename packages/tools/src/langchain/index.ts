/** `@sbox/tools/langchain`: the sandbox tools as LangChain tools. Needs `@langchain/core`. */
export { createLangChainTools } from "./langchain-tools.js";
