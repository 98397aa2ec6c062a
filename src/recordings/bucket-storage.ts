import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';

/** The S3 SDK's three packages, as one module object. */
interface BucketSdk {
  s3: typeof import('@aws-sdk/client-s3');
  credentials: typeof import('@aws-sdk/credential-providers');
  presigner: typeof import('@aws-sdk/s3-request-presigner');
}

let bucketSdk: Promise<BucketSdk> | undefined;

/**
 * The S3 SDK, loaded on first use: about 25 MB of memory and 0.2 s of start-up that a server
 * which never writes to a bucket should not pay. Loading blocks the event loop for that long once,
 * so the server loads it ahead of the first call (call-parts warm-up), not in the middle of one.
 */
export function loadBucketSdk(): Promise<BucketSdk> {
  bucketSdk ??= Promise.all([
    import('@aws-sdk/client-s3'),
    import('@aws-sdk/credential-providers'),
    import('@aws-sdk/s3-request-presigner'),
  ]).then(([s3, credentials, presigner]) => ({ s3, credentials, presigner }));
  // A failed load is not kept, so a later use retries.
  bucketSdk.catch(() => (bucketSdk = undefined));
  return bucketSdk;
}

/** recording_settings.recordings_bucket, as stored with the recording. */
export interface RecordingsBucket {
  bucket_name: string;
  bucket_region: string;
  assume_role_arn?: string;
  /** false: the recording is listed, but the API serves no link to it. */
  allow_api_access?: boolean;
  /** true: access links point straight at the bucket (presigned); otherwise this service relays. */
  allow_streaming_from_bucket?: boolean;
}

/**
 * Env variables read here (from the service's environment):
 * - SWITCHBOARD_S3_ENDPOINT: an S3-compatible endpoint (MinIO, a test server) addressed path-style.
 * - SWITCHBOARD_STS_ENDPOINT: where assume_role_arn is exchanged for credentials, if not AWS's.
 * - AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN: static credentials; without them
 *   the SDK's default chain (profile, instance role, ...) is used.
 */
export type StorageEnv = Readonly<Record<string, string | undefined>>;

/** Uploads, links to, reads and deletes recording files in customers' S3-compatible buckets. */
export class BucketStorage {
  private readonly clients = new Map<string, S3Client>();
  private baseCredentials: NonNullable<S3ClientConfig['credentials']> | undefined;

  constructor(private readonly env: StorageEnv) {}

  /** Streams the file up; `sizeBytes` lets the SDK send it without buffering. */
  async upload(bucket: RecordingsBucket, key: string, path: string, sizeBytes: number): Promise<void> {
    const { s3 } = await loadBucketSdk();
    await (await this.client(bucket)).send(
      new s3.PutObjectCommand({
        Bucket: bucket.bucket_name,
        Key: key,
        Body: createReadStream(path),
        ContentLength: sizeBytes,
        ContentType: 'audio/wav',
      }),
    );
  }

  /** A presigned GET URL valid for `validForSecs`. */
  async presignedUrl(bucket: RecordingsBucket, key: string, validForSecs: number): Promise<string> {
    const { s3, presigner } = await loadBucketSdk();
    return presigner.getSignedUrl(
      await this.client(bucket),
      new s3.GetObjectCommand({ Bucket: bucket.bucket_name, Key: key }),
      {
        expiresIn: validForSecs,
      },
    );
  }

  async download(bucket: RecordingsBucket, key: string): Promise<{ body: Readable; sizeBytes: number | undefined }> {
    const { s3 } = await loadBucketSdk();
    const result = await (await this.client(bucket)).send(
      new s3.GetObjectCommand({ Bucket: bucket.bucket_name, Key: key }),
    );
    return { body: result.Body as Readable, sizeBytes: result.ContentLength };
  }

  async delete(bucket: RecordingsBucket, key: string): Promise<void> {
    const { s3 } = await loadBucketSdk();
    await (await this.client(bucket)).send(new s3.DeleteObjectCommand({ Bucket: bucket.bucket_name, Key: key }));
  }

  /** One client per region and role, kept: assumed-role credentials are cached and refreshed by it. */
  private async client(bucket: RecordingsBucket): Promise<S3Client> {
    const cacheKey = `${bucket.bucket_region}\n${bucket.assume_role_arn ?? ''}`;
    const known = this.clients.get(cacheKey);
    if (known) return known;
    const { s3, credentials: providers } = await loadBucketSdk();
    // Another request may have made it while the SDK loaded.
    const made = this.clients.get(cacheKey);
    if (made) return made;
    const {
      AWS_ACCESS_KEY_ID: accessKeyId,
      AWS_SECRET_ACCESS_KEY: secretAccessKey,
      AWS_SESSION_TOKEN: sessionToken,
    } = this.env;
    this.baseCredentials ??=
      accessKeyId && secretAccessKey
        ? { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) }
        : providers.fromNodeProviderChain();
    const endpoint = this.env.SWITCHBOARD_S3_ENDPOINT;
    const stsEndpoint = this.env.SWITCHBOARD_STS_ENDPOINT;
    const credentials = bucket.assume_role_arn
      ? providers.fromTemporaryCredentials({
          masterCredentials: this.baseCredentials,
          params: { RoleArn: bucket.assume_role_arn, RoleSessionName: 'switchboard-recordings' },
          clientConfig: { region: bucket.bucket_region, ...(stsEndpoint ? { endpoint: stsEndpoint } : {}) },
        })
      : this.baseCredentials;
    const client = new s3.S3Client({
      region: bucket.bucket_region,
      credentials,
      ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
      // Many S3-compatible servers reject the SDK's newer default trailing checksums on uploads.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // One retry layer: the SDK's.
      maxAttempts: 3,
    });
    this.clients.set(cacheKey, client);
    return client;
  }

  close(): void {
    for (const client of this.clients.values()) client.destroy();
    this.clients.clear();
  }
}
