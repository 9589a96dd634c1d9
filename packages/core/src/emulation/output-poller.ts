import { SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import { exitCodeForSignal } from "../sandbox/signal-names.js";
import type { DriverExit, DriverSandbox } from "../spec/provider-spec.js";
import { abortReasonOf } from "./e7-timeout.js";
import {
  type EmulationContext,
  fitsCommandLine,
  noteStdoutKind,
  stateDirOf,
  stdoutIsRaw,
} from "./emulation-context.js";
import { type ExitTokens, provenExitCode } from "./exit-proof.js";
import { relativeRunDir } from "./output-detached.js";
import {
  BACKGROUND_HOLD,
  FOREGROUND_HOLD,
  type HoldSchedule,
  type PollMember,
  pollCapFor,
  pollScript,
  type RunPoll,
  takeRunPoll,
} from "./output-poll-script.js";
import { randomHex } from "./random-hex.js";
import { shellQuote } from "./shell-quote.js";

/** How a followed run ended, with its exit code. */
export type FollowedExit = DriverExit & { exitCode: number };

/** What {@link followRun} follows and where the output goes. */
export interface FollowRequest {
  /** Absolute run directory, inside the sandbox's state directory. */
  readonly dir: string;
  /** Aborting stops following (the caller decides whether to kill); the promise rejects with its reason. */
  readonly signal: AbortSignal;
  /** Remove the run directory in the poll that delivers the end (E3); E4 keeps it for list/connect. */
  readonly removeWhenDone: boolean;
  /** What the command is, for error messages. */
  readonly what: string;
  /**
   * The run's exit tokens when this client started it: then only a proof ends the run, and exit codes
   * written by other processes of the sandbox are ignored. Without them the `exit` file is trusted.
   */
  readonly tokens?: ExitTokens | undefined;
  /** A command someone waits on (E3): its end is looked for more often than a background process's. */
  readonly foreground: boolean;
  /** What the start exec's poll (from offset 0) saw. */
  readonly initial?: RunPoll | undefined;
  /** Output, in order. */
  onStdout(chunk: Uint8Array): void;
  onStderr(chunk: Uint8Array): void;
  /**
   * Back-pressure (see `DriverOutputCallbacks.ready`): asked after each delivery; while its promise is
   * pending nothing more is fetched for this run, so a slow consumer holds at most one poll's worth of
   * output in memory.
   */
  readonly ready?: (() => PromiseLike<void> | undefined) | undefined;
}

/** How long to wait before looking again at a run whose supervisor seemed gone. */
const LOST_CONFIRM_DELAY_MS = 100;
/** How long a run directory left behind (its end was seen before its supervisor exited) waits for a poll. */
const REMOVAL_DELAY_MS = 500;
/** Runs in one poll at most (more wait for the next tick, in turn). */
const MAX_POLL_MEMBERS = 200;
/** The bound of a poll exec beyond its hold. */
const POLL_EXEC_SLACK_MS = 60_000;

type FollowerState = "idle" | "polling" | "delivering" | "waiting" | "finished";

/** One followed run inside a poller. */
class Follower implements PollMember {
  readonly dir: string;
  readonly offsets = { out: 0, err: 0 };
  readonly seen = { out: 0, err: 0 };
  proofsSeen = 0;
  state: FollowerState = "idle";
  lostBefore = false;
  exit: FollowedExit | undefined;
  readonly done: Promise<FollowedExit>;
  resolve!: (exit: FollowedExit) => void;
  reject!: (error: unknown) => void;

  constructor(
    readonly request: FollowRequest,
    relativeDir: string,
  ) {
    this.dir = relativeDir;
    this.done = new Promise<FollowedExit>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  get removeWhenDone(): boolean {
    return this.request.removeWhenDone;
  }

  get proven(): boolean {
    return this.request.tokens !== undefined;
  }

  /** Output the sandbox holds that was not fetched yet, or an end that waits for its output. */
  get mustPollNow(): boolean {
    return (
      this.offsets.out < this.seen.out ||
      this.offsets.err < this.seen.err ||
      this.exit !== undefined ||
      this.lostBefore
    );
  }
}

/**
 * One poller per sandbox (and state directory) and emulation context: it serves every followed command
 * (E3) and background process (E4) of that sandbox with one exec per tick. A tick is a held poll: the exec
 * waits inside the sandbox, looking often at first and then less often, until any followed run has new
 * output, has ended, is gone or lost its supervisor, or until the hold ends (3 s with a foreground command,
 * 5 s with background processes only), then reports every run at once. So output is fetched as soon as it
 * is written, the end is seen within one look (at most 40 ms for a foreground command, 100 ms otherwise),
 * and idle processes cost one exec per hold, not one per process per interval. While output flows, polls
 * follow each other at once. A run that joins while a held poll is in flight is polled at once on its own,
 * and that poll wakes the held one, so the next tick covers everyone.
 */
class SandboxPoller {
  private readonly followers = new Set<Follower>();
  private held:
    | { readonly members: readonly Follower[]; readonly controller: AbortController; woken: boolean }
    | undefined;
  private inFlight = 0;
  private tickQueued = false;
  private rotation = 0;
  /** This poller's wake file, relative to the state directory. */
  private readonly wake = `poll/${randomHex(8)}`;
  /** Run directories (relative) to remove with the next poll, or on their own after a short while. */
  private removals: string[] = [];
  private removalTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly ctx: EmulationContext,
    private readonly sandbox: DriverSandbox,
    private readonly stateDir: string,
    private readonly onIdle: () => void,
  ) {}

  follow(request: FollowRequest): Promise<FollowedExit> {
    const follower = new Follower(request, relativeRunDir({ dir: request.dir, stateDir: this.stateDir }));
    if (request.signal.aborted) return Promise.reject(abortReasonOf(request.signal.reason, request.what));
    this.followers.add(follower);
    const onAbort = (): void => this.finish(follower, abortReasonOf(request.signal.reason, request.what));
    request.signal.addEventListener("abort", onAbort, { once: true });
    follower.done.then(
      () => request.signal.removeEventListener("abort", onAbort),
      () => request.signal.removeEventListener("abort", onAbort),
    );
    if (request.initial) this.apply(follower, request.initial);
    else this.queueTick();
    return follower.done;
  }

  /** Ends following `follower`: resolves with an exit or rejects with an error. */
  private finish(follower: Follower, outcome: FollowedExit | unknown, ok = false): void {
    if (follower.state === "finished") return;
    follower.state = "finished";
    this.followers.delete(follower);
    if (ok) follower.resolve(outcome as FollowedExit);
    else follower.reject(outcome);
    // A held poll whose every run is finished is of no use to anyone: stop it.
    if (this.held?.members.every((member) => member.state === "finished")) this.held.controller.abort();
    this.idleCheck();
  }

  private idleCheck(): void {
    if (this.followers.size === 0 && this.inFlight === 0 && this.removals.length === 0) this.onIdle();
  }

  /**
   * Removes `dir` with the next poll exec; without one soon, on its own. For a run whose end (a valid
   * proof and all output) was seen while its supervisor was still exiting.
   */
  private removeLater(dir: string): void {
    this.removals.push(dir);
    this.removalTimer ??= setTimeout(() => {
      this.removalTimer = undefined;
      const dirs = this.removals.splice(0);
      if (dirs.length === 0) return;
      this.inFlight++;
      const script = `cd ${shellQuote(this.stateDir)} 2>/dev/null && rm -rf ${dirs.map((dir) => shellQuote(dir)).join(" ")} 2>/dev/null; true`;
      this.ctx
        .exec(this.sandbox, script, { signal: AbortSignal.timeout(POLL_EXEC_SLACK_MS) })
        .catch(() => undefined)
        .finally(() => {
          this.inFlight--;
          this.idleCheck();
        });
    }, REMOVAL_DELAY_MS);
  }

  private queueTick(): void {
    if (this.tickQueued) return;
    this.tickQueued = true;
    queueMicrotask(() => {
      this.tickQueued = false;
      this.tick();
    });
  }

  private tick(): void {
    const ready = [...this.followers].filter((follower) => follower.state === "idle");
    if (ready.length === 0) return;
    // In turn when there are more runs than one poll takes.
    const start = this.rotation % ready.length;
    this.rotation++;
    const ordered = [...ready.slice(start), ...ready.slice(0, start)];
    const batch = ordered.slice(0, MAX_POLL_MEMBERS);
    const now = batch.some((follower) => follower.mustPollNow);
    if (this.held) {
      // A held poll that was already woken returns within one look, and its end ticks again with everyone:
      // runs with nothing to fetch wait for it rather than wake it once more.
      if (!now && this.held.woken) return;
      this.poll(batch, undefined, true);
    } else if (now) this.poll(batch, undefined, false);
    else {
      // Hold only over every followed run: one whose own poll is still in flight would need a wake, and
      // then a new hold without the others, over and over (one exec per round trip instead of per hold).
      // That poll's end ticks again.
      if ([...this.followers].some((follower) => follower.state === "polling")) return;
      const hold = batch.some((follower) => follower.request.foreground) ? FOREGROUND_HOLD : BACKGROUND_HOLD;
      this.poll(batch, hold, false);
    }
  }

  private poll(candidates: Follower[], hold: HoldSchedule | undefined, wakeHeld: boolean): void {
    let members = candidates;
    const remove = this.removals.splice(0, 32);
    // Fixed for this poll: its output is parsed the way its script prints it.
    const raw = stdoutIsRaw(this.ctx);
    let script = this.script(members, hold, wakeHeld, remove, raw);
    while (members.length > 1 && !fitsCommandLine(script)) {
      members = members.slice(0, Math.ceil(members.length / 2));
      script = this.script(members, hold, wakeHeld, remove, raw);
    }
    const cap = pollCapFor(members.length);
    for (const member of members) member.state = "polling";
    const controller = new AbortController();
    if (hold) this.held = { members, controller, woken: false };
    const held = wakeHeld ? this.held : undefined;
    const holdMs = hold ? hold.waits.reduce((sum, wait) => sum + wait, 0) * 1000 : 0;
    const signal = AbortSignal.any([controller.signal, AbortSignal.timeout(holdMs + POLL_EXEC_SLACK_MS)]);
    this.inFlight++;
    // Bookkeeping first: the results below may start the next poll at once.
    const settled = (): void => {
      this.inFlight--;
      if (this.held?.controller === controller) this.held = undefined;
    };
    this.ctx
      .exec(this.sandbox, script, { signal })
      .then(
        (result) => {
          settled();
          noteStdoutKind(this.ctx, result);
          // The wake file exists now: the held poll in flight returns at its next look.
          if (held && result.exitCode === 0) held.woken = true;
          if (result.exitCode !== 0) {
            const stderr = new TextDecoder().decode(result.stderr).trim();
            for (const member of members) {
              this.finish(
                member,
                new SandboxError(
                  "Provider",
                  `reading the output of ${member.request.what} failed (exit ${result.exitCode}): ${stderr}`,
                  { provider: this.ctx.provider },
                ),
              );
            }
            return;
          }
          let rest = result.stdout;
          for (const member of members) {
            let poll: RunPoll;
            try {
              const taken = takeRunPoll(
                rest,
                { raw, cap },
                { provider: this.ctx.provider, what: member.request.what },
              );
              rest = taken.rest;
              poll = taken.poll;
            } catch (error) {
              // The framing is lost: neither this run nor the ones after it in this poll can be read.
              for (const unread of members.slice(members.indexOf(member))) {
                this.finish(unread, toSandboxError(error, { provider: this.ctx.provider }));
              }
              return;
            }
            if (member.state === "finished") continue;
            try {
              this.apply(member, poll);
            } catch (error) {
              this.finish(member, toSandboxError(error, { provider: this.ctx.provider }));
            }
          }
        },
        (error: unknown) => {
          settled();
          for (const member of members) {
            if (member.state === "finished") continue;
            this.finish(
              member,
              toSandboxError(error, {
                provider: this.ctx.provider,
                operation: `reading the output of ${member.request.what}`,
              }),
            );
          }
        },
      )
      .catch((error: unknown) => {
        // Nothing above throws by design; should it, no member may be left waiting on this poll.
        for (const member of members) if (member.state === "polling") this.finish(member, error);
      })
      .finally(() => {
        // Every member was finished or given its next state above.
        this.queueTick();
        this.idleCheck();
      });
  }

  private script(
    members: readonly Follower[],
    hold: HoldSchedule | undefined,
    wakeHeld: boolean,
    remove: readonly string[],
    raw: boolean,
  ): string {
    return pollScript({
      stateDir: this.stateDir,
      members,
      cap: pollCapFor(members.length),
      wake: this.wake,
      hold,
      wakeHeld,
      remove,
      raw,
    });
  }

  /** Takes in what one poll saw of `follower`: delivers output, notices the end, a loss or a forgery. */
  private apply(follower: Follower, poll: RunPoll): void {
    const { request } = follower;
    const { provider } = this.ctx;
    if (poll.gone) {
      this.finish(
        follower,
        new SandboxError("NotFound", `the state of ${request.what} is gone from the sandbox`, { provider }),
      );
      return;
    }
    follower.offsets.out += poll.stdout.length;
    follower.offsets.err += poll.stderr.length;
    follower.seen.out = poll.sizes.out;
    follower.seen.err = poll.sizes.err;
    follower.proofsSeen = poll.proofCount;
    if (poll.stdout.length > 0) request.onStdout(poll.stdout);
    if (poll.stderr.length > 0) request.onStderr(poll.stderr);
    const pause = poll.stdout.length + poll.stderr.length > 0 ? request.ready?.() : undefined;

    let code: number | undefined;
    if (request.tokens) {
      for (const name of poll.proofs) code ??= provenExitCode(request.tokens, name);
    } else if (/^[0-9]+$/.test(poll.exitRecord)) code = Number(poll.exitRecord);
    if (code !== undefined) follower.exit = exitOf(code, poll.killed);

    if (follower.exit) {
      const complete = follower.offsets.out >= poll.sizes.out && follower.offsets.err >= poll.sizes.err;
      if (poll.done || complete) {
        if (request.removeWhenDone && !poll.done) this.removeLater(follower.dir);
        this.finish(follower, follower.exit, true);
        return;
      }
    } else if (!poll.alive) {
      // The supervisor is gone without a record this client can accept. Proof names it cannot check mean
      // another process replaced the record. Either is final, so it must be seen twice: one poll can misread
      // it when the sandbox is short of resources (a `kill` that could not run); a removed directory cannot
      // be looked at again.
      const removed = poll.done && request.removeWhenDone;
      if (follower.lostBefore || removed) {
        this.finish(
          follower,
          new SandboxError(
            "Provider",
            poll.proofCount > 0
              ? `the exit record of ${request.what} was altered by another process in the sandbox; its exit status is unknown`
              : `${request.what} lost its supervisor process inside the sandbox; its exit status is unknown`,
            { provider },
          ),
        );
        return;
      }
      follower.lostBefore = true;
      follower.state = "waiting";
      setTimeout(() => {
        if (follower.state !== "waiting") return;
        follower.state = "idle";
        this.queueTick();
      }, LOST_CONFIRM_DELAY_MS);
      return;
    } else follower.lostBefore = false;

    if (!pause) {
      follower.state = "idle";
      this.queueTick();
      return;
    }
    follower.state = "delivering";
    Promise.resolve(pause).then(
      () => {
        if (follower.state !== "delivering") return;
        follower.state = "idle";
        this.queueTick();
      },
      (error: unknown) => this.finish(follower, error),
    );
  }
}

/** How a run ended, from its exit status and the signal last sent through the emulation. */
function exitOf(status: number, killed: string): FollowedExit {
  // A shell reports death by signal n as 128+n; only a signal the emulation sent itself tells the two
  // apart from a plain `exit 128+n`, so the name is reported only then.
  return killed !== "-" && status === exitCodeForSignal(killed)
    ? { exitCode: status, signal: killed }
    : { exitCode: status };
}

const pollers = new WeakMap<EmulationContext, Map<string, SandboxPoller>>();

/**
 * Follows a detached run until it ends: its output goes to the callbacks in order (pausing while they
 * ask to), and the promise resolves with how it ended once all output was delivered, or rejects with the
 * signal's reason when it aborts (the caller decides whether to kill the command). Every run of one sandbox
 * shares that sandbox's poller (see `SandboxPoller`).
 */
export function followRun(
  ctx: EmulationContext,
  sandbox: DriverSandbox,
  request: FollowRequest,
): Promise<FollowedExit> {
  const stateDir = stateDirOf(ctx, sandbox);
  const key = `${sandbox.id}\u0000${stateDir}`;
  let byKey = pollers.get(ctx);
  if (!byKey) {
    byKey = new Map();
    pollers.set(ctx, byKey);
  }
  let poller = byKey.get(key);
  if (!poller) {
    const map = byKey;
    poller = new SandboxPoller(ctx, sandbox, stateDir, () => {
      if (map.get(key) === poller) map.delete(key);
    });
    map.set(key, poller);
  }
  return poller.follow(request);
}
