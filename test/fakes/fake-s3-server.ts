import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small S3-compatible server for tests, speaking the real REST wire protocol with path-style
 * addresses (`/<bucket>/<key>`): PutObject, GetObject, DeleteObject. Every request must be
 * signed with AWS Signature Version 4, in the Authorization header or as a presigned query;
 * a missing or malformed signature gets S3's own AccessDenied XML. It also answers STS
 * AssumeRole (POST /), so assumed-role credentials can be followed end to end.
 *
 * It checks the signature's shape, not its value (it has no secret to check it against).
 */

export interface S3Request {
  method: string;
  bucket: string;
  key: string;
  /** The access key id the request was signed with. */
  accessKeyId: string;
  /** `header` (Authorization) or `query` (a presigned URL). */
  signedBy: 'header' | 'query';
  headers: Record<string, string | string[] | undefined>;
}

const AUTH_HEADER =
  /^AWS4-HMAC-SHA256 Credential=([A-Za-z0-9]+)\/(\d{8})\/([a-z0-9-]+)\/s3\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;
const CREDENTIAL_SCOPE = /^([A-Za-z0-9]+)\/(\d{8})\/([a-z0-9-]+)\/s3\/aws4_request$/;

/** What STS hands out for AssumeRole: recognisable in the signatures that follow. */
export const ASSUMED_ACCESS_KEY_ID = 'ASIAFAKEASSUMEDROLE1';
export const ASSUMED_SESSION_TOKEN = 'fake-session-token-for-tests';

export class FakeS3Server {
  /** `bucket/key` → object bytes. */
  readonly objects = new Map<string, Buffer>();
  readonly requests: S3Request[] = [];
  readonly rejected: Array<{ method: string; url: string; reason: string }> = [];
  readonly assumedRoles: string[] = [];
  private server: Server | undefined;
  url = '';

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        res.statusCode = 500;
        res.end(String(err));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const body = await readBody(req);
    if (req.method === 'POST' && url.pathname === '/') return this.assumeRole(req, body, res);

    const [, bucket = '', ...keyParts] = url.pathname.split('/');
    const key = keyParts.map(decodeURIComponent).join('/');
    const auth = this.authenticate(req, url);
    if (typeof auth === 'string') {
      this.rejected.push({ method: req.method ?? '', url: req.url ?? '', reason: auth });
      return sendXml(res, 403, errorXml('AccessDenied', auth, url.pathname));
    }
    if (!bucket || !key)
      return sendXml(res, 400, errorXml('InvalidRequest', 'path-style /<bucket>/<key> expected', url.pathname));
    this.requests.push({ method: req.method ?? '', bucket, key, ...auth, headers: req.headers });
    const objectId = `${bucket}/${key}`;

    switch (req.method) {
      case 'PUT': {
        const content = req.headers['content-encoding']?.includes('aws-chunked') ? decodeAwsChunked(body) : body;
        const declared = req.headers['x-amz-decoded-content-length'] ?? req.headers['content-length'];
        if (declared !== undefined && Number(declared) !== content.length) {
          return sendXml(
            res,
            400,
            errorXml('IncompleteBody', `declared ${declared} bytes, got ${content.length}`, url.pathname),
          );
        }
        this.objects.set(objectId, content);
        res.writeHead(200, { ETag: `"${randomUUID()}"` });
        return void res.end();
      }
      case 'GET': {
        const object = this.objects.get(objectId);
        if (!object) return sendXml(res, 404, errorXml('NoSuchKey', 'The specified key does not exist.', url.pathname));
        res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': object.length, ETag: '"fake"' });
        return void res.end(object);
      }
      case 'DELETE': {
        this.objects.delete(objectId);
        res.writeHead(204);
        return void res.end();
      }
      default:
        return sendXml(res, 405, errorXml('MethodNotAllowed', `${req.method} is not supported here`, url.pathname));
    }
  }

  /** Returns the signer's key id, or why the request is not properly signed. */
  private authenticate(req: IncomingMessage, url: URL): { accessKeyId: string; signedBy: 'header' | 'query' } | string {
    const header = req.headers.authorization;
    if (header) {
      const match = AUTH_HEADER.exec(header);
      if (!match) return `malformed Authorization header: ${header}`;
      const signedHeaders = match[4]!.split(';');
      if (!signedHeaders.includes('host')) return 'SignedHeaders must include host';
      if (!req.headers['x-amz-date']) return 'missing x-amz-date';
      if (!req.headers['x-amz-content-sha256']) return 'missing x-amz-content-sha256';
      if (match[1] === ASSUMED_ACCESS_KEY_ID && req.headers['x-amz-security-token'] !== ASSUMED_SESSION_TOKEN) {
        return 'temporary credentials need their x-amz-security-token';
      }
      return { accessKeyId: match[1]!, signedBy: 'header' };
    }
    const q = url.searchParams;
    if (q.get('X-Amz-Algorithm') === 'AWS4-HMAC-SHA256') {
      const scope = CREDENTIAL_SCOPE.exec(q.get('X-Amz-Credential') ?? '');
      if (!scope) return 'malformed X-Amz-Credential';
      if (!/^[0-9a-f]{64}$/.test(q.get('X-Amz-Signature') ?? '')) return 'malformed X-Amz-Signature';
      const date = q.get('X-Amz-Date') ?? '';
      const expiresSecs = Number(q.get('X-Amz-Expires'));
      const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(date);
      if (!m || !Number.isInteger(expiresSecs)) return 'malformed X-Amz-Date or X-Amz-Expires';
      const signedAtMs = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
      if (Date.now() > signedAtMs + expiresSecs * 1000) return 'Request has expired';
      return { accessKeyId: scope[1]!, signedBy: 'query' };
    }
    return 'no AWS Signature Version 4 on the request';
  }

  private assumeRole(req: IncomingMessage, body: Buffer, res: ServerResponse): void {
    const form = new URLSearchParams(body.toString('utf8'));
    if (form.get('Action') !== 'AssumeRole' || !form.get('RoleArn')) {
      sendXml(res, 400, errorXml('InvalidAction', 'only AssumeRole is served', '/'));
      return;
    }
    if (
      !/^AWS4-HMAC-SHA256 Credential=[A-Za-z0-9]+\/\d{8}\/[a-z0-9-]+\/sts\/aws4_request/.test(
        req.headers.authorization ?? '',
      )
    ) {
      sendXml(res, 403, errorXml('AccessDenied', 'AssumeRole must be signed for sts', '/'));
      return;
    }
    this.assumedRoles.push(form.get('RoleArn')!);
    const expiration = new Date(Date.now() + 3600_000).toISOString();
    sendXml(
      res,
      200,
      `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>` +
        `<Credentials><AccessKeyId>${ASSUMED_ACCESS_KEY_ID}</AccessKeyId><SecretAccessKey>fakeAssumedSecret</SecretAccessKey>` +
        `<SessionToken>${ASSUMED_SESSION_TOKEN}</SessionToken><Expiration>${expiration}</Expiration></Credentials>` +
        `<AssumedRoleUser><AssumedRoleId>AROAFAKE:switchboard</AssumedRoleId><Arn>${form.get('RoleArn')}/switchboard</Arn></AssumedRoleUser>` +
        `</AssumeRoleResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></AssumeRoleResponse>`,
    );
  }
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** `aws-chunked` bodies: `<hex size>[;chunk-signature=…]\r\n<data>\r\n`…, ending in a 0-size chunk and trailers. */
function decodeAwsChunked(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = body.indexOf('\r\n', offset);
    if (lineEnd < 0) throw new Error('truncated aws-chunked body');
    const size = parseInt(body.subarray(offset, lineEnd).toString('ascii').split(';')[0]!, 16);
    if (size === 0) return Buffer.concat(parts);
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    offset = lineEnd + 2 + size + 2;
  }
}

function errorXml(code: string, message: string, resource: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message.replace(/[<&>]/g, '')}</Message><Resource>${resource}</Resource><RequestId>${randomUUID()}</RequestId></Error>`;
}

function sendXml(res: ServerResponse, status: number, xml: string): void {
  res.writeHead(status, { 'Content-Type': 'application/xml' });
  res.end(xml);
}
