// A statement's parameters, numbered as its text is written: `param(value, 'uuid[]')` keeps the value and answers
// `$n::uuid[]`. For statements built from parts, each part adding what it needs.

/** Adds a value to the statement's parameters and answers its placeholder, typed (`$n::type`). */
export type Param = (value: unknown, type: string) => string;

export function parameters(): { values: unknown[]; param: Param } {
  const values: unknown[] = [];
  return {
    values,
    param: (value, type) => {
      values.push(value);
      return `$${values.length}::${type}`;
    },
  };
}
