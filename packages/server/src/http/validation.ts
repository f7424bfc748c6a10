import { Ajv, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance, FastifySchema } from 'fastify';

// ajv-formats ships CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function makeAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    allErrors: false,
    strict: false,
  });
  addFormats(ajv);
  return ajv;
}

/** The body validator's configuration, for checks of JSON that does not come in a body (gRPC metadata). */
export const strictAjv = makeAjv(false);

/**
 * Bodies are validated strictly (a string "5" is not the integer 5: wrong
 * types are a 400, as the contract requires). Query strings and path params
 * arrive as strings, so those are coerced.
 */
export function installValidators(app: FastifyInstance): void {
  const strict = strictAjv;
  const coercing = makeAjv(true);
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? strict : coercing;
    return ajv.compile(schema as object) as ReturnType<Parameters<FastifyInstance['setValidatorCompiler']>[0]>;
  });
}

/** Turns ajv errors into one message that names the field, e.g. "queue_name must NOT have fewer than 1 characters". */
export function describeValidationError(errors: ErrorObject[] | readonly { instancePath?: string; message?: string; params?: Record<string, unknown>; keyword?: string }[], part: string | undefined): { message: string; field: string | null } {
  const first = errors[0];
  if (!first) return { message: 'Invalid request', field: null };
  const path = (first.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
  const params = (first.params ?? {}) as Record<string, unknown>;
  if (first.keyword === 'required' && typeof params.missingProperty === 'string') {
    const field = path ? `${path}.${params.missingProperty}` : params.missingProperty;
    return { message: `${field} is required`, field };
  }
  if (first.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
    const field = path ? `${path}.${params.additionalProperty}` : params.additionalProperty;
    return { message: `${field} is not allowed here`, field };
  }
  const field = path || (part === 'body' ? 'body' : part ?? 'request');
  let detail = first.message ?? 'is invalid';
  if (first.keyword === 'enum' && Array.isArray(params.allowedValues)) detail = `must be one of ${params.allowedValues.join(', ')}`;
  const choices = first.keyword === 'const' ? unionChoices(errors, first.instancePath ?? '') : null;
  if (choices) detail = `must be one of ${choices.join(', ')}`;
  return { message: `${field} ${detail}`, field };
}

/**
 * A union of literals (`Type.Union([Type.Literal('a'), …])`, maybe with
 * null) fails as one `const` error per branch, then `anyOf`, all at the
 * value's path: ajv's own first message ("must be equal to constant") names
 * none of them. Returns the allowed values, or null for any other shape.
 */
function unionChoices(errors: readonly { instancePath?: string; params?: Record<string, unknown>; keyword?: string }[], at: string): string[] | null {
  const allowed: string[] = [];
  for (const error of errors) {
    if ((error.instancePath ?? '') !== at) return null;
    if (error.keyword === 'const') allowed.push(String(error.params?.allowedValue));
    else if (error.keyword === 'type' && error.params?.type === 'null') allowed.push('null');
    else return error.keyword === 'anyOf' && allowed.length > 0 ? allowed : null;
  }
  return null;
}

export type RouteSchema = FastifySchema;

let itemAjv: Ajv | null = null;

/**
 * A validator for values inside a body that must be judged one by one (bulk
 * items: one bad job is reported in `failed`, not a 400 for the whole
 * request). Same rules as body validation; messages start with `prefix`.
 */
export function compileItemValidator(schema: object): (value: unknown, prefix: string) => { ok: true } | { ok: false; message: string; field: string | null } {
  itemAjv ??= makeAjv(false);
  const validate = itemAjv.compile(schema);
  return (value, prefix) => {
    if (validate(value)) return { ok: true };
    const { message, field } = describeValidationError(validate.errors ?? [], 'body');
    const named = field && field !== 'body' ? `${prefix}.${field}` : prefix;
    return { ok: false, message: field === 'body' ? message.replace(/^body/, prefix) : `${prefix}.${message}`, field: named };
  };
}
