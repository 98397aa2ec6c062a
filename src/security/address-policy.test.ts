import type { LookupAddress, LookupOptions } from 'node:dns';
import { type Server, createServer, get } from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AddressPolicyError,
  addressProblem,
  guardedLookup,
  literalHostProblem,
  providerAddressPolicy,
  webhookAddressPolicy,
} from './address-policy.js';

const WEBHOOK = webhookAddressPolicy(false);
const PROVIDER = providerAddressPolicy(false);
const PROVIDER_PRIVATE_OK = providerAddressPolicy(true);

/** A resolver that answers every name with fixed addresses, as a name with several A/AAAA records would. */
function resolvingTo(addresses: LookupAddress[]) {
  const asked: Array<LookupOptions & { hostname: string }> = [];
  const resolve = (
    hostname: string,
    options: LookupOptions & { all: true },
    callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
  ) => {
    asked.push({ hostname, ...options });
    setImmediate(() => callback(null, addresses));
  };
  return { resolve, asked };
}

function lookupAll(
  lookup: LookupFunction,
  hostname: string,
  options: LookupOptions,
): Promise<{ err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }> {
  return new Promise((resolve) =>
    lookup(hostname, options, (err, address, family) => resolve({ err, address, family })),
  );
}

describe('addressProblem', () => {
  it('refuses metadata and link-local addresses for everyone, loopback and private ranges only for provider endpoints', () => {
    for (const address of ['169.254.169.254', 'fe80::1', 'fd00:ec2::254', '::ffff:169.254.169.254']) {
      expect(addressProblem(address, WEBHOOK)).toBe('a link-local or metadata address');
      expect(addressProblem(address, PROVIDER_PRIVATE_OK)).toBe('a link-local or metadata address');
    }
    for (const address of ['127.0.0.1', '127.9.9.9', '::1', '::ffff:127.0.0.1']) {
      expect(addressProblem(address, WEBHOOK)).toBeUndefined();
      expect(addressProblem(address, PROVIDER)).toBe('a loopback address');
      expect(addressProblem(address, PROVIDER_PRIVATE_OK)).toBeUndefined();
    }
    for (const address of [
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.10',
      '100.64.0.1',
      'fd12:3456::1',
      'fc00::1',
    ]) {
      expect(addressProblem(address, WEBHOOK)).toBeUndefined();
      expect(addressProblem(address, PROVIDER)).toBe('a private address');
      expect(addressProblem(address, PROVIDER_PRIVATE_OK)).toBeUndefined();
    }
    // Linux connects 0.0.0.0 to loopback: it is never a destination, whatever the switches.
    for (const address of ['0.0.0.0', '::', '224.0.0.1', 'ff02::1', '255.255.255.255']) {
      expect(addressProblem(address, { allowLinkLocal: true, allowPrivate: true })).toBe(
        'not a usable unicast address',
      );
    }
    for (const address of ['93.184.215.14', '172.32.0.1', '2606:4700::1111'])
      expect(addressProblem(address, PROVIDER)).toBeUndefined();
  });

  it('judges literal hosts of URLs, in every spelling the URL parser accepts', () => {
    expect(literalHostProblem(new URL('http://169.254.169.254/latest/meta-data/'), WEBHOOK)).toBe(
      'points at 169.254.169.254, a link-local or metadata address',
    );
    expect(literalHostProblem(new URL('http://[fe80::1]:8080/'), WEBHOOK)).toBe(
      'points at fe80::1, a link-local or metadata address',
    );
    // Decimal and hex spellings are normalised by the URL parser before the check.
    expect(literalHostProblem(new URL('http://2130706433/'), PROVIDER)).toBe('points at 127.0.0.1, a loopback address');
    expect(literalHostProblem(new URL('http://0x7f.1/'), PROVIDER)).toBe('points at 127.0.0.1, a loopback address');
    // Names (localhost too) are left to the connection, which checks what they resolve to.
    expect(literalHostProblem(new URL('http://localhost:11434/'), PROVIDER)).toBeUndefined();
    expect(literalHostProblem(new URL('https://models.example.com/v1'), PROVIDER)).toBeUndefined();
  });
});

describe('guardedLookup', () => {
  it('gives all: true callers every address (IPv6 and IPv4), and all: false callers the first', async () => {
    const { resolve, asked } = resolvingTo([
      { address: '2606:4700::1111', family: 6 },
      { address: '93.184.215.14', family: 4 },
    ]);
    const lookup = guardedLookup(PROVIDER, 'endpoint', resolve);
    const all = await lookupAll(lookup, 'models.example.com', { all: true });
    expect(all).toEqual({
      err: null,
      address: [
        { address: '2606:4700::1111', family: 6 },
        { address: '93.184.215.14', family: 4 },
      ],
      family: undefined,
    });
    const one = await lookupAll(lookup, 'models.example.com', { all: false, family: 0 });
    expect(one).toEqual({ err: null, address: '2606:4700::1111', family: 6 });
    // The caller's own options (family, hints) still reach the resolver.
    expect(asked[1]).toMatchObject({ hostname: 'models.example.com', family: 0, all: true });
  });

  it('refuses a name when any address it resolves to is forbidden, for both kinds of caller', async () => {
    const { resolve } = resolvingTo([
      { address: '93.184.215.14', family: 4 },
      { address: '169.254.169.254', family: 4 },
    ]);
    const lookup = guardedLookup(WEBHOOK, 'webhook', resolve);
    for (const all of [true, false]) {
      const result = await lookupAll(lookup, 'rebind.example.com', { all });
      expect(result.err).toBeInstanceOf(AddressPolicyError);
      expect(result.err!.message).toBe(
        'webhook host rebind.example.com resolves to 169.254.169.254, a link-local or metadata address',
      );
      expect(result.address).toEqual(all ? [] : '');
    }
    const ipv6 = guardedLookup(WEBHOOK, 'webhook', resolvingTo([{ address: 'fd00:ec2::254', family: 6 }]).resolve);
    expect((await lookupAll(ipv6, 'metadata.example.com', { all: true })).err?.message).toContain(
      'resolves to fd00:ec2::254',
    );
  });

  describe('over real sockets', () => {
    let server: Server | undefined;
    let requests = 0;
    afterEach(async () => {
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      server = undefined;
      requests = 0;
    });

    async function listenOnIpv4Loopback(): Promise<number> {
      server = createServer((_req, res) => {
        requests += 1;
        res.end('ok');
      });
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
      return (server.address() as AddressInfo).port;
    }

    function getStatus(url: string, lookup: LookupFunction, autoSelectFamily: boolean): Promise<number> {
      return new Promise((resolve, reject) => {
        // No agent: the request makes its own connection, which takes net.connect's options.
        const options = { lookup, agent: false, autoSelectFamily } as Parameters<typeof get>[1];
        const req = get(url, options, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
      });
    }

    it('reaches localhost by name, whether Node asks for all addresses (happy eyeballs) or one', async () => {
      const port = await listenOnIpv4Loopback();
      for (const autoSelectFamily of [true, false]) {
        expect(await getStatus(`http://localhost:${port}/`, guardedLookup(WEBHOOK, 'webhook'), autoSelectFamily)).toBe(
          200,
        );
      }
      expect(requests).toBe(2);
    });

    it('tries the next address of a name when the first one does not answer', async () => {
      const port = await listenOnIpv4Loopback();
      // Nothing listens on [::1]:port, so the connection falls back to 127.0.0.1.
      const { resolve } = resolvingTo([
        { address: '::1', family: 6 },
        { address: '127.0.0.1', family: 4 },
      ]);
      expect(
        await getStatus(`http://several.example.test:${port}/`, guardedLookup(WEBHOOK, 'webhook', resolve), true),
      ).toBe(200);
    });

    it('never connects when the name resolves to a forbidden address', async () => {
      const port = await listenOnIpv4Loopback();
      const refused = getStatus(`http://localhost:${port}/`, guardedLookup(PROVIDER, 'endpoint'), true);
      await expect(refused).rejects.toThrow('endpoint host localhost resolves to 127.0.0.1, a loopback address');
      expect(requests).toBe(0);
    });
  });
});
