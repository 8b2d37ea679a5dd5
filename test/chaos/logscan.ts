import { Tally } from './util.js';

/** What an engine's stderr line is about; the summary counts them per class, with samples. */
const CLASSES: Array<[string, RegExp]> = [
  ['unhandled-rejection', /unhandledRejection/],
  ['uncaught-exception', /uncaughtException/],
  ['fatal', /^fatal:/],
  ['claim-lost', /WeftWorkflowClaimLostWarning/],
  ['wake-discarded', /WeftWorkflowWakeDiscardedWarning/],
  ['lease-lost', /WeftEngineLeaseLostWarning/],
  ['commit-failed-retrying', /Commit for workflow .* failed/],
  ['retry-failed', /Retry failed/],
  ['renewal-failed', /Claim renewal failed/],
  ['reclaim-failed', /Reclaim scan failed/],
  ['poll-failed', /Owner-side poll failed/],
  ['timer-poll-failed', /Timer poll failed/],
  ['timer-fire-failed', /^warn: Timer .* failed/],
  ['listen-failed', /LISTEN failed/],
  ['drive-reclaimed-failed', /Driving reclaimed .* failed/],
  ['wake-failed', /Waking .* failed/],
  ['fetch-messages-failed', /Fetching messages .* failed/],
  ['close-children-failed', /Closing children of/],
  ['startup-retry', /start-up attempt/],
  ['non-determinism', /NonDeterminism|non-determinis/i],
  ['node-warning', /^\(node:\d+\)/],
];

export function classify(line: string): string {
  for (const [name, re] of CLASSES) if (re.test(line)) return name;
  if (/^\s+at /.test(line)) return 'stack-frame';
  return line.startsWith('error:') ? 'other-error' : line.startsWith('warn:') ? 'other-warning' : 'other';
}

/** Splits a stderr stream into lines and tallies them. */
export class StderrScanner {
  private buf = '';
  readonly tail: string[] = [];

  constructor(
    private readonly tally: Tally,
    private readonly tag: string,
  ) {}

  push(chunk: string): void {
    this.buf += chunk;
    let i: number;
    while ((i = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 1);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (!line.trim()) return;
    this.tail.push(line);
    if (this.tail.length > 40) this.tail.shift();
    const kind = classify(line);
    if (kind !== 'stack-frame')
      this.tally.add(kind, `${this.tag}: ${line.slice(0, kind.includes('unhandled') || kind.includes('uncaught') ? 3000 : 400)}`);
  }
}
