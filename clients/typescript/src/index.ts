/**
 * `aye-client`: agents ask people through aye, and run a tool only once a person approved this
 * exact call. No runtime dependency: the platform's fetch and WebCrypto (Node 20+, Deno, Bun,
 * browsers).
 */

export {
  AyeClient, connect, type Allowed, type Ask, type AskBody, type CallOptions,
  type ConnectOptions, type WaitOptions,
} from './client.js';
export {
  ApprovalRefused, ApprovalTimedOut, ApprovalUnavailable, AskClosed, AyeError, AyeUnreachable,
  BadReceipt, BadSignature, StillPending,
} from './errors.js';
export {
  DELIVERY_HEADER, EVENT_HEADER, RECEIPT_TYP, SIGNATURE_HEADER, verifyCallback, verifyReceipt,
  type CallbackPayload, type HeadersLike, type Jwk, type Jwks, type ReceiptPayload,
} from './verify.js';
export {
  AI_SDK_WAIT_S, aiSdkToolApproval, toolApproval, type ToolApprovalAnswer,
  type ToolApprovalOptions, type ToolApprovalRequest,
} from './ai-sdk.js';
export {
  OPENAI_AGENTS_WAIT_S, resolve, resolveOpenAIAgents, type ApprovalItem, type InterruptedState,
  type ResolveOptions,
} from './openai-agents.js';
