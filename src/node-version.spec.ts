import { describe, expect, it } from 'vitest';
import { nodeVersionProblem } from './node-version';

describe('nodeVersionProblem', () => {
  it('names what is needed and what was found on a Node.js older than 22.15', () => {
    expect(nodeVersionProblem('20.20.2')).toBe('needs Node.js 22.15 or later, found 20.20.2');
    expect(nodeVersionProblem('22.14.9')).toBe('needs Node.js 22.15 or later, found 22.14.9');
  });

  it('lets 22.15 and later run', () => {
    expect(nodeVersionProblem('22.15.0')).toBeUndefined();
    expect(nodeVersionProblem('23.0.0')).toBeUndefined();
    expect(nodeVersionProblem('24.11.1')).toBeUndefined();
  });
});
