/**
 * A TCP proxy on loopback for tests that need a connection to go silent or die without touching
 * the database server: only the connections made through the proxy are affected.
 *
 * - `pause()` black-holes every connection: the sockets stay open, nothing is forwarded either
 *   way, nothing is closed or answered (the proxy stops reading, so bytes wait in the kernel's
 *   buffers as they would behind a dead NAT). New connections are held the same way, unless
 *   `{ newConnections: "pass" }`: then only the connections open at that moment stay
 *   black-holed, and new ones work — a client that gives up on a silent connection and opens a
 *   new one gets through.
 * - `resume()` forwards again (what waited in the buffers goes through).
 * - `cut()` destroys every socket (both sides see the connection drop).
 * - `listen(port?)` can be called late: a client can be pointed at a port before anything
 *   listens there (`freePort()`).
 */
import net from "node:net";

interface Pair {
  client: net.Socket;
  server: net.Socket;
  paused: boolean;
}

/** A loopback port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export class TcpProxy {
  private readonly pairs = new Set<Pair>();
  private server: net.Server | null = null;
  private holdNew = false;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  /** Starts listening on 127.0.0.1 (a free port unless one is given). */
  async listen(port = 0): Promise<number> {
    // allowHalfOpen: a FIN from one side is not answered by us; it is forwarded like data.
    const server = net.createServer({ allowHalfOpen: true }, (client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve());
    });
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
    return this.port;
  }

  /** The URL of `url` with host and port replaced by this proxy's. */
  url(url: string): string {
    const u = new URL(url);
    u.hostname = "127.0.0.1";
    u.port = String(this.port);
    return u.toString();
  }

  /** Connections open now (each a client socket and its server socket). */
  get connections(): number {
    return this.pairs.size;
  }

  pause(options: { newConnections?: "hold" | "pass" } = {}): void {
    this.holdNew = (options.newConnections ?? "hold") === "hold";
    for (const pair of this.pairs) this.setPaused(pair, true);
  }

  resume(): void {
    this.holdNew = false;
    for (const pair of this.pairs) this.setPaused(pair, false);
  }

  cut(): void {
    for (const pair of this.pairs) {
      pair.client.destroy();
      pair.server.destroy();
    }
    this.pairs.clear();
  }

  async close(): Promise<void> {
    this.cut();
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    const server = net.connect({ host: this.target.host, port: this.target.port, allowHalfOpen: true });
    const pair: Pair = { client, server, paused: false };
    this.pairs.add(pair);
    const drop = () => {
      if (!this.pairs.delete(pair)) return;
      client.destroy();
      server.destroy();
    };
    for (const [from, to] of [
      [client, server],
      [server, client],
    ] as const) {
      from.on("data", (chunk) => {
        if (!to.write(chunk)) {
          from.pause();
          to.once("drain", () => {
            if (!pair.paused) from.resume();
          });
        }
      });
      from.on("end", () => to.end());
      from.on("error", drop);
      from.on("close", drop);
    }
    if (this.holdNew) this.setPaused(pair, true);
  }

  private setPaused(pair: Pair, paused: boolean): void {
    pair.paused = paused;
    if (paused) {
      pair.client.pause();
      pair.server.pause();
    } else {
      pair.client.resume();
      pair.server.resume();
    }
  }
}
