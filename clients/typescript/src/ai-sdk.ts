/**
 * The Vercel AI SDK (`ai` 7): a `toolApproval` function for `generateText`, `streamText` and
 * `ToolLoopAgent` that asks aye before each tool call runs. It answers `'approved'` when the
 * call is not gated or a person approved this exact call, and `{type: 'denied', reason}`
 * otherwise: refused (who and their note), timed out, still pending after `waitS` (the ref,
 * and that the same call again goes on), aye unreachable, a wrong token, any error.
 */

import type { AyeClient } from './client.js';
import { operationFor, whyNot } from './said.js';

/** Where a tool call is asked for (the part of `ai`'s approval request read here). */
export type ToolApprovalRequest = {
  toolCall: { toolName: string; input: unknown; toolCallId?: string };
};

/** What `ai` runs on: the call goes on, or the model is told why not. */
export type ToolApprovalAnswer = 'approved' | { type: 'denied'; reason: string };

export type ToolApprovalOptions = {
  /** The work these calls belong to (`{github: {...}}` or `{slack: {...}}`). */
  work?: unknown;
  /** How long one tool call waits for a person, in seconds (default 50). */
  waitS?: number;
  /** The operation a tool's calls are gated as; default `ai.<tool name>`. */
  operation?: (toolName: string) => string;
};

export const AI_SDK_WAIT_S = 50;

/** `generateText({..., toolApproval: toolApproval(aye)})`. */
export function toolApproval(
  client: AyeClient, options: ToolApprovalOptions = {},
): (request: ToolApprovalRequest) => Promise<ToolApprovalAnswer> {
  const waitS = options.waitS ?? AI_SDK_WAIT_S;
  return async ({ toolCall }) => {
    let operation = '(unnamed)';
    try {
      operation = options.operation
        ? options.operation(toolCall.toolName) : operationFor('ai', toolCall.toolName);
      await client.call(operation, toolCall.input, { work: options.work, waitS });
      return 'approved';
    } catch (error) {
      return { type: 'denied', reason: whyNot(operation, error) };
    }
  };
}

/** The name for `toolApproval`. */
export const aiSdkToolApproval = toolApproval;
