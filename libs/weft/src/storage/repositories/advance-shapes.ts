// A batch of advances by shape: which parts of the advance statement (advance-parts.ts) a command
// uses, as the bits of a shape key (each shape its own prepared statement), and what the general
// and the lone statements take from the parts for a shape: the record set's columns, the UPDATE's
// sets, the CTEs, the returned columns, the lone form's parameters.
import type { AdvanceCommand } from '../types.js';
import { ADVANCE_PARTS, BASE_PART, type AdvancePart, type LoneParams, type PartSql } from './advance-parts.js';

type Json = Record<string, unknown>;

export type AdvancePartName = keyof typeof ADVANCE_PARTS;

/** Which parts a batch of advances needs; each shape gets its own (prepared) statement. */
export type AdvanceShape = Record<AdvancePartName, boolean>;

export const PART_NAMES = Object.keys(ADVANCE_PARTS) as AdvancePartName[];
const PARTS: AdvancePart[] = PART_NAMES.map((k) => ADVANCE_PARTS[k]);

/** The bit of one part in a shape key. */
export const shapeBit = (part: AdvancePartName): number => 1 << PART_NAMES.indexOf(part);

/** The parts a command uses, as the bits of its shape key. */
export function shapeKeyOf(c: AdvanceCommand): number {
  let key = 0;
  for (let i = 0; i < PARTS.length; i++) if (PARTS[i].uses(c)) key |= 1 << i;
  return key;
}

export const shapeFromKey = (key: number): AdvanceShape =>
  Object.fromEntries(PART_NAMES.map((k, i) => [k, (key & (1 << i)) !== 0])) as AdvanceShape;

export const shapeOf = (c: AdvanceCommand): AdvanceShape => shapeFromKey(shapeKeyOf(c));

/**
 * One command as a JSON record of the statement's `cmd`. A key that is absent reads as NULL, which
 * every part of the statement takes as "not asked for" (a NULL flag is not true, a NULL list has
 * no rows), so only what the command asks for is sent: the text is shorter to build, send and parse.
 */
export function toCommandJson(c: AdvanceCommand): Json {
  const out: Json = {};
  BASE_PART.toJson(c, out);
  for (const part of PARTS) part.toJson(c, out);
  return out;
}

/** The `cmd` record set's columns for `shape`, at most 100 characters a line after the indent. */
export function commandColumns(shape: AdvanceShape, indent: string): string {
  const always = [BASE_PART.columns, ...PARTS.filter((p) => p.declared === 'always').map((p) => p.columns)];
  const used = PART_NAMES.filter((k) => shape[k] && ADVANCE_PARTS[k].declared === 'used').map((k) => ADVANCE_PARTS[k].columns);
  const items = always.join(', ').split(', ');
  const lines: string[] = [];
  let line = '';
  items.forEach((column, i) => {
    const item = i < items.length - 1 ? `${column},` : column;
    if (line && line.length + 1 + item.length > 100) {
      lines.push(line);
      line = item;
    } else line = line ? `${line} ${item}` : item;
  });
  lines.push(line);
  return lines.map((l) => indent + l).join('\n') + used.map((c) => `, ${c}`).join('');
}

/** The parts the lone form writes, as shape bits; a shape with any other part takes the general statement. */
const LONE_BITS = PART_NAMES.reduce((bits, k, i) => ('lone' in ADVANCE_PARTS[k] ? bits | (1 << i) : bits), 0);

/** Whether a batch is one command that the lone statement can write, given the batch's shape key. */
export function isLoneRecord(commands: AdvanceCommand[], shapeKey: number): boolean {
  if (commands.length !== 1 || (shapeKey & ~LONE_BITS) !== 0) return false;
  for (let i = 0; i < PARTS.length; i++) if (shapeKey & (1 << i) && PARTS[i].lone?.fits?.(commands[0]) === false) return false;
  return true;
}

/** The lone form's parameters for `shape`: the base's, then each of its parts' in the order of the parts. */
export function loneParamsOf(shape: AdvanceShape): ReadonlyArray<readonly [string, string]> {
  return [BASE_PART.lone, ...PART_NAMES.filter((k) => shape[k]).map((k) => loneOf(k))].flatMap((l) => l.params);
}

/** The lone statement's parameter values for `c` (of shape key `shapeKey`), in the order of loneParamsOf. */
export function loneAdvanceParams(c: AdvanceCommand, shapeKey: number): unknown[] {
  const out = BASE_PART.lone.values(c);
  for (let i = 0; i < PARTS.length; i++) if (shapeKey & (1 << i)) out.push(...PARTS[i].lone!.values(c));
  return out;
}

/** The CTEs a part writes for the `ok` rows in the general statement (none for most parts' absence). */
export const partWrites = (k: AdvancePartName, q: PartSql): string[] => (ADVANCE_PARTS[k] as AdvancePart).writes?.(q) ?? [];

/** What the parts of a shape add to the statement's final SELECT, in the parts' order. */
export const partReturns = (shape: AdvanceShape): string =>
  PART_NAMES.filter((k) => shape[k])
    .map((k) => (ADVANCE_PARTS[k] as AdvancePart).returns ?? '')
    .join('');

/** The row columns every part sets in the versioned UPDATE for a shape, in the parts' order. */
export const partSets = (shape: AdvanceShape): string => PARTS.map((p) => p.sets?.(shape) ?? '').join('');

function loneOf(k: AdvancePartName): LoneParams {
  const lone: LoneParams | undefined = (ADVANCE_PARTS[k] as AdvancePart).lone;
  if (!lone) throw new Error(`lone advance: the part ${k} has no lone form`);
  return lone;
}
