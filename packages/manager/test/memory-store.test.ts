import { memoryStore } from "../src/memory-store.js";
import { storeSuite } from "./store-suite.js";

storeSuite("memory", {
  async fresh() {
    return { store: memoryStore(), another: () => undefined, cleanup: async () => {} };
  },
});
