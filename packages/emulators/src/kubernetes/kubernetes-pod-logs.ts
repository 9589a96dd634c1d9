/**
 * `GET .../pods/<name>/log`: the container's output as plain text, with `tailLines`, `sinceSeconds`,
 * `sinceTime`, `timestamps`, `limitBytes`, `previous` (the instance before the last restart) and `follow`
 * (streamed as written until the container ends or the client goes away). A container that has not
 * started yet answers 400 `... is waiting to start: <reason>`, as the kubelet does.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ContainerLog } from "./kubernetes-container-log.js";
import type { PodRuntime } from "./kubernetes-kubelet.js";
import type { KubeObject } from "./kubernetes-objects.js";
import { podSpecOf } from "./kubernetes-pod-admission.js";
import { badRequest } from "./kubernetes-status.js";

function integer(url: URL, name: string): number | undefined {
  const raw = url.searchParams.get(name);
  if (raw === null || raw === "") return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw badRequest(`invalid ${name}: ${raw}`);
  return value;
}

/** Serves one log request. */
export async function serveLogs(
  pod: KubeObject,
  runtime: PodRuntime | undefined,
  url: URL,
  now: number,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const container = podSpecOf(pod).containers[0]!;
  const asked = url.searchParams.get("container");
  if (asked && asked !== container.name)
    throw badRequest(`container ${asked} is not valid for pod ${pod.metadata.name}`);
  const previous = ["true", "1"].includes(url.searchParams.get("previous") ?? "");
  const follow = ["true", "1"].includes(url.searchParams.get("follow") ?? "");
  const timestamps = ["true", "1"].includes(url.searchParams.get("timestamps") ?? "");
  const tailLines = integer(url, "tailLines");
  const limitBytes = integer(url, "limitBytes");
  const sinceSeconds = integer(url, "sinceSeconds");
  const sinceTime = url.searchParams.get("sinceTime");
  const sinceMs =
    sinceSeconds !== undefined ? now - sinceSeconds * 1000 : sinceTime ? Date.parse(sinceTime) : undefined;
  const log: ContainerLog | undefined = previous ? runtime?.previousLog : runtime?.log;
  if (previous && !log)
    throw badRequest(
      `previous terminated container "${container.name}" in pod "${pod.metadata.name}" not found`,
    );
  const statuses = (
    (pod.status ?? {}) as { containerStatuses?: { state?: { waiting?: { reason?: string } } }[] }
  ).containerStatuses;
  const waiting = statuses?.[0]?.state?.waiting?.reason;
  if (!log || (!previous && waiting && !runtime?.running && log.read({}).text.length === 0)) {
    throw badRequest(
      `container "${container.name}" in pod "${pod.metadata.name}" is waiting to start: ${waiting ?? "ContainerCreating"}`,
    );
  }
  res.writeHead(200, { "Content-Type": "text/plain", ...(follow ? { "Transfer-Encoding": "chunked" } : {}) });
  const first = log.read({ tailLines, sinceMs, limitBytes, timestamps });
  res.write(first.text);
  let sent = first.text.length;
  if (!follow) {
    res.end();
    return;
  }
  let gone = false;
  req.on("close", () => {
    gone = true;
  });
  let position = first.next;
  while (!gone && (limitBytes === undefined || sent < limitBytes)) {
    for (const chunk of log.since(position)) {
      position = chunk.seq + 1;
      let bytes = timestamps
        ? Buffer.concat([Buffer.from(`${new Date(chunk.at).toISOString()} `), chunk.bytes])
        : chunk.bytes;
      if (limitBytes !== undefined) bytes = bytes.subarray(0, Math.max(0, limitBytes - sent));
      res.write(bytes);
      sent += bytes.length;
    }
    if (log.finished && log.since(position).length === 0) break;
    await log.changed(1_000);
  }
  res.end();
}
