export type { ToolAction, ToolCallResult, ToolRunOptions, WebhookToolRunner } from './types.js';
export {
  DEFAULT_TOOL_TIMEOUT_SECS,
  type WebhookToolDeps,
  type WebhookToolRequest,
  createWebhookToolRunner,
  errorResult,
} from './webhook-tool-runner.js';
export {
  SIGNATURE_HEADER,
  generateWebhookSecret,
  verifyWebhookSignature,
  webhookSignature,
} from './webhook-signature.js';
export { webhookToolFor } from './webhook-tool-for.js';
