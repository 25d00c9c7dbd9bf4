// A CSV reader for uploads (RFC 4180): fields split by commas, quoted fields may hold commas, line breaks and doubled
// quotes, lines end in CRLF or LF, a byte-order mark is dropped, blank lines are skipped. It never throws: a line it
// cannot read is reported by its number, and the reading goes on at the next line where it can.

export interface CsvRow {
  /** The line the row starts on, from 1. */
  line: number;
  cells: string[];
}

export interface CsvProblem {
  line: number;
  message: string;
}

export function parseCsv(text: string): { rows: CsvRow[]; problems: CsvProblem[] } {
  const rows: CsvRow[] = [];
  const problems: CsvProblem[] = [];
  const s = text.startsWith('\uFEFF') ? text.slice(1) : text;
  let i = 0;
  let line = 1;
  while (i < s.length) {
    const start = line;
    const cells: string[] = [];
    let cell = '';
    let bad: string | undefined;
    // One record: fields until an unquoted line break or the end.
    for (;;) {
      if (s[i] === '"') {
        i++;
        let closed = false;
        while (i < s.length) {
          const c = s[i]!;
          if (c === '"') {
            if (s[i + 1] === '"') {
              cell += '"';
              i += 2;
              continue;
            }
            i++;
            closed = true;
            break;
          }
          if (c === '\n') line++;
          cell += c;
          i++;
        }
        if (!closed) {
          problems.push({ line: start, message: 'a quoted field is not closed' });
          return { rows, problems };
        }
        if (i < s.length && s[i] !== ',' && s[i] !== '\n' && s[i] !== '\r') bad = 'text follows a closing quote';
      }
      // The rest of an unquoted field (or of a quoted one gone wrong).
      while (i < s.length && s[i] !== ',' && s[i] !== '\n' && !(s[i] === '\r' && s[i + 1] === '\n')) {
        if (s[i] === '"' && bad === undefined) bad = 'a quote inside a field that does not start with one';
        cell += s[i];
        i++;
      }
      cells.push(cell);
      cell = '';
      if (i < s.length && s[i] === ',') {
        i++;
        continue;
      }
      break;
    }
    if (s[i] === '\r') i++;
    if (s[i] === '\n') {
      i++;
      line++;
    }
    if (bad !== undefined) problems.push({ line: start, message: bad });
    else if (!(cells.length === 1 && cells[0]!.trim() === '')) rows.push({ line: start, cells });
  }
  return { rows, problems };
}
