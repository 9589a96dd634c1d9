/**
 * A scripted stand-in for the Anthropic Messages API on 127.0.0.1, so the SDK's own client and tool runner
 * run their real HTTP loop: each POST /v1/messages is answered by `respond(body)`.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A running scripted server. */
export interface ScriptedServer {
  readonly url: string;
  /** Every request body received, parsed. */
  readonly requests: Record<string, unknown>[];
  close(): Promise<void>;
}

/** Starts the server; `respond` returns the assistant message content and stop reason for a request. */
export async function startScriptedMessages(
  respond: (body: Record<string, unknown>) => { content: unknown[]; stop_reason: string },
): Promise<ScriptedServer> {
  const requests: Record<string, unknown>[] = [];
  const server: Server = createServer((request, response) => {
    let raw = "";
    request.on("data", (chunk: Buffer) => {
      raw += chunk.toString("utf8");
    });
    request.on("end", () => {
      if (request.method !== "POST" || !request.url?.startsWith("/v1/messages")) {
        response.writeHead(404, { "content-type": "application/json" });
        response.end(
          JSON.stringify({ type: "error", error: { type: "not_found_error", message: request.url } }),
        );
        return;
      }
      const body = JSON.parse(raw) as Record<string, unknown>;
      requests.push(body);
      const answer = respond(body);
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          id: `msg_${requests.length}`,
          type: "message",
          role: "assistant",
          model: String(body.model),
          content: answer.content,
          stop_reason: answer.stop_reason,
          stop_sequence: null,
          usage: { input_tokens: 1, output_tokens: 1 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Tool results in a Messages request, in order (text of each block). */
export function toolResultsOf(body: Record<string, unknown>): { text: string; isError: boolean }[] {
  const results: { text: string; isError: boolean }[] = [];
  for (const message of (body.messages ?? []) as { role: string; content: unknown }[]) {
    if (!Array.isArray(message.content)) continue;
    for (const block of message.content as { type: string; content?: unknown; is_error?: boolean }[]) {
      if (block.type !== "tool_result") continue;
      const content = block.content;
      const text =
        typeof content === "string"
          ? content
          : (content as { text?: string }[]).map((c) => c.text ?? "").join("");
      results.push({ text, isError: block.is_error === true });
    }
  }
  return results;
}
