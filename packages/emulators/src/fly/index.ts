/** `@sbox/emulators/fly`: an offline Fly Machines API. */
export {};
