/**
 * The OpenAI Agents SDK for JavaScript (`@openai/agents`): decide a run's pending tool
 * approvals (tools made with `needsApproval`) through aye, as the Python `resolve` does.
 * Approved or not gated: `state.approve(item)`; refused, timed out, unavailable or any error:
 * `state.reject(item, {message})` with who and their note, or the reason; still pending after
 * `waitS`: left undecided, its ref returned. Run `Runner.run(agent, state)` when none are
 * pending, or keep `state.toString()` and resolve again later (in another process if you
 * like): the same asks are found, none is asked twice.
 */

import type { AyeClient } from './client.js';
import { StillPending } from './errors.js';
import { operationFor, whyNot } from './said.js';

/** A pending tool approval (the part of `RunToolApprovalItem` read here). */
export type ApprovalItem = {
  readonly name?: string | undefined;
  readonly arguments?: string | undefined;
  readonly toolName?: string | undefined;
};

/** A run's state (the part of `RunState` used here). */
export interface InterruptedState<Item extends ApprovalItem = ApprovalItem> {
  getInterruptions(): Item[];
  approve(item: Item, options?: { alwaysApprove?: boolean }): void;
  reject(item: Item, options?: { alwaysReject?: boolean; message?: string }): void;
}

export type ResolveOptions = {
  /** The work these calls belong to. */
  work?: unknown;
  /** How long to wait for people, in seconds, for all of the run's approvals (default 50). */
  waitS?: number;
};

export const OPENAI_AGENTS_WAIT_S = 50;

/**
 * Decide each pending approval of `stateOrResult` (a `RunState`, or a run's result holding
 * one in `.state`): `[state, pending]`, the state and the refs still waiting for a person.
 */
export async function resolve<S extends InterruptedState<any>>(
  stateOrResult: S | { readonly state: S }, client: AyeClient, options: ResolveOptions = {},
): Promise<[S, string[]]> {
  const state = stateOf(stateOrResult);
  const waitS = options.waitS ?? OPENAI_AGENTS_WAIT_S;
  const pending: string[] = [];
  // All at once: every approval is asked for now, and the whole wait is at most waitS.
  await Promise.all(state.getInterruptions().map(async (item: ApprovalItem) => {
    const operation = operationFor('openai', item.name ?? item.toolName ?? '');
    try {
      await client.call(operation, parsed(item.arguments), { work: options.work, waitS });
      state.approve(item);
    } catch (error) {
      if (error instanceof StillPending) {
        pending.push(error.ref);
      } else {
        state.reject(item, { message: whyNot(operation, error) });
      }
    }
  }));
  return [state, pending];
}

/** The name for `resolve`. */
export const resolveOpenAIAgents = resolve;

function stateOf<S extends InterruptedState<any>>(given: S | { readonly state: S }): S {
  if (given && typeof (given as S).getInterruptions === 'function') return given as S;
  const inner = (given as { state?: S } | undefined)?.state;
  if (inner && typeof inner.getInterruptions === 'function') return inner;
  throw new TypeError('resolve() takes a RunState, or a run result that has one in .state');
}

/** A tool call's arguments as the input aye shows and gates on: the parsed JSON, or the text
 * as given when it is not JSON. */
function parsed(args: string | undefined): unknown {
  if (args === undefined || args === '') return {};
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}
