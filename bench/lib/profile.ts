// Reads a V8 CPU profile (`node --cpu-prof`) and tells where the time went: self time by function and by package
// (a dependency, one of our modules, Node's internals), and the time spent under each of our own functions.
import { readFile } from 'node:fs/promises';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
}

export interface ProfileSummary {
  total_ms: number;
  idle_ms: number;
  by_package: { name: string; self_ms: number; share: number }[];
  by_function: { name: string; self_ms: number; share: number }[];
  /** Our functions with the time spent in them and everything they called. */
  own_inclusive: { name: string; total_ms: number; share: number }[];
}

function packageOf(url: string): string {
  if (url === '') return '(native)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm?.[1]) return nm[1];
  if (url.startsWith('node:')) return 'node internals';
  const own = /\/(src|bench|test)\/(.+?)(?:\/[^/]+)?\.ts$/.exec(url);
  if (own) return `${own[1]}/${own[2]}`;
  return url.replace(/^file:\/\//, '');
}

const where = (n: ProfileNode): string => {
  const file = n.callFrame.url.replace(/^.*\/(node_modules|src|bench)\//, '$1/');
  return `${n.callFrame.functionName || '(anonymous)'} ${file}:${n.callFrame.lineNumber + 1}`;
};

export async function summarise(file: string, top = 25): Promise<ProfileSummary> {
  const profile = JSON.parse(await readFile(file, 'utf8')) as CpuProfile;
  const totalSamples = profile.samples?.length ?? profile.nodes.reduce((s, n) => s + (n.hitCount ?? 0), 0);
  const msPerSample = (profile.endTime - profile.startTime) / 1000 / Math.max(1, totalSamples);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const pkg = new Map<string, number>();
  const fn = new Map<string, number>();
  let idle = 0;
  for (const n of profile.nodes) {
    const hits = n.hitCount ?? 0;
    if (n.callFrame.functionName === '(idle)') {
      idle += hits;
      continue;
    }
    const name = ['(garbage collector)', '(program)'].includes(n.callFrame.functionName) ? n.callFrame.functionName : packageOf(n.callFrame.url);
    pkg.set(name, (pkg.get(name) ?? 0) + hits);
    fn.set(where(n), (fn.get(where(n)) ?? 0) + hits);
  }
  // Inclusive time of our own functions: each sample counts once for every distinct own function on its stack.
  const inclusive = new Map<string, number>();
  const walk = (id: number, stack: Set<string>): number => {
    const n = byId.get(id);
    if (!n) return 0;
    const own = /\/src\//.test(n.callFrame.url) ? where(n) : undefined;
    const added = own !== undefined && !stack.has(own);
    if (added) stack.add(own);
    let hits = n.callFrame.functionName === '(idle)' ? 0 : (n.hitCount ?? 0);
    for (const c of n.children ?? []) hits += walk(c, stack);
    if (added) {
      stack.delete(own);
      inclusive.set(own, (inclusive.get(own) ?? 0) + hits);
    }
    return hits;
  };
  walk(profile.nodes[0]?.id ?? 1, new Set());
  const busy = totalSamples - idle;
  const rank = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, hits]) => ({ name, ms: Math.round(hits * msPerSample), share: Math.round((hits / Math.max(1, busy)) * 1000) / 10 }));
  return {
    total_ms: Math.round(totalSamples * msPerSample),
    idle_ms: Math.round(idle * msPerSample),
    by_package: rank(pkg).map(({ name, ms, share }) => ({ name, self_ms: ms, share })),
    by_function: rank(fn).map(({ name, ms, share }) => ({ name, self_ms: ms, share })),
    own_inclusive: rank(inclusive).map(({ name, ms, share }) => ({ name, total_ms: ms, share })),
  };
}

export function formatSummary(label: string, s: ProfileSummary): string {
  const lines = [`## CPU profile: ${label}`, '', `${s.total_ms} ms sampled, ${s.idle_ms} ms idle; shares are of the busy time.`, ''];
  lines.push('| self time by package | ms | % |', '|---|---|---|', ...s.by_package.map((p) => `| ${p.name} | ${p.self_ms} | ${p.share} |`), '');
  lines.push('| self time by function | ms | % |', '|---|---|---|', ...s.by_function.map((p) => `| ${p.name} | ${p.self_ms} | ${p.share} |`), '');
  lines.push('| our functions, with what they call | ms | % |', '|---|---|---|', ...s.own_inclusive.map((p) => `| ${p.name} | ${p.total_ms} | ${p.share} |`), '');
  return lines.join('\n');
}
