// The CSV reader behind the dashboard's bulk payouts: RFC 4180 quoting, CRLF and LF, a byte-order mark, blank lines,
// and bad lines reported by number while the rest is read; for any text at all it answers and never throws.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseCsv } from '../src/modules/dashboard/csv.js';

describe('parseCsv', () => {
  it('reads quoted fields with commas, doubled quotes and line breaks, CRLF or LF, and skips blank lines and a BOM', () => {
    const text = '\uFEFFa,b,c\r\n1,"2,000.00","say ""hi"""\n\n"multi\nline",,x\r\n';
    assert.deepEqual(parseCsv(text), {
      rows: [
        { line: 1, cells: ['a', 'b', 'c'] },
        { line: 2, cells: ['1', '2,000.00', 'say "hi"'] },
        { line: 4, cells: ['multi\nline', '', 'x'] },
      ],
      problems: [],
    });
  });

  it('reports a line it cannot read by its number and reads on; an unclosed quote ends the reading there', () => {
    assert.deepEqual(parseCsv('a,b\n"x"y,1\nab"c,2\nok,3\n"open,4\nlost,5\n'), {
      rows: [
        { line: 1, cells: ['a', 'b'] },
        { line: 4, cells: ['ok', '3'] },
      ],
      problems: [
        { line: 2, message: 'text follows a closing quote' },
        { line: 3, message: 'a quote inside a field that does not start with one' },
        { line: 5, message: 'a quoted field is not closed' },
      ],
    });
  });

  it('reads back what a writer quoted, for any cells; and never throws on any text', () => {
    const cell = fc.string({ unit: fc.constantFrom('a', 'Z', '1', ',', '"', '\n', '\r\n', ' ', 'é') });
    const quote = (c: string): string => `"${c.replace(/"/g, '""')}"`;
    fc.assert(
      fc.property(fc.array(fc.array(cell, { minLength: 2, maxLength: 4 }), { minLength: 1, maxLength: 5 }), (table) => {
        const text = table.map((r) => r.map(quote).join(',')).join('\r\n');
        const { rows, problems } = parseCsv(text);
        assert.deepEqual(problems, []);
        assert.deepEqual(
          rows.map((r) => r.cells),
          table,
        );
      }),
    );
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('a', ',', '"', '\n', '\r', ' ') }), (text) => {
        const { rows, problems } = parseCsv(text);
        for (const r of [...rows.map((x) => x.line), ...problems.map((p) => p.line)]) assert.ok(r >= 1);
      }),
    );
  });
});
