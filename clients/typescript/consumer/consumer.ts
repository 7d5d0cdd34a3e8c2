// Type-checked against the packed tarball (npm test): every export of aye-client, used as a
// user would, with the real `ai` and `@openai/agents` types. Never run.
import { generateText, streamText, stepCountIs, tool, ToolLoopAgent, type LanguageModel } from 'ai';
import { Agent, RunState, Runner, tool as agentTool } from '@openai/agents';
import { z } from 'zod';
import type { IncomingMessage } from 'node:http';
import {
  AI_SDK_WAIT_S, ApprovalRefused, ApprovalTimedOut, ApprovalUnavailable, AskClosed, AyeClient,
  AyeError, AyeUnreachable, BadReceipt, BadSignature, DELIVERY_HEADER, EVENT_HEADER,
  OPENAI_AGENTS_WAIT_S, RECEIPT_TYP, SIGNATURE_HEADER, StillPending, aiSdkToolApproval, connect,
  resolve, resolveOpenAIAgents, toolApproval, verifyCallback, verifyReceipt,
  type Allowed, type ApprovalItem, type Ask, type AskBody, type CallOptions, type CallbackPayload,
  type ConnectOptions, type HeadersLike, type InterruptedState, type Jwk, type Jwks,
  type ReceiptPayload, type ResolveOptions, type ToolApprovalAnswer, type ToolApprovalOptions,
  type ToolApprovalRequest, type WaitOptions,
} from 'aye-client';

declare const model: LanguageModel;
declare const request: IncomingMessage;

export async function everything(): Promise<void> {
  const options: ConnectOptions = { url: 'http://127.0.0.1:8080', token: 't' };
  const aye: AyeClient = connect(options);
  const body: AskBody = { question: 'Ship it?', options: ['yes', 'no'] };
  const waited: WaitOptions = { waitS: 30 };
  const ask: Ask = await aye.ask(body, waited);
  const again: Ask = await aye.wait(ask.ref, { waitS: 5 });
  const gone: Ask = await aye.withdraw(again.id);
  const how: CallOptions = { work: { github: { repo: 'o/r', number: 1 } }, waitS: 50 };
  const allowed: Allowed = await aye.call('deploy.prod', { version: '1.4.2' }, how);
  const out: number = await aye.gated('deploy.prod', { v: 1 }, async (grant: Allowed) => grant.approval?.length ?? 0);
  const keys: Jwks = await aye.keys();
  const one: Jwk | undefined = (keys as { keys: Jwk[] }).keys[0];
  const payload: ReceiptPayload = await verifyReceipt(allowed.receipt ?? '', keys);
  const headers: HeadersLike = { [SIGNATURE_HEADER]: 'sha256=00', [DELIVERY_HEADER]: 'd', [EVENT_HEADER]: 'ask.closed' };
  const hook: CallbackPayload = await verifyCallback(new Uint8Array(), headers, 'secret');
  const hook2: CallbackPayload = await verifyCallback('{}', new Headers(), new Uint8Array([1]));
  const hook3: CallbackPayload = await verifyCallback(Buffer.from('{}'), request.headers, 'secret');
  void [gone, out, one, payload, hook, hook2, hook3, RECEIPT_TYP];

  try {
    await aye.call('deploy.prod');
  } catch (error) {
    if (error instanceof ApprovalRefused) void [error.by, error.note, error.receipt, error.repeat, error.until];
    if (error instanceof StillPending) void [error.ref, error.operation];
    if (error instanceof ApprovalTimedOut || error instanceof ApprovalUnavailable) void error.operation;
    if (error instanceof AskClosed || error instanceof AyeUnreachable) void error.code;
    if (error instanceof AyeError) void [error.status, error.code, error.field];
    if (error instanceof BadReceipt || error instanceof BadSignature) void error.message;
  }

  // The Vercel AI SDK: toolApproval on generateText, streamText and a ToolLoopAgent.
  const tools = {
    deploy: tool({ inputSchema: z.object({ version: z.string() }), execute: async ({ version }) => version }),
  };
  const approvalOptions: ToolApprovalOptions = { work: { slack: { channel: 'C1', thread_ts: '1.2' } }, waitS: AI_SDK_WAIT_S, operation: (name) => `ai.${name}` };
  await generateText({ model, tools, prompt: 'go', stopWhen: stepCountIs(3), toolApproval: toolApproval(aye, approvalOptions) });
  streamText({ model, tools, prompt: 'go', toolApproval: aiSdkToolApproval(aye) });
  new ToolLoopAgent({ model, tools, toolApproval: toolApproval(aye, { waitS: 10 }) });
  const decide: (request: ToolApprovalRequest) => Promise<ToolApprovalAnswer> = toolApproval(aye);
  void decide;

  // The OpenAI Agents SDK: resolve a run's interruptions, from its result or a saved state.
  const agent = new Agent({
    name: 'deployer',
    tools: [agentTool({ name: 'deploy', description: 'deploy', parameters: z.object({ v: z.string() }), needsApproval: true, execute: async ({ v }) => v })],
  });
  const result = await new Runner().run(agent, 'go');
  const resolveOptions: ResolveOptions = { waitS: OPENAI_AGENTS_WAIT_S, work: null };
  const [state, pending]: [RunState<undefined, typeof agent>, string[]] = await resolve(result, aye, resolveOptions);
  if (pending.length === 0) await new Runner().run(agent, state);
  const saved = await RunState.fromString(agent, state.toString());
  const [same] = await resolveOpenAIAgents(saved, aye);
  const structural: InterruptedState<ApprovalItem> = same;
  void structural;
}
