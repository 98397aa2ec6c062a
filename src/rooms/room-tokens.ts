import { createHmac, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import { SERVICE_KEY_SOURCES, readOrCreateKeyFile } from '../security/service-keys.js';

const KEY_BYTES = 32;
const VERSION = 'v1';

/** What a room token grants: joining `room` until `expiresAtSecs` (Unix seconds). */
export interface RoomTokenClaims {
  room: string;
  expiresAtSecs: number;
}

export type RoomTokenCheck =
  | { ok: true; claims: RoomTokenClaims }
  | { ok: false; why: 'malformed' | 'bad-signature' | 'expired' | 'wrong-room'; message: string };

/**
 * Signed, expiring tokens scoped to one room: `v1.<base64url claims>.<base64url HMAC-SHA256>`.
 * The key is the deployment's (security/service-keys.ts), so tokens survive restarts and every
 * node of one deployment accepts them, but a token from another deployment never verifies.
 */
export class RoomTokens {
  constructor(
    private readonly key: Buffer,
    private readonly nowMs: () => number = Date.now,
  ) {
    if (key.length !== KEY_BYTES) throw new Error('room token key must be 32 bytes');
  }

  /** Loads `<dataDir>/room-token.key`, creating it (mode 0600) on first start. */
  static forDataDir(dataDir: string): RoomTokens {
    return new RoomTokens(readOrCreateKeyFile(join(dataDir, SERVICE_KEY_SOURCES.roomToken.file)));
  }

  issue(room: string, expiresAtSecs: number): string {
    const payload = Buffer.from(JSON.stringify({ r: room, exp: expiresAtSecs })).toString('base64url');
    return `${VERSION}.${payload}.${this.sign(payload)}`;
  }

  /** Checks the signature first (nothing of an unsigned token is trusted), then expiry and room. */
  verify(token: string | undefined, room: string): RoomTokenCheck {
    const parts = (token ?? '').split('.');
    if (parts.length !== 3 || parts[0] !== VERSION || !parts[1] || !parts[2]) {
      return { ok: false, why: 'malformed', message: 'missing or malformed room token' };
    }
    const [, payload, signature] = parts as [string, string, string];
    const expected = Buffer.from(this.sign(payload), 'base64url');
    const presented = Buffer.from(signature, 'base64url');
    if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
      return { ok: false, why: 'bad-signature', message: 'room token signature is not valid' };
    }
    let claims: RoomTokenClaims;
    try {
      const raw = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { r?: unknown; exp?: unknown };
      if (typeof raw.r !== 'string' || typeof raw.exp !== 'number') throw new Error('fields');
      claims = { room: raw.r, expiresAtSecs: raw.exp };
    } catch {
      return { ok: false, why: 'malformed', message: 'room token payload is malformed' };
    }
    if (claims.expiresAtSecs * 1000 <= this.nowMs())
      return { ok: false, why: 'expired', message: 'room token has expired' };
    if (claims.room !== room) return { ok: false, why: 'wrong-room', message: 'room token is for another room' };
    return { ok: true, claims };
  }

  private sign(payload: string): string {
    return createHmac('sha256', this.key).update(`${VERSION}.${payload}`).digest('base64url');
  }
}
