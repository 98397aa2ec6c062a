import { type LookupAddress, type LookupOptions, lookup as dnsLookup } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * Which network addresses a URL someone else chose may reach. One policy module serves customer
 * webhooks (room_creation_api, hold_music_url) and provider endpoints a bot names
 * (service_options.<provider>.base_url). Literal addresses are checked when the URL is saved; names
 * are checked when the connection is made, on every address they resolve to, so a name that later
 * resolves somewhere else is refused too.
 */
export interface AddressPolicy {
  /** Link-local and cloud metadata addresses may be reached (an operator's explicit choice, e.g. a lab). */
  allowLinkLocal: boolean;
  /** Loopback and private ranges may be reached. */
  allowPrivate: boolean;
}

/**
 * Customer webhooks: the customer's own servers, which may sit on a private network next to this
 * service; only link-local and metadata addresses are refused by default.
 */
export function webhookAddressPolicy(allowLinkLocal: boolean): AddressPolicy {
  return { allowLinkLocal, allowPrivate: true };
}

/**
 * Provider endpoints a bot configuration names: they receive the tenant's API key, and loopback or
 * private addresses reach the operator's internal services, so those are refused unless the
 * operator runs model servers there. Metadata addresses are never allowed.
 */
export function providerAddressPolicy(allowPrivate: boolean): AddressPolicy {
  return { allowLinkLocal: false, allowPrivate };
}

/** Thrown (or given to a connection's lookup callback) when an address is not allowed. */
export class AddressPolicyError extends Error {
  override name = 'AddressPolicyError';
  readonly code = 'EADDRNOTALLOWED';
}

/** Whether a failed connection was refused by the policy (retrying cannot change that). */
export function isAddressRefusal(err: unknown): boolean {
  return err instanceof AddressPolicyError || (err instanceof Error && err.cause instanceof AddressPolicyError);
}

function blockList(ranges: Array<[string, number, 'ipv4' | 'ipv6']>): BlockList {
  const list = new BlockList();
  for (const [network, prefix, family] of ranges) list.addSubnet(network, prefix, family);
  return list;
}

/** Never a web server, whatever the policy ("this network", which Linux treats as loopback; multicast; reserved). */
const UNUSABLE = blockList([
  ['0.0.0.0', 8, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  ['::', 128, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
]);
/** Link-local, which includes the cloud metadata address 169.254.169.254, and AWS's IPv6 metadata endpoint. */
const LINK_LOCAL = blockList([
  ['169.254.0.0', 16, 'ipv4'],
  ['fe80::', 10, 'ipv6'],
  ['fd00:ec2::254', 128, 'ipv6'],
]);
const LOOPBACK = blockList([
  ['127.0.0.0', 8, 'ipv4'],
  ['::1', 128, 'ipv6'],
]);
/** RFC 1918, carrier-grade NAT (often a cluster's pod network) and IPv6 unique local addresses. */
const PRIVATE = blockList([
  ['10.0.0.0', 8, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['fc00::', 7, 'ipv6'],
]);

/** Why `address` (an IP literal) may not be reached under `policy`, or undefined when it may. */
export function addressProblem(address: string, policy: AddressPolicy): string | undefined {
  const version = isIP(address);
  if (version === 0) return 'is not an IP address';
  // An IPv4-mapped IPv6 address reaches the IPv4 address inside it.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  const [ip, family] = mapped
    ? [mapped[1]!, 'ipv4' as const]
    : [address, version === 6 ? ('ipv6' as const) : ('ipv4' as const)];
  if (UNUSABLE.check(ip, family)) return 'not a usable unicast address';
  if (!policy.allowLinkLocal && LINK_LOCAL.check(ip, family)) return 'a link-local or metadata address';
  if (!policy.allowPrivate && LOOPBACK.check(ip, family)) return 'a loopback address';
  if (!policy.allowPrivate && PRIVATE.check(ip, family)) return 'a private address';
  return undefined;
}

/**
 * Why the host of `url` may not be reached, judged without DNS (an IP literal). Undefined when it
 * may, or when the host is a name, which only the connection can judge (see guardedLookup).
 */
export function literalHostProblem(url: URL, policy: AddressPolicy): string | undefined {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const problem = addressProblem(host, policy);
    return problem ? `points at ${host}, ${problem}` : undefined;
  }
  return undefined;
}

type Resolve = (
  hostname: string,
  options: LookupOptions & { all: true },
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/**
 * A `lookup` for http.request, ws and net.connect that resolves like the system does and refuses
 * the name when any address it resolves to is not allowed. It answers both kinds of caller:
 * `all: true` (Node's connection logic with autoSelectFamily, which tries every address) gets the
 * list, `all: false` gets the first address. `what` names the URL's role in the error message.
 */
export function guardedLookup(policy: AddressPolicy, what: string, resolve: Resolve = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    const fail = (err: NodeJS.ErrnoException) => (options.all ? callback(err, []) : callback(err, '', 0));
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return fail(err);
      if (addresses.length === 0)
        return fail(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }));
      for (const { address } of addresses) {
        const problem = addressProblem(address, policy);
        if (problem) return fail(new AddressPolicyError(`${what} host ${hostname} resolves to ${address}, ${problem}`));
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}
