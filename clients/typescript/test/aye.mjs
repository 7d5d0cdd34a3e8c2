// A real `aye serve` for the tests: a temp folder, a config with a gate, its own tokens, and a
// port the process binds itself (AYE_PORT=0) and says; and the operator's side, answering as a
// person would, over the operator API.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const LISTENING = /listening on http:\/\/[^\s:/"]+:(\d+)/;
const START_MS = 30_000;
const POLL_MS = 25;
const TRIES = 3;

export const CONFIG = (callbackPrefix) => `
[defaults]
responders = ["operator:local"]

[[agents]]
name = "ts"
token_env = "AYE_TS_TOKEN"
callback_secret_env = "AYE_TS_CALLBACK_SECRET"
${callbackPrefix ? `callback_urls = ["${callbackPrefix}"]` : ''}

[[gates]]
operations = ["deploy.", "ai.deploy", "openai.deploy"]
responders = ["operator:local"]
timeout = "1h"
`;

/** `aye serve` up and answering; `stop()` ends it and removes its folder. */
export async function startAye({ callbackPrefix } = {}) {
  const folder = await mkdtemp(join(tmpdir(), 'aye-ts-'));
  await writeFile(join(folder, 'aye.toml'), CONFIG(callbackPrefix));
  const tokens = { agent: `ts-${randomUUID()}`, operator: `op-${randomUUID()}`,
                   callbackSecret: `cb-${randomUUID()}` };
  for (let tried = 1; ; tried++) {
    const started = await spawnAye(folder, tokens);
    if (started.url) return { ...started, ...tokens, operator: operatorOf(started.url, tokens) };
    // A port taken between the system's pick and the bind: try again, a few times.
    if (tried >= TRIES || !/cannot listen/.test(started.output())) {
      await rm(folder, { recursive: true, force: true });
      throw new Error(`aye serve did not start: ${started.output()}`);
    }
  }
}

async function spawnAye(folder, tokens) {
  const env = Object.fromEntries(Object.entries(process.env).filter(
    ([name]) => !/^(AYE_|SLACK_|GITHUB_)/.test(name)));
  Object.assign(env, {
    AYE_CONFIG: join(folder, 'aye.toml'),
    AYE_DATABASE_URL: `sqlite+aiosqlite:///${join(folder, 'aye.db')}`,
    AYE_HOST: '127.0.0.1', AYE_PORT: '0', AYE_OPERATOR_TOKEN: tokens.operator,
    AYE_TS_TOKEN: tokens.agent, AYE_TS_CALLBACK_SECRET: tokens.callbackSecret,
    PYTHONUNBUFFERED: '1',
  });
  const proc = spawn(process.env.AYE_BIN || 'aye', ['serve'], {
    cwd: folder, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  const output = () => text;
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.stdout.on('data', (chunk) => { text += chunk; });
  proc.stderr.on('data', (chunk) => { text += chunk; });
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    const stuck = setTimeout(() => proc.kill('SIGKILL'), 10_000); // never a server left behind
    await exited;
    clearTimeout(stuck);
    await rm(folder, { recursive: true, force: true });
  };
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`aye serve did not come up: ${text}`)); }, START_MS);
    const look = () => {
      const found = LISTENING.exec(text);
      if (found) { clearTimeout(timer); resolve(Number(found[1])); }
    };
    proc.stdout.on('data', look);
    proc.stderr.on('data', look);
    proc.once('error', (error) => { clearTimeout(timer); reject(error); });
    exited.then(() => { clearTimeout(timer); resolve(undefined); });
  });
  if (port === undefined) return { output };
  const url = `http://127.0.0.1:${port}`;
  await until(async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.ok, output);
  return { url, output, stop };
}

/** Poll `check` until it is truthy (it is the thing waited on), at most 15 s. */
export async function until(check, said = () => '') {
  const end = Date.now() + 15_000;
  for (;;) {
    const found = await check();
    if (found) return found;
    if (Date.now() > end) throw new Error(`waited 15 s in vain ${said()}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** What a person does through the operator API. */
function operatorOf(url, tokens) {
  const call = async (method, path, body) => {
    const response = await fetch(url + path, {
      method, headers: { authorization: `Bearer ${tokens.operator}`,
                         'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body) });
    const data = await response.json();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(data)}`);
    return data;
  };
  return {
    /** Every ask of the agent for this operation and input, newest first, as the operator sees it. */
    async asksFor(operation, input) {
      const { asks } = await call('GET', '/v1/asks?limit=100');
      return asks.filter((ask) => ask.operation === operation &&
                                  JSON.stringify(ask.input) === JSON.stringify(input));
    },
    /** The open approval of this exact call, once it is there. */
    async approvalFor(operation, input) {
      return until(async () => (await this.asksFor(operation, input))
        .find((ask) => ask.status === 'open'));
    },
    async answer(ref, answer, note) {
      return call('POST', `/v1/asks/${ref}/answer`, note === undefined ? { answer } : { answer, note });
    },
    async approve(operation, input) {
      const ask = await this.approvalFor(operation, input);
      await this.answer(ask.ref, 'approve');
      return ask;
    },
    async refuse(operation, input, note) {
      const ask = await this.approvalFor(operation, input);
      await this.answer(ask.ref, 'refuse', note);
      return ask;
    },
    async get(ref) {
      return call('GET', `/v1/asks/${ref}`);
    },
  };
}

/** A URL where nothing listens: a port bound, then closed. */
export async function deadUrl() {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}
