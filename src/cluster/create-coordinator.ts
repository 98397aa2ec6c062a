import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { AppConfig } from '../config/env.js';
import { type Coordinator, LocalCoordinator } from './coordinator.js';

/**
 * REDIS_URL set: the Redis coordinator, connected; unset: the in-process one (a single node).
 * The Redis client is imported only when it is used: a single node need not load it (about 4 MB
 * of heap and its start-up time).
 */
export async function createCoordinator(config: AppConfig, nodeId: string, log: Logger): Promise<Coordinator> {
  const { redisUrl, nodeTimeoutSecs } = config.cluster;
  if (!redisUrl) return new LocalCoordinator(nodeId);
  const { RedisCoordinator } = await import('./redis-coordinator.js');
  const coordinator = new RedisCoordinator({ redisUrl, nodeId, livenessWindowMs: nodeTimeoutSecs * 1000, log });
  await coordinator.connect();
  return coordinator;
}

/**
 * Where the other nodes reach this one: SWITCHBOARD_NODE_URL, else the address it listens on
 * (the machine's host name when it listens on every interface).
 */
export function nodeUrlOf(config: AppConfig, listening: string): string {
  if (config.cluster.nodeUrl) return config.cluster.nodeUrl;
  const url = new URL(listening);
  if (config.host === '0.0.0.0' || config.host === '::') url.hostname = hostname();
  return url.origin;
}
