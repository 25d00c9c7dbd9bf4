// Relative links in the README, bench/README.md and docs/ point at files or folders that exist, so a page
// moved or renamed cannot leave a dead link behind. Web links and same-page anchors are not checked.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '..');

function markdownUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...markdownUnder(full));
    else if (name.endsWith('.md')) out.push(full);
  }
  return out;
}

/** Link targets written `[text](target)` (images too), outside fenced code blocks and inline code. */
function linkTargets(markdown: string): string[] {
  const prose = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
  const targets: string[] = [];
  for (const match of prose.matchAll(/\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)/g)) {
    const target = match[1] ?? '';
    targets.push(target.startsWith('<') ? target.slice(1, -1) : target);
  }
  return targets;
}

/** A target that names a place in this repository: not a URL with a scheme (http:, mailto:, …), not `#anchor` alone. */
function isRelative(target: string): boolean {
  return target !== '' && !target.startsWith('#') && !/^[a-z][a-z0-9+.-]*:/i.test(target);
}

/** The relative links of one Markdown file whose target does not exist, as `target (resolved path)`. */
function brokenLinks(file: string, markdown = readFileSync(file, 'utf8')): string[] {
  const broken: string[] = [];
  for (const target of linkTargets(markdown).filter(isRelative)) {
    const withoutFragment = decodeURIComponent(target.replace(/[#?].*$/, ''));
    const resolved = withoutFragment.startsWith('/')
      ? path.join(ROOT, withoutFragment)
      : path.resolve(path.dirname(file), withoutFragment);
    if (!existsSync(resolved)) broken.push(`${target} (${path.relative(ROOT, resolved)})`);
  }
  return broken;
}

const FILES = [
  path.join(ROOT, 'README.md'),
  path.join(ROOT, 'bench', 'README.md'),
  ...markdownUnder(path.join(ROOT, 'docs')),
];

describe('documentation links', () => {
  it('the checker finds a broken relative link and passes good ones, web links and anchors', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'docs-links-'));
    try {
      writeFileSync(path.join(dir, 'there.md'), '# There\n');
      const file = path.join(dir, 'page.md');
      const text = [
        '[good](there.md#there) [folder](./) [web](https://example.com/x.md) [mail](mailto:a@example.com) [anchor](#top)',
        '[missing](gone.md) ![image](img/missing.png "title")',
        '`[in code](not-checked.md)`',
        '```md',
        '[in a fence](not-checked-either.md)',
        '```',
      ].join('\n');
      const broken = brokenLinks(file, text).map((b) => b.split(' ')[0]);
      assert.deepEqual(broken, ['gone.md', 'img/missing.png']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('covers the README, bench/README.md and docs/', () => {
    assert.ok(
      FILES.length >= 10,
      `expected the docs/ pages, found ${FILES.map((f) => path.relative(ROOT, f)).join(', ')}`,
    );
    for (const file of FILES) assert.ok(existsSync(file), `${path.relative(ROOT, file)} is missing`);
  });

  for (const file of FILES) {
    it(`every relative link in ${path.relative(ROOT, file)} resolves`, () => {
      const broken = brokenLinks(file);
      assert.deepEqual(broken, [], `${path.relative(ROOT, file)} has broken links:\n  ${broken.join('\n  ')}`);
    });
  }
});
