import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { TurnBatchedStdout } from './turn-batched-stdout';

/** A writable that records each call the stream machinery makes to it: one entry per write or writev. */
function recorder(): { stream: NodeJS.WriteStream; calls: string[][] } {
  const calls: string[][] = [];
  const stream = new Writable({
    decodeStrings: false,
    write(chunk: string, _encoding, done) {
      calls.push([chunk]);
      done();
    },
    writev(chunks, done) {
      calls.push(chunks.map(({ chunk }) => String(chunk)));
      done();
    },
  });
  return { stream: stream as unknown as NodeJS.WriteStream, calls };
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('TurnBatchedStdout', () => {
  it('hands the lines of one turn of the event loop over in one writev, after the turn', async () => {
    const { stream, calls } = recorder();
    const out = new TurnBatchedStdout(stream);
    out.write('a\n');
    out.write('b\n');
    out.write('c\n');
    expect(calls).toEqual([]);
    await nextTurn();
    expect(calls).toEqual([['a\n', 'b\n', 'c\n']]);
    out.write('d\n');
    await nextTurn();
    expect(calls).toEqual([['a\n', 'b\n', 'c\n'], ['d\n']]);
  });

  it('calls back from flush once every line written so far is out, without waiting for the turn to end', async () => {
    const { stream, calls } = recorder();
    const out = new TurnBatchedStdout(stream);
    out.write('one\n');
    out.write('two\n');
    await new Promise<void>((resolve) => out.flush(() => resolve()));
    expect(calls.flat().join('')).toBe('one\ntwo\n');
  });

  it('stops writing, without throwing, once stdout fails (its reader gone), and flush still calls back', async () => {
    const { stream, calls } = recorder();
    const out = new TurnBatchedStdout(stream);
    out.write('before\n');
    await nextTurn();
    stream.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    expect(() => out.write('after\n')).not.toThrow();
    await new Promise<void>((resolve) => out.flush(() => resolve()));
    expect(calls).toEqual([['before\n']]);
  });

  it("is pino's destination: every entry one JSON line, in order", async () => {
    const { stream, calls } = recorder();
    const logger = pino({ level: 'info' }, new TurnBatchedStdout(stream));
    for (let i = 0; i < 5; i++) logger.info({ n: i }, 'entry');
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
    const lines = calls.flat().join('').trimEnd().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as { n: number; msg: string }).n)).toEqual([0, 1, 2, 3, 4]);
    // The five lines in one writev (flush adds an empty write of its own, for its callback).
    expect(calls[0]).toHaveLength(5);
  });
});
