import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { fromNodeProviderChain, fromTemporaryCredentials } from '@aws-sdk/credential-providers';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';

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
  private readonly baseCredentials: NonNullable<S3ClientConfig['credentials']>;

  constructor(private readonly env: StorageEnv) {
    const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey, AWS_SESSION_TOKEN: sessionToken } = env;
    this.baseCredentials =
      accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } : fromNodeProviderChain();
  }

  /** Streams the file up; `sizeBytes` lets the SDK send it without buffering. */
  async upload(bucket: RecordingsBucket, key: string, path: string, sizeBytes: number): Promise<void> {
    await this.client(bucket).send(
      new PutObjectCommand({
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
    return getSignedUrl(this.client(bucket), new GetObjectCommand({ Bucket: bucket.bucket_name, Key: key }), { expiresIn: validForSecs });
  }

  async download(bucket: RecordingsBucket, key: string): Promise<{ body: Readable; sizeBytes: number | undefined }> {
    const result = await this.client(bucket).send(new GetObjectCommand({ Bucket: bucket.bucket_name, Key: key }));
    return { body: result.Body as Readable, sizeBytes: result.ContentLength };
  }

  async delete(bucket: RecordingsBucket, key: string): Promise<void> {
    await this.client(bucket).send(new DeleteObjectCommand({ Bucket: bucket.bucket_name, Key: key }));
  }

  /** One client per region and role, kept: assumed-role credentials are cached and refreshed by it. */
  private client(bucket: RecordingsBucket): S3Client {
    const cacheKey = `${bucket.bucket_region}\n${bucket.assume_role_arn ?? ''}`;
    let client = this.clients.get(cacheKey);
    if (client) return client;
    const endpoint = this.env.SWITCHBOARD_S3_ENDPOINT;
    const stsEndpoint = this.env.SWITCHBOARD_STS_ENDPOINT;
    const credentials = bucket.assume_role_arn
      ? fromTemporaryCredentials({
          masterCredentials: this.baseCredentials,
          params: { RoleArn: bucket.assume_role_arn, RoleSessionName: 'switchboard-recordings' },
          clientConfig: { region: bucket.bucket_region, ...(stsEndpoint ? { endpoint: stsEndpoint } : {}) },
        })
      : this.baseCredentials;
    client = new S3Client({
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
