/** Users of the test machine, read from /etc/passwd the way envd looks users up (`user.Lookup`). */
import { readFileSync } from "node:fs";
import { ConnectFailure } from "./e2b-test-connect-protocol.js";

/** A user account. */
export interface TestUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

/** Looks a user up by name; `undefined` when there is none. */
export function lookupUser(name: string): TestUser | undefined {
  for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
    const [user, , uid, gid, , home] = line.split(":");
    if (user === name && uid !== undefined && gid !== undefined) {
      return { name: user, uid: Number(uid), gid: Number(gid), home: home ?? "/" };
    }
  }
  return undefined;
}

/** The user of a request: `Authorization: Basic base64("<user>:")`, else the sandbox's default user. */
export function requestUser(authorization: string | undefined, fallback: string): TestUser {
  let name = fallback;
  if (authorization?.startsWith("Basic ")) {
    const decoded = Buffer.from(authorization.slice(6), "base64").toString("utf8");
    name = decoded.slice(0, decoded.indexOf(":") < 0 ? undefined : decoded.indexOf(":"));
  }
  const user = lookupUser(name);
  if (!user)
    throw new ConnectFailure(
      "unauthenticated",
      `error looking up user '${name}': user: unknown user ${name}`,
    );
  return user;
}
