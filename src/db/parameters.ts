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

/**
 * `unnest(…) AS alias(…)` over `items`, for a statement that writes many rows: each column one array parameter,
 * holding that column's value for every item. `columns`: each column's name, its value for an item, and its type.
 */
export function unnestOf<T>(
  param: Param,
  items: readonly T[],
  alias: string,
  columns: Record<string, readonly [(item: T) => unknown, string]>,
): string {
  const names = Object.keys(columns);
  const arrays = names.map((name) => {
    const [value, type] = columns[name] as readonly [(item: T) => unknown, string];
    return param(items.map(value), `${type}[]`);
  });
  return `unnest(${arrays.join(', ')}) AS ${alias}(${names.join(', ')})`;
}
