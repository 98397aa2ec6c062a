/**
 * WebSocket close codes, one table for every socket this service opens or accepts: the media
 * streams, the room sockets, the relay between nodes, and the vendors' sockets. The 1xxx codes
 * are RFC 6455's (section 7.4.1) and IANA's registry; the 4xxx codes are this service's own, each
 * named after the HTTP status it echoes. The README lists what each socket closes with and why.
 */
export const CLOSE = {
  normal: 1000,
  /** The server is shutting down (or the node holding the socket's subject went away). */
  goingAway: 1001,
  protocolError: 1002,
  /** Binary frames on a JSON-text protocol. */
  unsupportedData: 1003,
  /** Received only: the peer closed without a code. Never sent on the wire. */
  noStatus: 1005,
  /** Received only: the connection dropped without a close frame. Never sent on the wire. */
  abnormal: 1006,
  /** Data that does not match the message type (text that is not UTF-8). */
  invalidPayload: 1007,
  /** Malformed messages past the tolerance, a protocol order violation, a refused handshake. */
  policyViolation: 1008,
  /** A message over the socket's limit, or one carrying more audio than a message may. */
  messageTooBig: 1009,
  internalError: 1011,
  /** The account already has SWITCHBOARD_ACCOUNT_MAX_CALLS calls in progress. */
  tryAgainLater: 1013,
  /** Received only: the TLS handshake failed. Never sent on the wire. */
  tlsHandshake: 1015,
  /** A room token missing, malformed, badly signed or expired. */
  invalidToken: 4401,
  /** A valid room token, but for another room. */
  wrongRoom: 4403,
  /** Nothing at this URL: no configuration for a media stream, an unknown or finished leg, no such room. */
  notFound: 4404,
  /** The room already holds its maximum of participants. */
  roomFull: 4409,
  /** Far more messages, or audio faster than real time, than a real carrier or client sends. */
  flood: 4429,
} as const;

/** Closes for a protocol or policy violation: sending the same again will be refused again. */
export const NOT_RETRYABLE_CLOSES: ReadonlySet<number> = new Set([
  CLOSE.protocolError,
  CLOSE.unsupportedData,
  CLOSE.invalidPayload,
  CLOSE.policyViolation,
  CLOSE.messageTooBig,
]);
