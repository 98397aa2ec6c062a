import { once } from 'node:events';
import { type Server, createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { onFreePort } from './free-port.js';

/**
 * Test files run side by side, each starting servers on ports freePort() found free: another file
 * can bind a port between freePort() and the listen. onFreePort() survives that race.
 */

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

async function listen(port: number): Promise<Server> {
  const server = createServer();
  server.listen(port, '127.0.0.1');
  await Promise.race([once(server, 'listening'), once(server, 'error').then(([error]) => Promise.reject(error))]);
  servers.push(server);
  return server;
}

describe('onFreePort', () => {
  it('starts on another port when the one it found is taken before the listen', async () => {
    const tried: number[] = [];
    const started = await onFreePort(async (port) => {
      tried.push(port);
      // The first time, another file "wins" the race for the port just before this listen.
      if (tried.length === 1) await listen(port);
      return listen(port);
    });
    expect(tried).toHaveLength(2);
    expect((started.address() as { port: number }).port).toBe(tried[1]);
  });

  it('passes on errors other than a taken port, and gives up after the attempts it was given', async () => {
    await expect(onFreePort(async () => Promise.reject(new Error('config rejected')))).rejects.toThrow(
      'config rejected',
    );
    let calls = 0;
    const taken = Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' });
    await expect(
      onFreePort(async () => {
        calls++;
        throw taken;
      }, 3),
    ).rejects.toBe(taken);
    expect(calls).toBe(3);
  });
});
