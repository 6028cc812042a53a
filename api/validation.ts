/**
 * AJV, set up once: shared schemas are registered by `$id` and referenced as `{$ref: 'Name'}`. Bodies are
 * validated as sent; path and query values are strings on the wire and are coerced to the schema's types.
 *
 * A body stops at its first problem: with `allErrors`, an array of a million wrong elements would build a million
 * errors. Stopping also means a size keyword (`maxItems`, `maxLength`), which AJV checks before `items` and
 * `pattern`, refuses an oversize value before anything walks it. Path and query values, bounded by the header
 * size limit, are all checked and all reported.
 */
import Ajv, { ErrorObject, ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { ValidationFailed, ValidationIssue } from '../src/errors';
import type { JsonSchema } from './route';
import { SHARED_SCHEMAS } from './schemas/shared';

function makeAjv(options: { allErrors: boolean; coerceTypes: boolean }): Ajv {
  const ajv = new Ajv({ ...options, useDefaults: true, strict: true, strictRequired: false });
  addFormats(ajv);
  for (const schema of Object.values(SHARED_SCHEMAS)) ajv.addSchema(schema);
  return ajv;
}

const bodyAjv = makeAjv({ allErrors: false, coerceTypes: false });
const parameterAjv = makeAjv({ allErrors: true, coerceTypes: true });

export type Location = 'body' | 'query' | 'path';

function toIssue(location: Location, error: ErrorObject): ValidationIssue {
  const loc: (string | number)[] = [location];
  for (const part of error.instancePath.split('/').slice(1)) loc.push(/^\d+$/.test(part) ? Number(part) : part.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (error.keyword === 'required') loc.push((error.params as { missingProperty: string }).missingProperty);
  if (error.keyword === 'additionalProperties') loc.push((error.params as { additionalProperty: string }).additionalProperty);
  let msg = error.message ?? 'is invalid';
  if (error.keyword === 'enum') msg += `: ${(error.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
  return { loc, msg, type: error.keyword };
}

export interface Validator { (value: unknown): unknown }

/** A function that returns the (coerced, defaulted) value or throws ValidationFailed with its issues. */
export function compileValidator(location: Location, schema: JsonSchema): Validator {
  const validate: ValidateFunction = (location === 'body' ? bodyAjv : parameterAjv).compile(schema);
  return (value) => {
    if (validate(value)) return value;
    // oneOf/anyOf report each branch; keep the summary line instead of the noise of every branch.
    const errors = validate.errors ?? [];
    const branchy = errors.filter((e) => e.keyword === 'oneOf' || e.keyword === 'anyOf');
    const relevant = branchy.length > 0
      ? errors.filter((e) => !branchy.some((b) => e.schemaPath.startsWith(b.schemaPath.replace(/\/(oneOf|anyOf)$/, '/$1/'))))
      : errors;
    throw new ValidationFailed(relevant.map((e) => toIssue(location, e)));
  };
}
