/**
 * One SQL statement made of named parts (`WITH a AS (...), b AS (...) SELECT ...`), each written by the module that
 * owns its table, with its parameters numbered as they are added. A statement is its own transaction: all of its
 * parts happen, or none (the accept of an action is one: src/actions/submit.ts).
 */
export class CompoundStatement {
  readonly values: unknown[] = [];
  private readonly parts: string[] = [];

  /** `$n` for `value`, added to the statement's parameters. */
  param(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }

  /** Adds the part `name AS (sql)`; later parts may read it by name. */
  with(name: string, sql: string): this {
    this.parts.push(`${name} AS (${sql})`);
    return this;
  }

  /** The whole statement, ending with `select`. */
  text(select: string): string {
    return `WITH ${this.parts.join(',\n')}\n${select}`;
  }
}
