import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { VendorEmulator } from './types.js';

export interface RunningEmulators {
  /** http://host:port — point SWITCHBOARD_<VENDOR>_URL (or a bot's base_url) here. */
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** Serves several vendor emulators on one port, routing each request to the one that claims it. */
export async function startEmulatorServer(
  emulators: VendorEmulator[],
  options: { port?: number; host?: string } = {},
): Promise<RunningEmulators> {
  const server = createServer((req, res) => {
    for (const emulator of emulators) {
      if (emulator.handleHttp?.(req, res)) return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: `no emulated vendor serves ${req.method} ${req.url}` }));
  });
  server.on('upgrade', (req, socket, head) => {
    for (const emulator of emulators) {
      if (emulator.handleUpgrade?.(req, socket, head)) return;
    }
    socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    server,
    close: async () => {
      for (const emulator of emulators) emulator.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
