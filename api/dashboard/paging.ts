/** The dashboard's cursor-paged lists (the gallery, the ledger): their query, their answer, their cursor's check. */
import { ValidationFailed } from '../../src/errors';

/** `?cursor=&limit=`: an opaque cursor from the previous page, and how many at most. */
export const pageQuery = (defaultLimit: number, maxLimit: number) => ({
  type: 'object', additionalProperties: false,
  properties: { cursor: { type: 'string', maxLength: 200 }, limit: { type: 'integer', minimum: 1, maximum: maxLimit, default: defaultLimit } },
});

/** A page's answer: `field`, its items, and `next_cursor` (null at the end). */
export const pageAnswer = (description: string, field: string, item: object) => ({
  description,
  schema: { type: 'object', required: [field, 'next_cursor'], properties: { [field]: { type: 'array', items: item }, next_cursor: { type: ['string', 'null'] } } },
});

/** Where the list resumes: undefined from the start; a cursor `decode` does not take is a 422 naming it. */
export function resumeAt<T>(cursor: string | undefined, decode: (cursor: string) => T | undefined): T | undefined {
  if (cursor === undefined) return undefined;
  const position = decode(cursor);
  if (!position) throw new ValidationFailed([{ loc: ['query', 'cursor'], msg: 'Not a cursor of this list', type: 'cursor' }]);
  return position;
}
