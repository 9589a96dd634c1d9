/**
 * The apps and machines of one Fly emulator, with their leases.
 */
import { randomBytes } from "node:crypto";
import type { EmulatorBackend } from "../backend.js";
import type { EmulatorClock } from "../clock.js";
import { FlyLeases } from "./fly-leases.js";
import { type FlyImageMap, FlyMachine, type FlyMachineHost } from "./fly-machine.js";

/** An app. */
export interface FlyApp {
  readonly id: string;
  readonly name: string;
  readonly org: string;
  readonly network: string;
  readonly createdAt: Date;
}

/** What a fleet is made of. */
export interface FlyFleetInit {
  readonly backend: EmulatorBackend;
  readonly clock: EmulatorClock;
  readonly images: FlyImageMap;
  readonly defaultTemplate: string | undefined;
  readonly destroyedLingerMs: number;
  readonly defaultRegion: string;
  readonly apps: readonly string[];
}

/** Apps, machines and leases. */
export class FlyFleet {
  readonly apps: Map<string, FlyApp> = new Map();
  readonly machines: Map<string, FlyMachine> = new Map();
  readonly leases: FlyLeases;
  readonly backend: EmulatorBackend;
  readonly clock: EmulatorClock;
  readonly defaultRegion: string;
  private readonly machineHost: FlyMachineHost;
  private held: { promise: Promise<void>; release: () => void } | undefined;

  constructor(init: FlyFleetInit) {
    this.backend = init.backend;
    this.clock = init.clock;
    this.defaultRegion = init.defaultRegion;
    this.leases = new FlyLeases(init.clock);
    this.machineHost = {
      backend: init.backend,
      clock: init.clock,
      images: init.images,
      defaultTemplate: init.defaultTemplate,
      destroyedLingerMs: init.destroyedLingerMs,
      forget: (machine: FlyMachine) => {
        this.machines.delete(machine.id);
        this.leases.forget(machine.id);
      },
      bootGate: () => this.held?.promise ?? Promise.resolve(),
    };
    for (const name of init.apps) this.addApp(name, "personal", "default");
  }

  /** Creates an app record. */
  addApp(name: string, org: string, network: string): FlyApp {
    const app: FlyApp = {
      id: randomBytes(8).toString("hex"),
      name,
      org,
      network,
      createdAt: new Date(this.clock.now()),
    };
    this.apps.set(name, app);
    return app;
  }

  /** The machines of an app, oldest first. */
  machinesOf(app: string): FlyMachine[] {
    return [...this.machines.values()]
      .filter((m) => m.app === app)
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  }

  /** Creates a machine record (booting is the caller's choice). */
  newMachine(
    app: string,
    config: FlyMachine["config"],
    options: { name?: string | undefined; region?: string | undefined },
  ): FlyMachine {
    const machine = new FlyMachine(
      app,
      config,
      { name: options.name, region: options.region ?? this.defaultRegion },
      this.machineHost,
    );
    this.machines.set(machine.id, machine);
    return machine;
  }

  /** While held, machines that start stay `starting` (a boot that never finishes); releasing lets them go on. */
  holdBoots(hold: boolean): void {
    if (hold && !this.held) {
      let release!: () => void;
      const promise = new Promise<void>((resolve) => {
        release = resolve;
      });
      this.held = { promise, release };
    } else if (!hold && this.held) {
      this.held.release();
      this.held = undefined;
    }
  }

  /** Destroys every machine. */
  async close(): Promise<void> {
    this.holdBoots(false);
    await Promise.allSettled([...this.machines.values()].map((machine) => machine.destroy()));
    this.machines.clear();
  }
}
